import { defineHandler } from '../../src/pool/handler-contract.js'
import { renderSafeMarkdown } from '../_shared/render-markdown.js'

const MAX_MARKDOWN = 500_000

interface Input {
  markdown: string
  gfm: boolean
  breaks: boolean
}

export default defineHandler<Input>({
  slug: 'markdown-to-html',
  description:
    'Convert Markdown (CommonMark or GitHub-flavoured) to an HTML fragment, sanitized against an allowlist so it is safe to embed.',
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
      gfm: {
        type: 'boolean',
        default: true,
        description: 'GitHub-flavoured Markdown (tables, strikethrough, task lists, autolinks)',
      },
      breaks: { type: 'boolean', default: false, description: 'turn single line breaks into <br>' },
    },
  },
  output: {
    contentType: 'application/json',
    description: 'the sanitized HTML fragment',
    schema: { type: 'object', properties: { html: { type: 'string' }, length: { type: 'integer' } } },
    example: {
      html: '<h1>Hello</h1>\n<p>Some <strong>bold</strong> text, a <a href="https://example.com">link</a> and <code>code</code>.</p>\n',
      length: 119,
    },
  },
  example: {
    markdown: '# Hello\n\nSome **bold** text, a [link](https://example.com) and `code`.',
    gfm: true,
    breaks: false,
  },
  async run(input) {
    const html = await renderSafeMarkdown(input.markdown, { gfm: input.gfm, breaks: input.breaks })
    return { body: { html, length: html.length } }
  },
})
