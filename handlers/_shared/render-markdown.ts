/**
 * Markdown → sanitized HTML, shared by markdown-to-html and markdown-renderer.
 * marked does not sanitize; every result goes through sanitize-html with an allowlist, so raw HTML,
 * event handlers and javascript: URLs in the Markdown never reach the output.
 * Heavy libraries are imported on first call (handler modules must stay light at top level).
 */
export interface MarkdownOptions {
  /** GitHub-flavoured Markdown: tables, strikethrough, task lists, autolinks */
  gfm: boolean
  /** single newlines become <br> */
  breaks: boolean
}

export async function renderSafeMarkdown(markdown: string, opts: MarkdownOptions): Promise<string> {
  const [{ Marked }, { default: sanitizeHtml }] = await Promise.all([import('marked'), import('sanitize-html')])
  const raw = new Marked({ gfm: opts.gfm, breaks: opts.breaks, async: false }).parse(markdown) as string
  return sanitizeHtml(raw, {
    allowedTags: [...sanitizeHtml.defaults.allowedTags, 'img', 'h1', 'h2', 'del', 'input', 'sup', 'sub'],
    allowedAttributes: {
      a: ['href', 'title'],
      img: ['src', 'alt', 'title', 'width', 'height'],
      code: ['class'],
      ol: ['start'],
      th: ['align'],
      td: ['align'],
      input: ['type', 'checked', 'disabled'],
    },
    allowedClasses: { code: [/^language-[\w-]+$/] },
    allowedSchemes: ['http', 'https', 'mailto'],
    allowedSchemesByTag: { img: ['http', 'https'] },
    allowProtocolRelative: false,
    // task-list checkboxes only; any other input is dropped
    exclusiveFilter: (frame) => frame.tag === 'input' && frame.attribs.type !== 'checkbox',
  })
}
