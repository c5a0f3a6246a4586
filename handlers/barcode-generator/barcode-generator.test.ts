import t from 'tap'
import sharp from 'sharp'
import jsqr from 'jsqr'

// jsqr is CommonJS: under NodeNext its default import is module.exports, whose .default is the decoder too
const jsQR = jsqr.default
import { okResult, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const generate = async (input: Record<string, unknown>, opts: { from?: 'query' | 'body'; accept?: string } = {}) =>
  okResult(await runInline(handler, input, opts))

// EAN-13 reference encoding (GS1 General Specifications 5.2.1.2)
const L = ['0001101', '0011001', '0010011', '0111101', '0100011', '0110001', '0101111', '0111011', '0110111', '0001011']
const G = L.map((c) =>
  [...c]
    .reverse()
    .map((b) => (b === '1' ? '0' : '1'))
    .join(''),
)
const R = L.map((c) => [...c].map((b) => (b === '1' ? '0' : '1')).join(''))
const PARITY = ['LLLLLL', 'LLGLGG', 'LLGGLG', 'LLGGGL', 'LGLLGG', 'LGGLLG', 'LGGGLL', 'LGLGLG', 'LGLGGL', 'LGGLGL']
function ean13Modules(code: string): string {
  const d = [...code].map(Number)
  let bits = '101'
  for (let i = 1; i <= 6; i++) bits += (PARITY[d[0]][i - 1] === 'L' ? L : G)[d[i]]
  bits += '01010'
  for (let i = 7; i <= 12; i++) bits += R[d[i]]
  return bits + '101'
}

/** Reads the 95 modules of an EAN-13 from one pixel row of the rendered image. */
async function readEan13Row(png: Uint8Array): Promise<string> {
  const { data, info } = await sharp(png)
    .flatten({ background: '#ffffff' })
    .greyscale()
    .raw()
    .toBuffer({ resolveWithObject: true })
  const y = Math.floor(info.height / 4)
  const row = [...data.subarray(y * info.width, (y + 1) * info.width)].map((v) => (v < 128 ? '1' : '0')).join('')
  const first = row.indexOf('1')
  const last = row.lastIndexOf('1')
  const module = (last - first + 1) / 95
  let bits = ''
  for (let i = 0; i < 95; i++) bits += row[Math.floor(first + (i + 0.5) * module)]
  return bits
}

t.test('EAN-13 bars match the reference encoding and the check digit is added', async (t) => {
  const r = await generate({ type: 'ean13', text: '590123412345', scale: 2, includeText: false })
  t.equal(r.contentType, 'image/png')
  t.equal(await readEan13Row(r.body as Uint8Array), ean13Modules('5901234123457'))
})

t.test('EAN-13 with a wrong check digit is refused', async (t) => {
  t.match(await runInline(handler, { type: 'ean13', text: '5901234123458' }), {
    ok: false,
    status: 400,
    field: 'text',
    message: /check digit/i,
  })
  t.match(await runInline(handler, { type: 'ean13', text: '12345' }), { ok: false, status: 400, field: 'text' })
})

t.test('QR via bwip-js decodes back', async (t) => {
  const r = await generate({ type: 'qrcode', text: 'tollgate barcode', scale: 4, backgroundColor: 'ffffff' })
  const { data, info } = await sharp(r.body as Uint8Array)
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true })
  // jsQR needs a quiet zone: pad with white
  const padded = await sharp(data, { raw: info })
    .extend({ top: 20, bottom: 20, left: 20, right: 20, background: '#ffffff' })
    .raw()
    .toBuffer({ resolveWithObject: true })
  const code = jsQR(new Uint8ClampedArray(padded.data), padded.info.width, padded.info.height)
  t.equal(code?.data, 'tollgate barcode')
})

t.test('Code 128 as SVG, from the query string; JSON-only Accept', async (t) => {
  const r = await generate(
    { type: 'code128', text: 'ABC-123', format: 'svg', includeText: 'false', scale: '2' },
    { from: 'query' },
  )
  t.equal(r.contentType, 'image/svg+xml')
  const svg = Buffer.from(r.body as Uint8Array).toString()
  t.match(svg, /<svg[^>]+viewBox/)
  t.match(svg, /<path/)
  const meta = await sharp(Buffer.from(svg)).metadata()
  t.ok(meta.width! > meta.height!, 'linear barcode is wider than tall')
  const j = await generate({ type: 'datamatrix', text: 'hello' }, { accept: 'application/json' })
  t.match(j.body, { contentType: 'image/png', base64: /^iVBORw0KGgo/ })
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { type: 'code128', text: '' }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { type: 'code128', text: 'x'.repeat(513) }), {
    ok: false,
    status: 400,
    field: 'text',
  })
  t.match(await runInline(handler, { type: 'nosuch', text: '1' }), { ok: false, status: 400, field: 'type' })
  t.match(await runInline(handler, { type: 'code128', text: '1', scale: 50 }), {
    ok: false,
    status: 400,
    field: 'scale',
  })
  t.match(await runInline(handler, { type: 'code128', text: '1', barColor: '#000' }), {
    ok: false,
    status: 400,
    field: 'barColor',
  })
  t.match(await runInline(handler, { type: 'upca', text: 'ABCDEFGHIJK' }), { ok: false, status: 400, field: 'text' })
})
