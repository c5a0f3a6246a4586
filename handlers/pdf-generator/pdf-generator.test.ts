import t from 'tap'
import { inflateSync } from 'node:zlib'
import { okResult, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

/** Text drawn on the pages: inflates content streams and joins the strings of each TJ/Tj operator. */
function pdfText(pdf: Buffer): string {
  const raw = pdf.toString('latin1')
  const lines: string[] = []
  const streamRe = /<<([^]*?)>>\s*stream\r?\n/g
  for (let m = streamRe.exec(raw); m; m = streamRe.exec(raw)) {
    const start = m.index + m[0].length
    const end = raw.indexOf('endstream', start)
    let body = pdf.subarray(start, end)
    if (/FlateDecode/.test(m[1])) {
      try {
        body = inflateSync(body)
      } catch {
        continue
      }
    }
    const ops = body.toString('latin1')
    for (const tj of ops.matchAll(/\[((?:<[0-9a-fA-F]*>|-?[\d.]+|\s)*)\]\s*TJ/g)) {
      lines.push(
        [...tj[1].matchAll(/<([0-9a-fA-F]*)>/g)].map((h) => Buffer.from(h[1], 'hex').toString('latin1')).join(''),
      )
    }
  }
  return lines.join('\n')
}

const pageCount = (pdf: Buffer) => (pdf.toString('latin1').match(/\/Type \/Page\b/g) ?? []).length

const generate = async (input: Record<string, unknown>, opts: { from?: 'query' | 'body'; accept?: string } = {}) =>
  okResult(await runInline(handler, input, opts))

t.test('Markdown becomes a PDF containing its text', async (t) => {
  const r = await generate({
    markdown:
      '# Quarterly report\n\nRevenue grew **twelve percent** with [docs](https://example.com).\n\n- Faster payments\n- Lower fees\n\n1. first\n2. second\n\n```\nconst x = 1\n```\n\n> quoted words\n\n---\n\n| a | b |\n|---|---|\n| 1 | 2 |',
    title: 'Report Q3',
    author: 'Tollgate',
  })
  t.equal(r.contentType, 'application/pdf')
  const pdf = Buffer.from(r.body as Uint8Array)
  t.equal(pdf.subarray(0, 5).toString(), '%PDF-')
  t.match(pdf.subarray(-6).toString(), /%%EOF/)
  const text = pdfText(pdf)
  for (const words of [
    'Report Q3',
    'Quarterly report',
    'Revenue grew',
    'twelve percent',
    'Faster payments',
    'Lower fees',
    'first',
    'const x = 1',
    'quoted words',
    '1 / 1',
  ])
    t.match(text, words)
  t.match(pdf.toString('latin1'), /\/URI \(https:\/\/example\.com\)/)
})

t.test('structured content, page breaks and Letter size', async (t) => {
  const r = await generate({
    content: [
      { type: 'heading', text: 'Chapter One', level: 2 },
      { type: 'paragraph', text: 'Plain paragraph.' },
      { type: 'pageBreak' },
      { type: 'list', items: ['alpha', 'beta'], ordered: true },
      { type: 'rule' },
      { type: 'quote', text: 'wise words' },
    ],
    pageSize: 'LETTER',
  })
  const pdf = Buffer.from(r.body as Uint8Array)
  t.equal(pageCount(pdf), 2)
  t.match(pdf.toString('latin1'), /\/MediaBox \[0 0 612 792\]/)
  const text = pdfText(pdf)
  for (const words of ['Chapter One', 'Plain paragraph.', 'alpha', 'beta', 'wise words', '2 / 2']) t.match(text, words)
})

t.test('long input flows onto more pages; query-string input; JSON-only Accept', async (t) => {
  const long = Array.from({ length: 200 }, (_, i) => `Paragraph number ${i} with some text to fill the page.`).join(
    '\n\n',
  )
  const r = await generate({ markdown: long, fontSize: '12', margin: '72' }, { from: 'query' })
  t.ok(pageCount(Buffer.from(r.body as Uint8Array)) > 3)
  const j = await generate({ markdown: 'hello' }, { accept: 'application/json' })
  t.match(j.body, { contentType: 'application/pdf', pages: 1, base64: /^JVBERi0/ })
})

t.test('non-Latin-1 characters are replaced, not garbled', async (t) => {
  const r = await generate({ markdown: 'Café “quoted” – 世界' })
  t.match(pdfText(Buffer.from(r.body as Uint8Array)), 'Café "quoted" - ??')
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'markdown' })
  t.match(await runInline(handler, { markdown: 'x', content: [{ type: 'rule' }] }), {
    ok: false,
    status: 400,
    field: 'markdown',
  })
  t.match(await runInline(handler, { markdown: '' }), { ok: false, status: 400, field: 'markdown' })
  t.match(await runInline(handler, { markdown: 'x'.repeat(200_001) }), { ok: false, status: 400, field: 'markdown' })
  t.match(await runInline(handler, { content: [{ type: 'table' }] }), {
    ok: false,
    status: 400,
    field: 'content.0.type',
  })
  t.match(await runInline(handler, { content: [{ type: 'paragraph' }] }), {
    ok: false,
    status: 400,
    field: 'content.0.text',
  })
  t.match(await runInline(handler, { markdown: 'x', pageSize: 'A0' }), { ok: false, status: 400, field: 'pageSize' })
})
