import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import { base64MaxLength, decodeBase64Field } from '../_shared/base64-input.js'

const MAX_IMAGE_BYTES = 10 * 1024 * 1024
const MAX_IMAGE_PIXELS = 40_000_000
/** Images are sampled down to at most this many pixels per side before quantizing. */
const SAMPLE_SIDE = 96

const SCHEMES = ['complementary', 'analogous', 'triadic', 'tetradic', 'split-complementary', 'monochrome'] as const
type Scheme = (typeof SCHEMES)[number]

interface Input {
  color?: string
  image?: string
  schemes: Scheme[]
  count: number
}

export interface Swatch {
  hex: string
  rgb: [number, number, number]
  hsl: [number, number, number]
}

/** Hue offsets in degrees of each harmony (tetradic is the 60/180/240 rectangle). */
const HUE_OFFSETS: Record<Exclude<Scheme, 'monochrome'>, number[]> = {
  complementary: [0, 180],
  analogous: [-30, 0, 30],
  triadic: [0, 120, 240],
  tetradic: [0, 60, 180, 240],
  'split-complementary': [0, 150, 210],
}

function swatch(rgb: [number, number, number]): Swatch {
  const [r, g, b] = rgb.map((v) => Math.max(0, Math.min(255, Math.round(v)))) as [number, number, number]
  const max = Math.max(r, g, b) / 255
  const min = Math.min(r, g, b) / 255
  const l = (max + min) / 2
  const d = max - min
  let h = 0
  let s = 0
  if (d > 0) {
    s = d / (1 - Math.abs(2 * l - 1))
    const [rn, gn, bn] = [r / 255, g / 255, b / 255]
    h = max === rn ? ((gn - bn) / d) % 6 : max === gn ? (bn - rn) / d + 2 : (rn - gn) / d + 4
    h = (h * 60 + 360) % 360
  }
  const hex = `#${[r, g, b].map((v) => v.toString(16).padStart(2, '0')).join('')}`
  return { hex, rgb: [r, g, b], hsl: [Math.round(h), Math.round(s * 100), Math.round(l * 100)] }
}

/**
 * Palette of up to `count` colours: median-cut seeds refined by k-means (Lloyd) iterations,
 * so clusters follow the real colour groups rather than median splits.
 */
export function quantize(
  pixels: [number, number, number][],
  count: number,
  iterations = 10,
): { rgb: [number, number, number]; share: number }[] {
  let centres = medianCut(pixels, count).map((c) => c.rgb)
  let sizes: number[] = []
  for (let it = 0; it < iterations; it++) {
    const sums = centres.map(() => [0, 0, 0])
    sizes = centres.map(() => 0)
    for (const p of pixels) {
      let best = 0
      let bestD = Infinity
      centres.forEach((c, i) => {
        const d = (p[0] - c[0]) ** 2 + (p[1] - c[1]) ** 2 + (p[2] - c[2]) ** 2
        if (d < bestD) {
          bestD = d
          best = i
        }
      })
      sums[best][0] += p[0]
      sums[best][1] += p[1]
      sums[best][2] += p[2]
      sizes[best]++
    }
    const next = centres.map((c, i) => (sizes[i] ? (sums[i].map((v) => v / sizes[i]) as [number, number, number]) : c))
    const moved = next.some(
      (c, i) => Math.abs(c[0] - centres[i][0]) + Math.abs(c[1] - centres[i][1]) + Math.abs(c[2] - centres[i][2]) > 0.5,
    )
    centres = next
    if (!moved) break
  }
  return centres
    .map((rgb, i) => ({ rgb, share: sizes[i] / pixels.length }))
    .filter((c) => c.share > 0)
    .sort((a, b) => b.share - a.share)
}

/** Median cut: split the box with the widest channel range at its median until there are `count` boxes. */
export function medianCut(
  pixels: [number, number, number][],
  count: number,
): { rgb: [number, number, number]; share: number }[] {
  let boxes = [pixels]
  while (boxes.length < count) {
    let best = -1
    let bestRange = 0
    let channel = 0
    boxes.forEach((box, i) => {
      if (box.length < 2) return
      for (let c = 0; c < 3; c++) {
        let lo = 255
        let hi = 0
        for (const p of box) {
          if (p[c] < lo) lo = p[c]
          if (p[c] > hi) hi = p[c]
        }
        if (hi - lo > bestRange) {
          bestRange = hi - lo
          best = i
          channel = c
        }
      }
    })
    if (best < 0) break // every box is a single colour
    const box = boxes[best].slice().sort((a, b) => a[channel] - b[channel])
    const mid = box.length >> 1
    boxes = [...boxes.slice(0, best), box.slice(0, mid), box.slice(mid), ...boxes.slice(best + 1)]
  }
  return boxes
    .map((box) => {
      const sum = box.reduce((acc, p) => [acc[0] + p[0], acc[1] + p[1], acc[2] + p[2]], [0, 0, 0])
      return { rgb: sum.map((v) => v / box.length) as [number, number, number], share: box.length / pixels.length }
    })
    .sort((a, b) => b.share - a.share)
}

export default defineHandler<Input>({
  slug: 'color-palette-generator',
  description:
    'Colour palettes: harmonies (complementary, analogous, triadic, tetradic, split-complementary, monochrome) from a base colour, or the dominant colours of an image (median cut refined by k-means); every swatch as hex, RGB and HSL.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      color: {
        type: 'string',
        minLength: 1,
        maxLength: 64,
        description: 'base colour as CSS hex (#3498db), rgb(...), hsl(...) or a CSS colour name; give this or image',
      },
      image: {
        type: 'string',
        minLength: 1,
        maxLength: base64MaxLength(MAX_IMAGE_BYTES),
        description: `an image (base64 or data: URL, at most ${MAX_IMAGE_BYTES} bytes and ${MAX_IMAGE_PIXELS} pixels) to extract dominant colours from; give this or color`,
      },
      schemes: {
        type: 'array',
        items: { type: 'string', enum: [...SCHEMES] },
        minItems: 1,
        maxItems: SCHEMES.length,
        uniqueItems: true,
        default: [...SCHEMES],
        description: 'harmonies to compute from color (default all)',
      },
      count: {
        type: 'integer',
        minimum: 2,
        maximum: 16,
        default: 5,
        description: 'number of shades for monochrome, or of colours extracted from an image',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      "for color: base swatch and palettes keyed by scheme; for image: dominant colour and a palette with each colour's share of the image. Swatches are { hex, rgb, hsl }",
    schema: {
      type: 'object',
      properties: {
        base: { type: 'object' },
        palettes: { type: 'object' },
        dominant: { type: 'object' },
        palette: { type: 'array' },
      },
    },
    example: {
      base: { hex: '#3498db', rgb: [52, 152, 219], hsl: [204, 70, 53] },
      palettes: {
        complementary: [
          { hex: '#3498db', rgb: [52, 152, 219], hsl: [204, 70, 53] },
          { hex: '#db7734', rgb: [219, 119, 52], hsl: [24, 70, 53] },
        ],
        triadic: [
          { hex: '#3498db', rgb: [52, 152, 219], hsl: [204, 70, 53] },
          { hex: '#db3498', rgb: [219, 52, 152], hsl: [324, 70, 53] },
          { hex: '#98db34', rgb: [152, 219, 52], hsl: [84, 70, 53] },
        ],
        monochrome: [
          { hex: '#0c2c41', rgb: [12, 44, 65], hsl: [204, 69, 15] },
          { hex: '#195e8d', rgb: [25, 94, 141], hsl: [204, 70, 33] },
          { hex: '#2691d9', rgb: [38, 145, 217], hsl: [204, 70, 50] },
        ],
      },
    },
  },
  example: { color: '#3498db', schemes: ['complementary', 'triadic', 'monochrome'], count: 5 },
  async run(input) {
    if ((input.color === undefined) === (input.image === undefined))
      throw new HandlerInputError('color', 'give exactly one of color and image')

    if (input.color !== undefined) {
      const { default: chroma } = await import('chroma-js')
      if (!chroma.valid(input.color))
        throw new HandlerInputError('color', `color ${JSON.stringify(input.color)} is not a CSS colour`)
      const base = chroma(input.color)
      const [h0, s, l] = base.hsl()
      const h = Number.isNaN(h0) ? 0 : h0
      const palettes: Partial<Record<Scheme, Swatch[]>> = {}
      for (const scheme of input.schemes) {
        if (scheme === 'monochrome') {
          // evenly spaced lightness from dark to light at the base hue and saturation
          palettes.monochrome = Array.from({ length: input.count }, (_, i) =>
            swatch(chroma.hsl(h, s, 0.15 + (0.7 * i) / (input.count - 1)).rgb()),
          )
        } else {
          palettes[scheme] = HUE_OFFSETS[scheme].map((off) => swatch(chroma.hsl((h + off + 360) % 360, s, l).rgb()))
        }
      }
      return { body: { base: swatch(base.rgb()), palettes } }
    }

    const bytes = decodeBase64Field('image', input.image!, MAX_IMAGE_BYTES)
    const { default: sharp } = await import('sharp')
    let data: Buffer
    let dominant
    try {
      const img = sharp(bytes, { limitInputPixels: MAX_IMAGE_PIXELS })
      const meta = await img.metadata()
      if ((meta.width ?? 0) * (meta.height ?? 0) > MAX_IMAGE_PIXELS)
        throw new HandlerInputError('image', `image exceeds ${MAX_IMAGE_PIXELS} pixels`, 413)
      const small = img.resize(SAMPLE_SIDE, SAMPLE_SIDE, { fit: 'inside' }).removeAlpha().toColourspace('srgb')
      data = await small.clone().raw().toBuffer()
      dominant = (await sharp(data, { raw: { width: 1, height: data.length / 3, channels: 3 } }).stats()).dominant
    } catch (err) {
      if (err instanceof HandlerInputError) throw err
      if (/pixel limit/i.test((err as Error).message))
        throw new HandlerInputError('image', `image exceeds ${MAX_IMAGE_PIXELS} pixels`, 413)
      throw new HandlerInputError('image', 'image is not a supported image (jpeg, png, webp, avif, gif, tiff, svg)')
    }
    const pixels: [number, number, number][] = []
    for (let i = 0; i + 2 < data.length; i += 3) pixels.push([data[i], data[i + 1], data[i + 2]])
    const palette = quantize(pixels, input.count).map((c) => ({
      ...swatch(c.rgb),
      share: Math.round(c.share * 1000) / 1000,
    }))
    return { body: { dominant: swatch([dominant.r, dominant.g, dominant.b]), palette } }
  },
})
