import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import { binaryResult } from '../_shared/binary-output.js'

/** Byte-mode capacity of a version 40 QR code at level L; higher levels hold less (the library reports it). */
const MAX_TEXT = 2953

interface Input {
  text: string
  format: 'png' | 'svg'
  errorCorrectionLevel: 'L' | 'M' | 'Q' | 'H'
  size: number
  margin: number
  darkColor: string
  lightColor: string
}

const COLOR = { type: 'string', pattern: '^#(?:[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$' }

export default defineHandler<Input>({
  slug: 'qr-code-generator',
  description:
    'Generate a QR code as PNG or SVG, with a chosen error-correction level, size, quiet-zone margin and colours.',
  inputSchema: {
    type: 'object',
    required: ['text'],
    additionalProperties: false,
    properties: {
      text: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_TEXT,
        description: `the content (URL, text, vCard...), at most ${MAX_TEXT} characters; UTF-8 bytes must fit the chosen error-correction level (L 2953, M 2331, Q 1663, H 1273 bytes)`,
      },
      format: {
        type: 'string',
        enum: ['png', 'svg'],
        default: 'png',
        description: 'png (image/png) or svg (image/svg+xml)',
      },
      errorCorrectionLevel: {
        type: 'string',
        enum: ['L', 'M', 'Q', 'H'],
        default: 'M',
        description: 'L ~7%, M ~15%, Q ~25%, H ~30% of the code can be damaged and still read',
      },
      size: {
        type: 'integer',
        minimum: 64,
        maximum: 2048,
        default: 512,
        description: 'width and height in pixels, 64–2048 (rounded to whole modules)',
      },
      margin: {
        type: 'integer',
        minimum: 0,
        maximum: 16,
        default: 4,
        description: 'quiet zone in modules around the code (4 is the standard)',
      },
      darkColor: { ...COLOR, default: '#000000', description: 'colour of dark modules, #RRGGBB or #RRGGBBAA' },
      lightColor: { ...COLOR, default: '#ffffff', description: 'background colour, #RRGGBB or #RRGGBBAA' },
    },
  },
  output: {
    contentType: 'image/png',
    description:
      'the QR code image (image/png or image/svg+xml); with Accept: application/json only, { contentType, base64, bytes }',
    schema: {
      type: 'object',
      description:
        'the JSON variant, answered when Accept asks for application/json only; otherwise the body is the raw bytes in contentType',
      properties: {
        contentType: { type: 'string' },
        base64: { type: 'string', description: 'the bytes, base64 (shortened in the example)' },
        bytes: { type: 'number' },
      },
      required: ['contentType', 'base64', 'bytes'],
    },
    example: {
      contentType: 'image/png',
      base64:
        'iVBORw0KGgoAAAANSUhEUgAAAQAAAAEACAYAAABccqhmAAAAAklEQVR4AewaftIAAAXQSURBVO3BUW4D2REEwawG73/lsn4Ngw9YjrkzUmdE+gNJKw2S1hokrTVIWmuQtNYgaa1B0lqDpLUGSWsNktYaJK01SFprkLTWIGmtQdJag6S1BklrDZLWGiStNUhaa5C01iBp…',
      bytes: 1559,
    },
  },
  example: {
    text: 'https://example.com',
    format: 'png',
    errorCorrectionLevel: 'M',
    size: 256,
    margin: 4,
    darkColor: '#000000',
    lightColor: '#ffffff',
  },
  async run(input, ctx) {
    const { default: QRCode } = await import('qrcode')
    const opts = {
      errorCorrectionLevel: input.errorCorrectionLevel,
      margin: input.margin,
      width: input.size,
      color: { dark: input.darkColor, light: input.lightColor },
    }
    try {
      if (input.format === 'svg') {
        const svg = await QRCode.toString(input.text, { ...opts, type: 'svg' })
        return binaryResult(ctx, 'image/svg+xml', new TextEncoder().encode(svg))
      }
      const png = await QRCode.toBuffer(input.text, { ...opts, type: 'png' })
      return binaryResult(ctx, 'image/png', png)
    } catch (err) {
      const message = (err as Error).message
      if (/too big/i.test(message))
        throw new HandlerInputError(
          'text',
          `text does not fit in a QR code at level ${input.errorCorrectionLevel}; shorten it or use a lower level`,
          413,
        )
      throw err
    }
  },
})
