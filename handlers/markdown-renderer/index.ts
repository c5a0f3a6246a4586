import { defineHandler } from '../../src/pool/handler-contract.js'
import { wantsJsonOnly } from '../_shared/binary-output.js'
import { renderSafeMarkdown } from '../_shared/render-markdown.js'

const MAX_MARKDOWN = 500_000

interface Input {
  markdown: string
  title?: string
  theme: 'light' | 'dark' | 'auto'
  gfm: boolean
  breaks: boolean
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

const LIGHT = '--fg:#1f2328;--bg:#ffffff;--muted:#59636e;--border:#d1d9e0;--code-bg:#f6f8fa;--link:#0969da;'
const DARK = '--fg:#e6edf3;--bg:#0d1117;--muted:#9198a1;--border:#3d444d;--code-bg:#151b23;--link:#4493f8;'

function page(title: string, body: string, theme: Input['theme']): string {
  const vars =
    theme === 'dark'
      ? `:root{${DARK}}`
      : theme === 'light'
        ? `:root{${LIGHT}}`
        : `:root{${LIGHT}}@media (prefers-color-scheme: dark){:root{${DARK}}}`
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src http: https:; style-src 'unsafe-inline'">
<title>${escapeHtml(title)}</title>
<style>
${vars}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.6 -apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif}
main{max-width:48rem;margin:0 auto;padding:2rem 1.25rem 4rem}
h1,h2,h3,h4,h5,h6{line-height:1.25;margin:1.5em 0 .5em}
h1,h2{padding-bottom:.3em;border-bottom:1px solid var(--border)}
a{color:var(--link)}
img{max-width:100%}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em;background:var(--code-bg);border-radius:6px}
code{padding:.15em .35em}
pre{padding:1rem;overflow:auto}
pre code{padding:0;background:none}
blockquote{margin:0;padding:0 1em;color:var(--muted);border-left:.25em solid var(--border)}
table{border-collapse:collapse;display:block;overflow:auto}
th,td{border:1px solid var(--border);padding:.4em .8em}
hr{border:0;border-top:1px solid var(--border)}
</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`
}

export default defineHandler<Input>({
  slug: 'markdown-renderer',
  description:
    'Render Markdown as a complete, styled, standalone HTML page (light, dark or system theme); the content is sanitized and the page carries a strict Content-Security-Policy.',
  inputSchema: {
    type: 'object',
    required: ['markdown'],
    additionalProperties: false,
    properties: {
      markdown: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_MARKDOWN,
        description: `Markdown source, at most ${MAX_MARKDOWN} characters`,
      },
      title: {
        type: 'string',
        minLength: 1,
        maxLength: 200,
        description: 'page <title>; defaults to the first heading, else "Document"',
      },
      theme: {
        type: 'string',
        enum: ['light', 'dark', 'auto'],
        default: 'auto',
        description: "colour scheme; auto follows the reader's system setting",
      },
      gfm: {
        type: 'boolean',
        default: true,
        description: 'GitHub-flavoured Markdown (tables, strikethrough, task lists, autolinks)',
      },
      breaks: { type: 'boolean', default: false, description: 'turn single line breaks into <br>' },
    },
  },
  output: {
    contentType: 'text/html; charset=utf-8',
    description: 'a standalone HTML page; with Accept: application/json, { title, html } instead',
    schema: {
      type: 'object',
      properties: { title: { type: 'string' }, html: { type: 'string' } },
      required: ['title', 'html'],
    },
    example: {
      title: 'Release notes',
      html: '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<meta name="viewport" content="width=device-width, initial-scale=1">\n<meta http-equiv="Content-Security-Policy" content="default-src \'non…',
    },
  },
  example: { markdown: '# Release notes\n\n- Faster\n- Safer\n\n> Enjoy.', theme: 'auto', gfm: true, breaks: false },
  async run(input, ctx) {
    const body = await renderSafeMarkdown(input.markdown, { gfm: input.gfm, breaks: input.breaks })
    const heading = /^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$/m.exec(input.markdown)?.[1]
    const title = input.title ?? heading?.replace(/[*_`]/g, '') ?? 'Document'
    const html = page(title, body, input.theme)
    if (wantsJsonOnly(ctx.accept, 'text/html')) return { contentType: 'application/json', body: { title, html } }
    return { contentType: 'text/html; charset=utf-8', body: html }
  },
})
