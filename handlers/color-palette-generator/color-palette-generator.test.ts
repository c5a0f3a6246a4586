import t from 'tap'
import sharp from 'sharp'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler, { medianCut, quantize, type Swatch } from './index.js'

type ColorBody = { base: Swatch; palettes: Record<string, Swatch[]> }
type ImageBody = { dominant: Swatch; palette: (Swatch & { share: number })[] }
const call = async <T>(input: Record<string, unknown>, from: 'query' | 'body' = 'body') =>
  okBody<T>(await runInline(handler, input, { from }))

t.test('harmonies of pure red', async (t) => {
  const r = await call<ColorBody>({ color: 'red' })
  t.same(r.base, { hex: '#ff0000', rgb: [255, 0, 0], hsl: [0, 100, 50] })
  t.same(
    r.palettes.complementary.map((s) => s.hex),
    ['#ff0000', '#00ffff'],
  )
  t.same(
    r.palettes.triadic.map((s) => s.hex),
    ['#ff0000', '#00ff00', '#0000ff'],
  )
  t.same(
    r.palettes.analogous.map((s) => s.hex),
    ['#ff0080', '#ff0000', '#ff8000'],
  )
  t.same(
    r.palettes.tetradic.map((s) => s.hsl[0]),
    [0, 60, 180, 240],
  )
  t.same(
    r.palettes['split-complementary'].map((s) => s.hsl[0]),
    [0, 150, 210],
  )
  t.equal(r.palettes.monochrome.length, 5)
  const ls = r.palettes.monochrome.map((s) => s.hsl[2])
  t.same(
    ls,
    [...ls].sort((a, b) => a - b),
    'monochrome goes dark to light',
  )
  t.ok(r.palettes.monochrome.every((s) => s.hsl[0] === 0))
})

t.test('hex input, chosen schemes and count from the query string', async (t) => {
  const r = await call<ColorBody>({ color: '#3498db', schemes: 'complementary', count: '3' }, 'query')
  t.same(Object.keys(r.palettes), ['complementary'])
  t.equal(r.palettes.complementary[1].hsl[0], 24)
  t.same(r.base.rgb, [52, 152, 219])
})

t.test('dominant colours of an image', async (t) => {
  // 3/4 blue, 1/4 yellow
  const svg =
    '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="200"><rect width="200" height="200" fill="#1565c0"/><rect width="100" height="100" fill="#ffeb3b"/></svg>'
  const png = (await sharp(Buffer.from(svg)).png().toBuffer()).toString('base64')
  const r = await call<ImageBody>({ image: png, count: 2 })
  t.equal(r.palette.length, 2)
  // resampling blends a few edge pixels, so allow a little drift per channel
  const near = (rgb: number[], hex: string) =>
    rgb.every((v, i) => Math.abs(v - parseInt(hex.slice(1 + 2 * i, 3 + 2 * i), 16)) <= 3)
  t.ok(near(r.palette[0].rgb, '#1565c0'), `${r.palette[0].hex} ≈ #1565c0`)
  t.ok(near(r.palette[1].rgb, '#ffeb3b'), `${r.palette[1].hex} ≈ #ffeb3b`)
  t.ok(Math.abs(r.palette[0].share - 0.75) < 0.02)
  t.ok(Math.abs(r.dominant.rgb[2] - 0xc0) < 40, 'dominant is the blue')
})

t.test('median cut on a single colour stops early; k-means separates unequal groups', async (t) => {
  const px = [...Array(30).fill([250, 0, 0]), ...Array(10).fill([0, 0, 250])] as [number, number, number][]
  t.same(
    quantize(px, 2).map((c) => [c.rgb, c.share]),
    [
      [[250, 0, 0], 0.75],
      [[0, 0, 250], 0.25],
    ],
  )
  t.same(
    medianCut(
      [
        [1, 2, 3],
        [1, 2, 3],
      ],
      4,
    ),
    [{ rgb: [1, 2, 3], share: 1 }],
  )
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'color' })
  t.match(await runInline(handler, { color: 'red', image: 'AAAA' }), { ok: false, status: 400, field: 'color' })
  t.match(await runInline(handler, { color: 'notacolour' }), { ok: false, status: 400, field: 'color' })
  t.match(await runInline(handler, { color: '' }), { ok: false, status: 400, field: 'color' })
  t.match(await runInline(handler, { color: 'red', count: 99 }), { ok: false, status: 400, field: 'count' })
  t.match(await runInline(handler, { color: 'red', schemes: ['pastel'] }), {
    ok: false,
    status: 400,
    field: 'schemes.0',
  })
  t.match(await runInline(handler, { image: Buffer.from('nope').toString('base64') }), {
    ok: false,
    status: 400,
    field: 'image',
  })
  t.match(await runInline(handler, { image: 'A'.repeat(14_000_000) }), { ok: false, status: 400, field: 'image' })
})
