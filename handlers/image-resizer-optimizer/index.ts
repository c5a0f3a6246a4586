import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import { binaryResult } from '../_shared/binary-output.js'
import { base64MaxLength, decodeBase64Field } from '../_shared/base64-input.js'

const MAX_INPUT_BYTES = 10 * 1024 * 1024
/** Decoded input may hold at most this many pixels (e.g. 8000×5000); larger declared sizes are refused before decoding. */
const MAX_INPUT_PIXELS = 40_000_000
const MAX_SIDE = 8192

const FORMATS = ['jpeg', 'png', 'webp', 'avif'] as const
type Format = (typeof FORMATS)[number]

interface Input {
  image: string
  width?: number
  height?: number
  fit: 'cover' | 'contain' | 'fill' | 'inside' | 'outside'
  format?: Format
  quality: number
  withoutEnlargement: boolean
  background: string
}

export default defineHandler<Input>({
  slug: 'image-resizer-optimizer',
  description:
    'Resize and re-encode an image (JPEG, PNG, WebP, AVIF, GIF, TIFF in; JPEG, PNG, WebP, AVIF out) with sharp: width/height with cover/contain/fill/inside/outside fitting, quality, EXIF auto-rotation and metadata stripping.',
  timeoutMs: 30_000,
  inputSchema: {
    type: 'object',
    required: ['image'],
    additionalProperties: false,
    properties: {
      image: {
        type: 'string',
        minLength: 1,
        maxLength: base64MaxLength(MAX_INPUT_BYTES),
        description: `the source image, base64 or a data: URL; at most ${MAX_INPUT_BYTES} bytes decoded and ${MAX_INPUT_PIXELS} pixels`,
      },
      width: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_SIDE,
        description: `target width in pixels (1–${MAX_SIDE}); omit to follow the height and aspect ratio`,
      },
      height: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_SIDE,
        description: `target height in pixels (1–${MAX_SIDE}); omit to follow the width and aspect ratio`,
      },
      fit: {
        type: 'string',
        enum: ['cover', 'contain', 'fill', 'inside', 'outside'],
        default: 'inside',
        description:
          'how to fit both width and height: cover crops, contain letterboxes, fill stretches, inside/outside keep the aspect ratio',
      },
      format: {
        type: 'string',
        enum: [...FORMATS],
        description: 'output format; defaults to the input format when it is one of these, else png',
      },
      quality: {
        type: 'integer',
        minimum: 1,
        maximum: 100,
        default: 80,
        description: 'encoder quality for jpeg, webp and avif (1–100); png is always lossless',
      },
      withoutEnlargement: { type: 'boolean', default: true, description: 'never upscale beyond the source size' },
      background: {
        type: 'string',
        pattern: '^#(?:[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$',
        default: '#ffffff',
        description: 'letterbox colour for fit=contain and fill colour when flattening transparency into jpeg',
      },
    },
  },
  output: {
    contentType: 'image/webp',
    description:
      'the re-encoded image (image/jpeg, image/png, image/webp or image/avif); with Accept: application/json only, { contentType, base64, bytes, width, height, format }',
    schema: {
      type: 'object',
      description:
        'the JSON variant, answered when Accept asks for application/json only; otherwise the body is the raw bytes in contentType',
      properties: {
        contentType: { type: 'string' },
        base64: { type: 'string', description: 'the bytes, base64 (shortened in the example)' },
        bytes: { type: 'number' },
        width: { type: 'number' },
        height: { type: 'number' },
        format: { type: 'string' },
        inputBytes: { type: 'number' },
        inputWidth: { type: 'number' },
        inputHeight: { type: 'number' },
      },
      required: [
        'contentType',
        'base64',
        'bytes',
        'width',
        'height',
        'format',
        'inputBytes',
        'inputWidth',
        'inputHeight',
      ],
    },
    example: {
      contentType: 'image/webp',
      base64: 'UklGRjwAAABXRUJQVlA4IDAAAADQAQCdASoBAAEAAUAmJaACdLoB+AADsAD+8ut//NgVzXPv9//S4P0uD9Lg/9KQAAA=',
      bytes: 68,
      width: 1,
      height: 1,
      format: 'webp',
      inputBytes: 79,
      inputWidth: 2,
      inputHeight: 2,
    },
  },
  example: {
    image:
      'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==',
    width: 1,
    fit: 'inside',
    format: 'webp',
    quality: 80,
    withoutEnlargement: false,
    background: '#ffffff',
  },
  async run(input, ctx) {
    const bytes = decodeBase64Field('image', input.image, MAX_INPUT_BYTES)
    const { default: sharp } = await import('sharp')
    const open = () => sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'error' })

    // header only: refuse bombs and non-images before any pixel is decoded
    let meta
    try {
      meta = await open().metadata()
    } catch (err) {
      if (/pixel limit/i.test((err as Error).message))
        throw new HandlerInputError('image', `image exceeds ${MAX_INPUT_PIXELS} pixels`, 413)
      throw new HandlerInputError('image', 'image is not a supported image (jpeg, png, webp, avif, gif, tiff)')
    }
    if (!meta.width || !meta.height) throw new HandlerInputError('image', 'image has no dimensions')
    if (meta.width * meta.height > MAX_INPUT_PIXELS)
      throw new HandlerInputError(
        'image',
        `image is ${meta.width}×${meta.height}, more than ${MAX_INPUT_PIXELS} pixels`,
        413,
      )

    const format: Format =
      input.format ?? ((FORMATS as readonly string[]).includes(meta.format ?? '') ? (meta.format as Format) : 'png')
    let pipeline = open().rotate()
    if (input.width || input.height) {
      pipeline = pipeline.resize({
        width: input.width,
        height: input.height,
        fit: input.fit,
        withoutEnlargement: input.withoutEnlargement,
        background: input.background,
      })
    }
    if (format === 'jpeg')
      pipeline = pipeline.flatten({ background: input.background }).jpeg({ quality: input.quality, mozjpeg: true })
    else if (format === 'png') pipeline = pipeline.png({ compressionLevel: 9, adaptiveFiltering: true })
    else if (format === 'webp') pipeline = pipeline.webp({ quality: input.quality, effort: 4 })
    else pipeline = pipeline.avif({ quality: input.quality, effort: 2 })

    let out
    try {
      out = await pipeline.toBuffer({ resolveWithObject: true })
    } catch (err) {
      throw new HandlerInputError('image', `image could not be processed: ${(err as Error).message}`)
    }
    return binaryResult(ctx, `image/${format}`, out.data, {
      width: out.info.width,
      height: out.info.height,
      format,
      inputBytes: bytes.length,
      inputWidth: meta.width,
      inputHeight: meta.height,
    })
  },
})
