import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

/** Characters of `text`, either direction. */
const MAX_TEXT = 1_000_000

interface Input {
  mode: 'encode' | 'decode'
  text: string
  /** encode only: how `text` becomes bytes */
  inputEncoding: 'utf8' | 'hex'
  urlSafe: boolean
  padding: boolean
  /** decode only: what to return */
  output: 'text' | 'hex' | 'binary'
}

export default defineHandler<Input>({
  slug: 'base64-encoder-decoder',
  description:
    'Encode UTF-8 text or hex bytes to base64 (standard or URL-safe, with or without padding), or decode base64 of either alphabet to text, hex or raw bytes.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['mode', 'text'],
    properties: {
      mode: {
        type: 'string',
        enum: ['encode', 'decode'],
        description: 'encode: bytes → base64; decode: base64 → bytes.',
      },
      text: {
        type: 'string',
        maxLength: MAX_TEXT,
        description: `Input (at most ${MAX_TEXT} characters): the data to encode, or the base64 to decode (whitespace ignored; either alphabet; padding optional).`,
      },
      inputEncoding: {
        type: 'string',
        enum: ['utf8', 'hex'],
        default: 'utf8',
        description: 'encode only: treat text as UTF-8 text, or as hex-encoded binary.',
      },
      urlSafe: {
        type: 'boolean',
        default: false,
        description: 'encode only: use the URL-safe alphabet (- and _ instead of + and /, RFC 4648 §5).',
      },
      padding: {
        type: 'boolean',
        default: true,
        description: 'encode only: keep trailing = padding. URL-safe output usually omits it.',
      },
      output: {
        type: 'string',
        enum: ['text', 'hex', 'binary'],
        default: 'text',
        description:
          'decode only: UTF-8 text (400 when the bytes are not valid UTF-8), hex, or the raw bytes as application/octet-stream (JSON with hex when the caller accepts JSON only).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description: 'encode: { base64, bytes }; decode: { text | hex, bytes }, or raw bytes for output=binary',
    schema: {
      type: 'object',
      properties: {
        base64: { type: 'string' },
        bytes: { type: 'integer' },
        urlSafe: { type: 'boolean' },
        padding: { type: 'boolean' },
        text: { type: 'string' },
        hex: { type: 'string' },
      },
      required: ['bytes'],
    },
    example: { base64: 'aGVsbG8gd29ybGQ=', bytes: 11, urlSafe: false, padding: true },
  },
  example: {
    mode: 'encode',
    text: 'hello world',
    inputEncoding: 'utf8',
    urlSafe: false,
    padding: true,
    output: 'text',
  },
  run(input, ctx) {
    if (input.mode === 'encode') {
      const bytes = input.inputEncoding === 'hex' ? parseHex(input.text) : Buffer.from(input.text, 'utf8')
      let base64 = bytes.toString(input.urlSafe ? 'base64url' : 'base64')
      // Node's base64url never pads and its base64 always pads; adjust to the requested form.
      if (input.urlSafe && input.padding) base64 += '='.repeat((4 - (base64.length % 4)) % 4)
      if (!input.urlSafe && !input.padding) base64 = base64.replace(/=+$/, '')
      return { body: { base64, bytes: bytes.length, urlSafe: input.urlSafe, padding: input.padding } }
    }

    const bytes = parseBase64(input.text)
    if (input.output === 'hex') return { body: { hex: bytes.toString('hex'), bytes: bytes.length } }
    if (input.output === 'binary') {
      const wantsBinary =
        ctx.accept.includes('application/octet-stream') || ctx.accept.includes('*/*') || ctx.accept === ''
      if (!wantsBinary) return { body: { hex: bytes.toString('hex'), bytes: bytes.length } }
      return { contentType: 'application/octet-stream', body: new Uint8Array(bytes) }
    }
    let text: string
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
    } catch {
      throw new HandlerInputError('output', 'decoded bytes are not valid UTF-8; ask for output "hex" or "binary"')
    }
    return { body: { text, bytes: bytes.length } }
  },
})

function parseHex(text: string): Buffer {
  const hex = text.replace(/\s+/g, '').replace(/^0x/i, '')
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex))
    throw new HandlerInputError('text', 'text is not valid hex (even number of 0-9a-f digits, optional 0x)')
  return Buffer.from(hex, 'hex')
}

/** Strict decode: Node's own decoder silently skips bad characters, so check the shape first. */
function parseBase64(text: string): Buffer {
  const clean = text.replace(/\s+/g, '')
  const body = clean.replace(/={1,2}$/, '')
  if (!/^[A-Za-z0-9+/_-]*$/.test(body))
    throw new HandlerInputError('text', 'text contains characters outside the base64 alphabets')
  if (/[+/]/.test(body) && /[-_]/.test(body))
    throw new HandlerInputError('text', 'text mixes the standard (+/) and URL-safe (-_) alphabets')
  if (body.length % 4 === 1) throw new HandlerInputError('text', 'text has an impossible length for base64')
  if (clean.length !== body.length && clean.length % 4 !== 0)
    throw new HandlerInputError('text', 'text has wrong padding')
  return Buffer.from(body, 'base64')
}
