import t from 'tap'
import sharp from 'sharp'
import { crc32, deflateSync } from 'node:zlib'
import { okResult, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const gradient = async (width: number, height: number, format: 'png' | 'jpeg' = 'png') => {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><defs><linearGradient id="g"><stop offset="0" stop-color="#e53935"/><stop offset="1" stop-color="#1e88e5"/></linearGradient></defs><rect width="100%" height="100%" fill="url(#g)"/><circle cx="50%" cy="50%" r="25%" fill="#fdd835"/></svg>`
  return (await sharp(Buffer.from(svg))[format]().toBuffer()).toString('base64')
}

const resize = async (input: Record<string, unknown>, accept?: string) =>
  okResult(await runInline(handler, input, { accept }))

/** A PNG whose header declares width×height but carries almost no pixel data. */
function pngDeclaring(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data])
    const len = Buffer.alloc(4)
    len.writeUInt32BE(data.length)
    const crc = Buffer.alloc(4)
    crc.writeUInt32BE(crc32(body))
    return Buffer.concat([len, body, crc])
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8 // bit depth
  ihdr[9] = 2 // RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.alloc(1024))),
    chunk('IEND', Buffer.alloc(0)),
  ])
}

t.test('resizes keeping the aspect ratio and converts formats', async (t) => {
  const src = await gradient(400, 200)
  const webp = await resize({ image: src, width: 100, format: 'webp' })
  t.equal(webp.contentType, 'image/webp')
  t.match(await sharp(webp.body as Uint8Array).metadata(), { format: 'webp', width: 100, height: 50 })

  for (const format of ['jpeg', 'png', 'avif'] as const) {
    const r = await resize({ image: src, width: 80, height: 80, fit: 'cover', format, quality: 50 })
    t.equal(r.contentType, `image/${format}`)
    const m = await sharp(r.body as Uint8Array).metadata()
    t.match(m, { width: 80, height: 80, format: format === 'avif' ? 'heif' : format })
  }
})

t.test('keeps the input format by default, does not enlarge unless asked, data: URLs accepted', async (t) => {
  const src = await gradient(60, 40, 'jpeg')
  const same = await resize({ image: `data:image/jpeg;base64,${src}`, width: 600 })
  t.equal(same.contentType, 'image/jpeg')
  t.match(await sharp(same.body as Uint8Array).metadata(), { width: 60, height: 40 })
  const big = await resize({ image: src, width: 120, withoutEnlargement: false, format: 'png' })
  t.match(await sharp(big.body as Uint8Array).metadata(), { width: 120, height: 80 })
})

t.test('lower quality gives a smaller jpeg; JSON-only Accept carries dimensions', async (t) => {
  const src = await gradient(300, 300)
  const hi = await resize({ image: src, format: 'jpeg', quality: 95 })
  const lo = await resize({ image: src, format: 'jpeg', quality: 20 })
  t.ok((lo.body as Uint8Array).length < (hi.body as Uint8Array).length)
  const j = await resize({ image: src, width: 30, format: 'png' }, 'application/json')
  t.match(j.body, { contentType: 'image/png', width: 30, height: 30, format: 'png', base64: /^iVBOR/ })
})

t.test('a decompression bomb is refused quickly', async (t) => {
  const bomb = pngDeclaring(50_000, 50_000)
  t.ok(bomb.length < 2000)
  const started = Date.now()
  const out = await runInline(handler, { image: bomb.toString('base64'), width: 10 })
  t.match(out, { ok: false, status: 413, field: 'image' })
  t.ok(Date.now() - started < 2000, `refused in ${Date.now() - started} ms`)
})

t.test('GET: a small image as base64url in the query string', async (t) => {
  const image = Buffer.from(await gradient(40, 20), 'base64').toString('base64url')
  const out = okResult(await runInline(handler, { image, width: '10', format: 'png' }, { from: 'query' }))
  t.equal(out.contentType, 'image/png')
  const meta = await sharp(Buffer.from(out.body as Uint8Array)).metadata()
  t.same([meta.width, meta.height], [10, 5])
})

t.test('bad and oversized input names the field', async (t) => {
  t.match(await runInline(handler, { image: '' }), { ok: false, status: 400, field: 'image' })
  t.match(await runInline(handler, { image: 'not base64 !!' }), { ok: false, status: 400, field: 'image' })
  t.match(await runInline(handler, { image: Buffer.from('hello, not an image').toString('base64') }), {
    ok: false,
    status: 400,
    field: 'image',
  })
  t.match(await runInline(handler, { image: 'A'.repeat(14_000_000) }), { ok: false, status: 400, field: 'image' })
  t.match(await runInline(handler, { image: 'A'.repeat(13_981_100) }), { ok: false, status: 413, field: 'image' })
  t.match(await runInline(handler, { image: 'AAAA', width: 0 }), { ok: false, status: 400, field: 'width' })
  t.match(await runInline(handler, { image: 'AAAA', format: 'gif' }), { ok: false, status: 400, field: 'format' })
})
