import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import { binaryResult } from '../_shared/binary-output.js'

/** Offered symbologies (bwip-js encoder names); bwip-js knows 100+, these are the common ones. */
const SYMBOLOGIES = [
  'code128',
  'gs1-128',
  'ean13',
  'ean8',
  'upca',
  'upce',
  'isbn',
  'code39',
  'code93',
  'itf14',
  'interleaved2of5',
  'rationalizedCodabar',
  'qrcode',
  'datamatrix',
  'pdf417',
  'azteccode',
] as const
const TWO_D = new Set(['qrcode', 'datamatrix', 'pdf417', 'azteccode'])
const MAX_TEXT = 512

interface Input {
  type: (typeof SYMBOLOGIES)[number]
  text: string
  format: 'png' | 'svg'
  scale: number
  height: number
  includeText: boolean
  rotate: 'N' | 'R' | 'L' | 'I'
  barColor: string
  backgroundColor?: string
}

const HEX = '^[0-9a-fA-F]{6}$'

export default defineHandler<Input>({
  slug: 'barcode-generator',
  description:
    'Generate 1D and 2D barcodes (Code 128, GS1-128, EAN-13/8, UPC-A/E, ISBN, Code 39/93, ITF-14, Codabar, QR, Data Matrix, PDF417, Aztec) as PNG or SVG with bwip-js; check digits are computed or verified.',
  inputSchema: {
    type: 'object',
    required: ['type', 'text'],
    additionalProperties: false,
    properties: {
      type: { type: 'string', enum: [...SYMBOLOGIES], description: 'symbology' },
      text: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_TEXT,
        description: `data to encode, at most ${MAX_TEXT} characters; EAN/UPC accept the digits with or without the check digit; GS1-128 takes AIs in parentheses, e.g. (01)09521234543213`,
      },
      format: {
        type: 'string',
        enum: ['png', 'svg'],
        default: 'png',
        description: 'png (image/png) or svg (image/svg+xml)',
      },
      scale: { type: 'integer', minimum: 1, maximum: 6, default: 3, description: 'pixels per module (1–6)' },
      height: {
        type: 'number',
        minimum: 2,
        maximum: 50,
        default: 15,
        description: 'bar height in millimetres for 1D symbologies (2–50); ignored for 2D',
      },
      includeText: { type: 'boolean', default: true, description: 'print the human-readable text under 1D barcodes' },
      rotate: {
        type: 'string',
        enum: ['N', 'R', 'L', 'I'],
        default: 'N',
        description: 'N normal, R 90° clockwise, L 90° counter-clockwise, I inverted',
      },
      barColor: { type: 'string', pattern: HEX, default: '000000', description: 'bar colour as RRGGBB hex (no #)' },
      backgroundColor: {
        type: 'string',
        pattern: HEX,
        description: 'background colour as RRGGBB hex; transparent when omitted',
      },
    },
  },
  output: {
    contentType: 'image/png',
    description:
      'the barcode image (image/png or image/svg+xml); with Accept: application/json only, { contentType, base64, bytes }',
    schema: {
      type: 'object',
      description:
        'the JSON variant, answered when Accept asks for application/json only; otherwise the body is the raw bytes in contentType',
      properties: {
        contentType: { type: 'string' },
        base64: { type: 'string', description: 'the bytes, base64 (shortened in the example)' },
        bytes: { type: 'integer' },
      },
      required: ['contentType', 'base64', 'bytes'],
    },
    example: {
      contentType: 'image/png',
      base64:
        'iVBORw0KGgoAAAANSUhEUgAAAR4AAACYCAYAAAAyV4anAAAAHnRFWHRTb2Z0d2FyZQBid2lwLWpzLm1ldGFmbG9vci5jb21Tnbi0AAAXy0lEQVR4nO2ce8w1Z1XFt61UBPohqZGChQaogBcQoqQhiEobRMSiIASBBFMNUcMtRrFUgxBQ8JZ4RyqBiHjlIlRrBaToH41g…',
      bytes: 6190,
    },
  },
  example: {
    type: 'ean13',
    text: '590123412345',
    format: 'png',
    scale: 3,
    height: 15,
    includeText: true,
    rotate: 'N',
    barColor: '000000',
  },
  async run(input, ctx) {
    const { default: bwipjs } = await import('bwip-js')
    const opts = {
      bcid: input.type,
      text: input.text,
      scale: input.scale,
      rotate: input.rotate,
      barcolor: input.barColor,
      ...(input.backgroundColor ? { backgroundcolor: input.backgroundColor } : {}),
      ...(TWO_D.has(input.type)
        ? {}
        : { height: input.height, includetext: input.includeText, textxalign: 'center' as const }),
      ...(input.type === 'gs1-128' ? { parsefnc: true } : {}),
    }
    try {
      if (input.format === 'svg')
        return binaryResult(ctx, 'image/svg+xml', new TextEncoder().encode(bwipjs.toSVG(opts)))
      return binaryResult(ctx, 'image/png', await bwipjs.toBuffer(opts))
    } catch (err) {
      // BWIPP reports data problems as "bwipp.<code>: <message>" (bad length, bad check digit, bad characters)
      const m = /^bwipp\.(\w+)(?:#\d+)?: (.*)$/s.exec((err as Error).message)
      if (m) throw new HandlerInputError('text', `text cannot be encoded as ${input.type}: ${m[2]}`)
      throw err
    }
  },
})
