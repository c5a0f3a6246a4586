import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import { binaryResult } from '../_shared/binary-output.js'

const MAX_MARKDOWN = 200_000
const MAX_BLOCKS = 2000

type Block =
  | { type: 'heading'; text: string; level?: number }
  | { type: 'paragraph'; text: string }
  | { type: 'list'; items: string[]; ordered?: boolean }
  | { type: 'code'; text: string }
  | { type: 'quote'; text: string }
  | { type: 'rule' }
  | { type: 'pageBreak' }

interface Input {
  markdown?: string
  content?: Block[]
  title?: string
  author?: string
  pageSize: 'A4' | 'LETTER' | 'LEGAL'
  margin: number
  fontSize: number
}

/** A run of inline text in one style. */
interface Span {
  text: string
  bold?: boolean
  italic?: boolean
  code?: boolean
  link?: string
}

const FONTS = {
  regular: 'Helvetica',
  bold: 'Helvetica-Bold',
  italic: 'Helvetica-Oblique',
  boldItalic: 'Helvetica-BoldOblique',
  mono: 'Courier',
}

// The standard PDF fonts cover WinAnsi (Latin-1 plus a few); other characters are replaced rather than drawn as garbage.
// eslint-disable-next-line no-control-regex -- the standard PDF fonts print tab, newline, CR and Latin-1 only
const NOT_WIN_ANSI = /[^\x09\x0a\x0d\x20-\x7e\xa0-\xff€]/g
const toWinAnsi = (s: string) =>
  s
    .normalize('NFC')
    .replace(/[‘’]/g, "'")
    .replace(/[“”]/g, '"')
    .replace(/[–—]/g, '-')
    .replace(/…/g, '...')
    .replace(NOT_WIN_ANSI, '?')

interface InlineToken {
  type: string
  text?: string
  raw?: string
  href?: string
  tokens?: InlineToken[]
}

/** Flattens marked inline tokens into styled spans. */
function spansOf(tokens: InlineToken[] | undefined, style: Omit<Span, 'text'> = {}): Span[] {
  const out: Span[] = []
  for (const tk of tokens ?? []) {
    if (tk.type === 'strong') out.push(...spansOf(tk.tokens, { ...style, bold: true }))
    else if (tk.type === 'em') out.push(...spansOf(tk.tokens, { ...style, italic: true }))
    else if (tk.type === 'del') out.push(...spansOf(tk.tokens, style))
    else if (tk.type === 'link') out.push(...spansOf(tk.tokens, { ...style, link: tk.href }))
    else if (tk.type === 'codespan') out.push({ ...style, code: true, text: decodeEntities(tk.text ?? '') })
    else if (tk.type === 'br') out.push({ ...style, text: '\n' })
    else if (tk.tokens?.length) out.push(...spansOf(tk.tokens, style))
    else out.push({ ...style, text: decodeEntities(tk.text ?? tk.raw ?? '') })
  }
  return out
}

const decodeEntities = (s: string) =>
  s.replace(
    /&(amp|lt|gt|quot|#39);/g,
    (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e] ?? _,
  )

type Rendered =
  | { kind: 'heading'; level: number; spans: Span[] }
  | { kind: 'paragraph'; spans: Span[]; quote?: boolean }
  | { kind: 'list'; ordered: boolean; start: number; items: Span[][] }
  | { kind: 'code'; text: string }
  | { kind: 'rule' }
  | { kind: 'pageBreak' }

async function fromMarkdown(markdown: string): Promise<Rendered[]> {
  const { Lexer } = await import('marked')
  const out: Rendered[] = []
  type BlockToken = InlineToken & {
    depth?: number
    ordered?: boolean
    start?: number | ''
    items?: { tokens: InlineToken[] }[]
  }
  const walk = (tokens: BlockToken[], quote = false) => {
    for (const tk of tokens) {
      if (tk.type === 'heading') out.push({ kind: 'heading', level: tk.depth ?? 1, spans: spansOf(tk.tokens) })
      else if (tk.type === 'paragraph' || tk.type === 'text')
        out.push({ kind: 'paragraph', spans: spansOf(tk.tokens ?? [{ type: 'text', text: tk.text }]), quote })
      else if (tk.type === 'list') {
        out.push({
          kind: 'list',
          ordered: Boolean(tk.ordered),
          start: typeof tk.start === 'number' ? tk.start : 1,
          items: (tk.items ?? []).map((it) =>
            it.tokens.flatMap((x) =>
              x.type === 'text' || x.type === 'paragraph'
                ? spansOf(x.tokens ?? [{ type: 'text', text: x.text }])
                : x.type === 'list'
                  ? []
                  : spansOf([x]),
            ),
          ),
        })
      } else if (tk.type === 'code') out.push({ kind: 'code', text: tk.text ?? '' })
      else if (tk.type === 'blockquote') walk((tk.tokens ?? []) as BlockToken[], true)
      else if (tk.type === 'hr') out.push({ kind: 'rule' })
      else if (tk.type === 'table') {
        const t = tk as unknown as { header: { text: string }[]; rows: { text: string }[][] }
        const line = (cells: { text: string }[]) => cells.map((c) => decodeEntities(c.text)).join('  |  ')
        out.push({ kind: 'code', text: [line(t.header), ...t.rows.map(line)].join('\n') })
      } else if (tk.type === 'html')
        out.push({ kind: 'paragraph', spans: [{ text: (tk.text ?? '').replace(/<[^>]*>/g, '').trim() }] })
    }
  }
  walk(new Lexer({ gfm: true }).lex(markdown) as unknown as BlockToken[])
  return out
}

function fromBlocks(blocks: Block[]): Rendered[] {
  return blocks.map((b): Rendered => {
    switch (b.type) {
      case 'heading':
        return { kind: 'heading', level: b.level ?? 1, spans: [{ text: b.text }] }
      case 'paragraph':
        return { kind: 'paragraph', spans: [{ text: b.text }] }
      case 'quote':
        return { kind: 'paragraph', spans: [{ text: b.text }], quote: true }
      case 'list':
        return { kind: 'list', ordered: Boolean(b.ordered), start: 1, items: b.items.map((text) => [{ text }]) }
      case 'code':
        return { kind: 'code', text: b.text }
      case 'rule':
        return { kind: 'rule' }
      case 'pageBreak':
        return { kind: 'pageBreak' }
    }
  })
}

const TEXT = { type: 'string', maxLength: 20_000 }

export default defineHandler<Input>({
  slug: 'pdf-generator',
  description:
    'Generate a PDF document from Markdown or from structured blocks (headings, paragraphs, lists, code, quotes, rules, page breaks) with pdfkit: A4/Letter/Legal, margins, base font size, title and author metadata, page numbers.',
  timeoutMs: 30_000,
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      markdown: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_MARKDOWN,
        description: `Markdown source (GFM), at most ${MAX_MARKDOWN} characters; give this or content`,
      },
      content: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_BLOCKS,
        description: `structured blocks, at most ${MAX_BLOCKS}; give this or markdown`,
        items: {
          type: 'object',
          required: ['type'],
          properties: {
            type: {
              type: 'string',
              enum: ['heading', 'paragraph', 'list', 'code', 'quote', 'rule', 'pageBreak'],
              description: 'block kind',
            },
            text: {
              ...TEXT,
              description: 'text of a heading, paragraph, code or quote block (at most 20000 characters)',
            },
            level: { type: 'integer', minimum: 1, maximum: 6, description: 'heading level 1–6' },
            items: {
              type: 'array',
              maxItems: 500,
              items: { type: 'string', maxLength: 5000 },
              description: 'list items',
            },
            ordered: { type: 'boolean', description: 'numbered list' },
          },
        },
      },
      title: {
        type: 'string',
        minLength: 1,
        maxLength: 300,
        description: 'document title (PDF metadata, and printed at the top)',
      },
      author: { type: 'string', minLength: 1, maxLength: 200, description: 'author (PDF metadata)' },
      pageSize: { type: 'string', enum: ['A4', 'LETTER', 'LEGAL'], default: 'A4', description: 'paper size' },
      margin: {
        type: 'integer',
        minimum: 18,
        maximum: 144,
        default: 56,
        description: 'page margin in points (72 = 1 inch)',
      },
      fontSize: { type: 'integer', minimum: 8, maximum: 18, default: 11, description: 'body font size in points' },
    },
  },
  output: {
    contentType: 'application/pdf',
    description:
      'a PDF file (standard Helvetica/Courier fonts: Latin-1 text; other characters become "?"); with Accept: application/json only, { contentType, base64, bytes, pages }',
    schema: {
      type: 'object',
      description:
        'the JSON variant, answered when Accept asks for application/json only; otherwise the body is the raw bytes in contentType',
      properties: {
        contentType: { type: 'string' },
        base64: { type: 'string', description: 'the bytes, base64 (shortened in the example)' },
        bytes: { type: 'number' },
        pages: { type: 'number' },
      },
      required: ['contentType', 'base64', 'bytes', 'pages'],
    },
    example: {
      contentType: 'application/pdf',
      base64:
        'JVBERi0xLjMKJf////8KOCAwIG9iago8PAovVHlwZSAvUGFnZQovUGFyZW50IDEgMCBSCi9NZWRpYUJveCBbMCAwIDU5NS4yOCA4NDEuODldCi9Db250ZW50cyA2IDAgUgovUmVzb3VyY2VzIDcgMCBSCi9Vc2VyVW5pdCAxCj4+CmVuZG9iago3IDAgb2JqCjw8Ci9Q…',
      bytes: 1798,
      pages: 1,
    },
  },
  example: {
    markdown: '# Quarterly report\n\nRevenue grew **12%**.\n\n- Faster payments\n- Lower fees',
    title: 'Quarterly report',
    pageSize: 'A4',
    margin: 56,
    fontSize: 11,
  },
  async run(input, ctx) {
    if ((input.markdown === undefined) === (input.content === undefined))
      throw new HandlerInputError('markdown', 'give exactly one of markdown and content')
    if (input.content) {
      input.content.forEach((b, i) => {
        if (
          ['heading', 'paragraph', 'code', 'quote'].includes(b.type) &&
          typeof (b as { text?: unknown }).text !== 'string'
        )
          throw new HandlerInputError(`content.${i}.text`, `content.${i}.text is required for a ${b.type} block`)
        if (b.type === 'list' && !Array.isArray((b as { items?: unknown }).items))
          throw new HandlerInputError(`content.${i}.items`, `content.${i}.items is required for a list block`)
      })
    }
    const blocks = input.markdown !== undefined ? await fromMarkdown(input.markdown) : fromBlocks(input.content!)

    const { default: PDFDocument } = await import('pdfkit')
    const doc = new PDFDocument({
      size: input.pageSize,
      margin: input.margin,
      bufferPages: true,
      // pdfkit cannot serialize undefined info values
      info: {
        ...(input.title ? { Title: input.title } : {}),
        ...(input.author ? { Author: input.author } : {}),
        Creator: 'Tollgate pdf-generator',
        Producer: 'pdfkit',
      },
      displayTitle: Boolean(input.title),
    })
    const chunks: Buffer[] = []
    doc.on('data', (c: Buffer) => chunks.push(c))
    const done = new Promise<void>((resolve, reject) => {
      doc.on('end', resolve)
      doc.on('error', reject)
    })

    const base = input.fontSize
    const width = doc.page.width - 2 * input.margin
    const writeSpans = (spans: Span[], opts: { size: number; indent?: number; font?: string; color?: string }) => {
      const parts = spans.filter((s) => s.text.length > 0)
      if (!parts.length) return
      parts.forEach((s, i) => {
        const font =
          opts.font ??
          (s.code
            ? FONTS.mono
            : s.bold && s.italic
              ? FONTS.boldItalic
              : s.bold
                ? FONTS.bold
                : s.italic
                  ? FONTS.italic
                  : FONTS.regular)
        doc
          .font(font)
          .fontSize(opts.size)
          .fillColor(s.link ? '#1a56db' : (opts.color ?? '#111111'))
        const last = i === parts.length - 1
        const o = {
          continued: !last,
          link: s.link ?? null,
          underline: Boolean(s.link),
          lineGap: 2,
          ...(i === 0 ? { indent: 0, width: width - (opts.indent ?? 0) } : {}),
        }
        if (i === 0) doc.text(toWinAnsi(s.text), input.margin + (opts.indent ?? 0), doc.y, o)
        else doc.text(toWinAnsi(s.text), o)
      })
    }

    if (input.title) {
      doc
        .font(FONTS.bold)
        .fontSize(base * 2)
        .fillColor('#111111')
        .text(toWinAnsi(input.title), { width })
      doc.moveDown(0.8)
    }
    const HEADING_SCALE = [2, 1.6, 1.3, 1.15, 1.05, 1]
    for (const b of blocks) {
      if (b.kind === 'heading') {
        doc.moveDown(0.4)
        writeSpans(b.spans, { size: base * HEADING_SCALE[Math.min(6, Math.max(1, b.level)) - 1], font: FONTS.bold })
        doc.moveDown(0.3)
      } else if (b.kind === 'paragraph') {
        if (b.quote) {
          const top = doc.y
          writeSpans(b.spans, { size: base, indent: 14, color: '#444444' })
          doc
            .save()
            .moveTo(input.margin + 4, top)
            .lineTo(input.margin + 4, doc.y)
            .lineWidth(2)
            .strokeColor('#cccccc')
            .stroke()
            .restore()
        } else writeSpans(b.spans, { size: base })
        doc.moveDown(0.6)
      } else if (b.kind === 'list') {
        b.items.forEach((item, i) => {
          const marker = b.ordered ? `${b.start + i}.` : '•'
          const y = doc.y
          doc
            .font(FONTS.regular)
            .fontSize(base)
            .fillColor('#111111')
            .text(marker, input.margin + 4, y, { width: 20, lineBreak: false })
          doc.y = y
          writeSpans(item.length ? item : [{ text: ' ' }], { size: base, indent: 24 })
          doc.moveDown(0.2)
        })
        doc.moveDown(0.4)
      } else if (b.kind === 'code') {
        doc
          .font(FONTS.mono)
          .fontSize(base * 0.9)
          .fillColor('#222222')
          .text(toWinAnsi(b.text), input.margin + 10, doc.y, { width: width - 20, lineGap: 1 })
        doc.moveDown(0.6)
      } else if (b.kind === 'rule') {
        doc.moveDown(0.3)
        doc
          .save()
          .moveTo(input.margin, doc.y)
          .lineTo(input.margin + width, doc.y)
          .lineWidth(0.5)
          .strokeColor('#999999')
          .stroke()
          .restore()
        doc.moveDown(0.6)
      } else if (b.kind === 'pageBreak') {
        doc.addPage()
      }
    }

    // page numbers, written once every page exists
    const range = doc.bufferedPageRange()
    for (let i = range.start; i < range.start + range.count; i++) {
      doc.switchToPage(i)
      const bottom = doc.page.margins.bottom
      doc.page.margins.bottom = 0
      doc
        .font(FONTS.regular)
        .fontSize(8)
        .fillColor('#888888')
        .text(`${i + 1} / ${range.count}`, input.margin, doc.page.height - input.margin / 2 - 4, {
          width,
          align: 'center',
          lineBreak: false,
        })
      doc.page.margins.bottom = bottom
    }
    doc.end()
    await done
    return binaryResult(ctx, 'application/pdf', Buffer.concat(chunks), { pages: range.count })
  },
})
