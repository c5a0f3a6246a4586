import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import { base64MaxLength, decodeBase64Field } from '../_shared/base64-input.js'
import type { Worker as TesseractWorker } from 'tesseract.js'

const MAX_INPUT_BYTES = 10 * 1024 * 1024
const MAX_INPUT_PIXELS = 25_000_000
/** Longest side handed to Tesseract; larger images are scaled down (more costs time, not accuracy). */
const MAX_OCR_SIDE = 4000

interface Input {
  image: string
  pageSegmentation: 'auto' | 'single-block' | 'single-line' | 'single-word' | 'sparse'
  words: boolean
}

const PSM: Record<Input['pageSegmentation'], string> = {
  auto: '3',
  'single-block': '6',
  'single-line': '7',
  'single-word': '8',
  sparse: '11',
}

let worker: Promise<TesseractWorker> | undefined

/**
 * One Tesseract worker per pool worker, with the English LSTM model read from the
 * @tesseract.js-data/eng package on disk (langPath) and no cache writes: nothing is downloaded.
 */
function getWorker(): Promise<TesseractWorker> {
  worker ??= (async () => {
    const [{ createWorker, OEM }, { createRequire }, path] = await Promise.all([
      import('tesseract.js'),
      import('node:module'),
      import('node:path'),
    ])
    const require = createRequire(import.meta.url)
    const langPath = path.join(path.dirname(require.resolve('@tesseract.js-data/eng')), '4.0.0_best_int')
    return createWorker('eng', OEM.LSTM_ONLY, { langPath, gzip: true, cacheMethod: 'none' })
  })()
  worker.catch(() => {
    worker = undefined
  })
  return worker
}

/** Ends the cached Tesseract thread (tests and graceful shutdown); the next call starts a new one. */
export async function terminateOcrWorker(): Promise<void> {
  const w = worker
  worker = undefined
  if (w) await (await w).terminate()
}

export default defineHandler<Input>({
  slug: 'ocr-text-extraction',
  description:
    'Extract English text from an image (PNG, JPEG, WebP, AVIF, TIFF, GIF) with Tesseract OCR running locally: full text, mean confidence, and optionally each word with its confidence and bounding box.',
  timeoutMs: 90_000,
  inputSchema: {
    type: 'object',
    required: ['image'],
    additionalProperties: false,
    properties: {
      image: {
        type: 'string',
        minLength: 1,
        maxLength: base64MaxLength(MAX_INPUT_BYTES),
        description: `the image, base64 or a data: URL; at most ${MAX_INPUT_BYTES} bytes decoded and ${MAX_INPUT_PIXELS} pixels`,
      },
      pageSegmentation: {
        type: 'string',
        enum: Object.keys(PSM),
        default: 'auto',
        description:
          'layout analysis: auto (pages, columns), single-block, single-line, single-word, sparse (scattered text)',
      },
      words: {
        type: 'boolean',
        default: false,
        description: 'also return each word with confidence and bounding box (pixels of the image as sent)',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'text, confidence 0–100, lines count, and words [{ text, confidence, bbox: { x0, y0, x1, y1 } }] when asked',
    schema: {
      type: 'object',
      properties: {
        text: { type: 'string' },
        confidence: { type: 'number' },
        lines: { type: 'integer' },
        words: { type: 'array' },
      },
    },
    example: { text: '', confidence: 0, lines: 0 },
  },
  example: {
    image:
      'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==',
    pageSegmentation: 'auto',
    words: false,
  },
  async run(input) {
    const bytes = decodeBase64Field('image', input.image, MAX_INPUT_BYTES)
    const { default: sharp } = await import('sharp')
    let png: Buffer
    let scale = 1
    try {
      const meta = await sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS }).metadata()
      if (!meta.width || !meta.height) throw new HandlerInputError('image', 'image has no dimensions')
      if (meta.width * meta.height > MAX_INPUT_PIXELS)
        throw new HandlerInputError('image', `image exceeds ${MAX_INPUT_PIXELS} pixels`, 413)
      scale = Math.min(1, MAX_OCR_SIDE / Math.max(meta.width, meta.height))
      // greyscale PNG on white: Tesseract reads it directly, whatever the input format or alpha
      png = await sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS })
        .rotate()
        .resize(scale < 1 ? { width: Math.round(meta.width * scale) } : undefined)
        .flatten({ background: '#ffffff' })
        .greyscale()
        .png()
        .toBuffer()
    } catch (err) {
      if (err instanceof HandlerInputError) throw err
      if (/pixel limit/i.test((err as Error).message))
        throw new HandlerInputError('image', `image exceeds ${MAX_INPUT_PIXELS} pixels`, 413)
      throw new HandlerInputError('image', 'image is not a supported image (png, jpeg, webp, avif, tiff, gif)')
    }

    const w = await getWorker()
    await w.setParameters({ tessedit_pageseg_mode: PSM[input.pageSegmentation] as never })
    const { data } = await w.recognize(png, {}, { text: true, blocks: input.words })
    const text = data.text.replace(/\s+$/, '')
    const body: Record<string, unknown> = {
      text,
      confidence: Math.round(data.confidence * 10) / 10,
      lines: text ? text.split('\n').filter((l) => l.trim()).length : 0,
    }
    if (input.words) {
      const unscale = (v: number) => Math.round(v / scale)
      body.words = (data.blocks ?? []).flatMap((b) =>
        b.paragraphs.flatMap((p) =>
          p.lines.flatMap((l) =>
            l.words.map((wd) => ({
              text: wd.text,
              confidence: Math.round(wd.confidence * 10) / 10,
              bbox: {
                x0: unscale(wd.bbox.x0),
                y0: unscale(wd.bbox.y0),
                x1: unscale(wd.bbox.x1),
                y1: unscale(wd.bbox.y1),
              },
            })),
          ),
        ),
      )
    }
    return { body }
  },
})
