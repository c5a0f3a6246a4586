import t from 'tap'
import sharp from 'sharp'
import jsqr from 'jsqr'

// jsqr is CommonJS: under NodeNext its default import is module.exports, whose .default is the decoder too
const jsQR = jsqr.default
import { okResult, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

async function decodeQr(image: Uint8Array): Promise<{ text: string; width: number; height: number }> {
  const { data, info } = await sharp(image).ensureAlpha().raw().toBuffer({ resolveWithObject: true })
  const code = jsQR(new Uint8ClampedArray(data.buffer, data.byteOffset, data.byteLength), info.width, info.height)
  if (!code) throw new Error('no QR code found')
  return { text: code.data, width: info.width, height: info.height }
}

const generate = async (input: Record<string, unknown>, opts: { from?: 'query' | 'body'; accept?: string } = {}) =>
  okResult(await runInline(handler, input, opts))

t.test('PNG decodes back to its text', async (t) => {
  const r = await generate({ text: 'https://example.com/pay?id=42', size: 300 })
  t.equal(r.contentType, 'image/png')
  const png = r.body as Uint8Array
  t.same([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  const d = await decodeQr(png)
  t.equal(d.text, 'https://example.com/pay?id=42')
  t.ok(Math.abs(d.width - 300) < 40, `width ${d.width} near 300`)
})

t.test('SVG, level H, Unicode text, query-string input', async (t) => {
  const r = await generate(
    { text: 'Grüße, 世界', format: 'svg', errorCorrectionLevel: 'H', size: '256', margin: '2' },
    { from: 'query' },
  )
  t.equal(r.contentType, 'image/svg+xml')
  const svg = Buffer.from(r.body as Uint8Array).toString()
  t.match(svg, /^<svg /)
  t.equal((await decodeQr(await sharp(Buffer.from(svg)).png().toBuffer())).text, 'Grüße, 世界')
})

t.test('JSON-only Accept gets base64; custom colours still decode', async (t) => {
  const r = await generate(
    { text: 'hello', darkColor: '#1a237e', lightColor: '#fffde7' },
    { accept: 'application/json' },
  )
  const body = r.body as { contentType: string; base64: string }
  t.equal(body.contentType, 'image/png')
  t.equal((await decodeQr(Buffer.from(body.base64, 'base64'))).text, 'hello')
  const binary = await generate({ text: 'hello' }, { accept: 'image/png, application/json;q=0.5' })
  t.ok(binary.body instanceof Uint8Array)
})

t.test('too much data for the level is refused; invalid input names the field', async (t) => {
  t.match(await runInline(handler, { text: 'x'.repeat(2000), errorCorrectionLevel: 'H' }), {
    ok: false,
    status: 413,
    field: 'text',
  })
  t.match(await runInline(handler, { text: 'x'.repeat(2954) }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: '' }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: 'a', size: 10_000 }), { ok: false, status: 400, field: 'size' })
  t.match(await runInline(handler, { text: 'a', darkColor: 'red' }), { ok: false, status: 400, field: 'darkColor' })
  t.match(await runInline(handler, { text: 'a', errorCorrectionLevel: 'X' }), {
    ok: false,
    status: 400,
    field: 'errorCorrectionLevel',
  })
})
