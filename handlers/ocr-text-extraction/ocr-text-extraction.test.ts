import t from 'tap'
import sharp from 'sharp'
import { runInline } from '../../test/helpers/handler-harness.js'
import handler, { terminateOcrWorker } from './index.js'

type Body = {
  text: string
  confidence: number
  lines: number
  words?: { text: string; confidence: number; bbox: { x0: number; y0: number; x1: number; y1: number } }[]
}

/** Renders text lines to an image with sharp (librsvg), as a scanner would give it. */
async function render(lines: string[], format: 'png' | 'jpeg' | 'webp' = 'png'): Promise<string> {
  const body = lines
    .map(
      (l, i) =>
        `<text x="30" y="${80 + i * 70}" font-family="DejaVu Sans, Liberation Sans, sans-serif" font-size="44" fill="#111">${l}</text>`,
    )
    .join('')
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="900" height="${60 + lines.length * 70}"><rect width="100%" height="100%" fill="#fff"/>${body}</svg>`
  return (await sharp(Buffer.from(svg))[format]().toBuffer()).toString('base64')
}

// the handler keeps one Tesseract thread per process; end it so the test process can exit
t.teardown(terminateOcrWorker)

t.test('reads the words of a rendered image, with word boxes', async (t) => {
  const out = await runInline(handler, {
    image: await render(['Invoice 2024 Total 42', 'The quick brown fox']),
    words: true,
  })
  t.ok(out.ok)
  if (!out.ok) return
  const r = out.result.body as Body
  t.match(r.text, /Invoice 2024 Total 42/)
  t.match(r.text, /quick brown fox/)
  t.equal(r.lines, 2)
  t.ok(r.confidence > 70, `confidence ${r.confidence}`)
  const invoice = r.words!.find((w) => w.text === 'Invoice')
  t.ok(invoice, 'word list has Invoice')
  t.ok(invoice!.bbox.x0 >= 20 && invoice!.bbox.x0 < 60 && invoice!.bbox.y1 <= 100, 'box where it was drawn')
})

t.test('JPEG input and single-line mode', async (t) => {
  const out = await runInline(handler, {
    image: await render(['HELLO WORLD'], 'jpeg'),
    pageSegmentation: 'single-line',
  })
  t.ok(out.ok)
  if (!out.ok) return
  t.match((out.result.body as Body).text, /HELLO WORLD/)
})

t.test('a blank image gives empty text', async (t) => {
  const blank = (
    await sharp({ create: { width: 200, height: 100, channels: 3, background: '#ffffff' } })
      .png()
      .toBuffer()
  ).toString('base64')
  const out = await runInline(handler, { image: blank })
  t.ok(out.ok)
  if (!out.ok) return
  t.match(out.result.body, { text: '', lines: 0 })
})

t.test('invalid and oversized input names the field', async (t) => {
  t.match(await runInline(handler, { image: '' }), { ok: false, status: 400, field: 'image' })
  t.match(await runInline(handler, { image: 'A'.repeat(14_000_000) }), { ok: false, status: 400, field: 'image' })
  t.match(await runInline(handler, { image: Buffer.from('plain text, not an image').toString('base64') }), {
    ok: false,
    status: 400,
    field: 'image',
  })
  t.match(await runInline(handler, { image: 'AAAA', pageSegmentation: 'columns' }), {
    ok: false,
    status: 400,
    field: 'pageSegmentation',
  })
  const huge = await sharp({ create: { width: 6000, height: 5000, channels: 3, background: '#fff' } })
    .png({ compressionLevel: 9 })
    .toBuffer()
  t.match(await runInline(handler, { image: huge.toString('base64') }), { ok: false, status: 413, field: 'image' })
})
