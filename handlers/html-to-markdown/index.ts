import { defineHandler } from '../../src/pool/handler-contract.js'

const MAX_HTML = 1_000_000

interface Input {
  html: string
  headingStyle: 'atx' | 'setext'
  codeBlockStyle: 'fenced' | 'indented'
  bulletListMarker: '-' | '*' | '+'
}

export default defineHandler<Input>({
  slug: 'html-to-markdown',
  description:
    'Convert an HTML document or fragment to GitHub-flavoured Markdown (Turndown with its GFM plugin): tables, strikethrough and task lists included. Scripts, styles and embedded frames are dropped.',
  inputSchema: {
    type: 'object',
    required: ['html'],
    additionalProperties: false,
    properties: {
      html: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_HTML,
        description: `HTML to convert, at most ${MAX_HTML} characters`,
      },
      headingStyle: {
        type: 'string',
        enum: ['atx', 'setext'],
        default: 'atx',
        description: 'atx (# Title) or setext (underlined) headings',
      },
      codeBlockStyle: {
        type: 'string',
        enum: ['fenced', 'indented'],
        default: 'fenced',
        description: 'fenced (```) or indented code blocks',
      },
      bulletListMarker: {
        type: 'string',
        enum: ['-', '*', '+'],
        default: '-',
        description: 'marker for unordered list items',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description: 'the Markdown text and its length',
    schema: { type: 'object', properties: { markdown: { type: 'string' }, length: { type: 'integer' } } },
    example: { markdown: '# Hello\n\nSome **bold** text and a [link](https://example.com).', length: 62 },
  },
  example: {
    html: '<h1>Hello</h1><p>Some <strong>bold</strong> text and a <a href="https://example.com">link</a>.</p>',
    headingStyle: 'atx',
    codeBlockStyle: 'fenced',
    bulletListMarker: '-',
  },
  async run(input) {
    const [{ default: TurndownService }, { gfm }] = await Promise.all([
      import('turndown'),
      import('@joplin/turndown-plugin-gfm'),
    ])
    const td = new TurndownService({
      headingStyle: input.headingStyle,
      codeBlockStyle: input.codeBlockStyle,
      bulletListMarker: input.bulletListMarker,
    })
    // tables (with a header row made up when the HTML has none), ~~strikethrough~~, [x] task lists
    td.use(gfm)
    td.remove(['script', 'style', 'noscript', 'iframe', 'object', 'embed', 'template'])
    const markdown = td.turndown(input.html)
    return { body: { markdown, length: markdown.length } }
  },
})
