import { HandlerInputError } from '../../src/pool/handler-contract.js'

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const BASE64URL = /^[A-Za-z0-9_-]*$/

/** Schema maxLength for a base64 field carrying at most `maxBytes` bytes (plus room for a data: URL prefix). */
export function base64MaxLength(maxBytes: number): number {
  return Math.ceil(maxBytes / 3) * 4 + 100
}

/**
 * Decodes a base64 (or base64url, or `data:<type>;base64,` URL) field strictly.
 * Throws HandlerInputError 400 for malformed or empty data and 413 above `maxBytes`.
 * @example decodeBase64Field('image', input.image, 10 * 1024 * 1024)
 */
export function decodeBase64Field(field: string, value: string, maxBytes: number): Buffer {
  let s = value.trim()
  const comma = s.startsWith('data:') ? s.indexOf(',') : -1
  if (comma >= 0) {
    if (!/;base64$/i.test(s.slice(0, comma)))
      throw new HandlerInputError(field, `${field} data URL must be base64-encoded`)
    s = s.slice(comma + 1)
  }
  s = s.replace(/\s+/g, '')
  if (s.length === 0) throw new HandlerInputError(field, `${field} is empty`)
  if (!(BASE64.test(s) || BASE64URL.test(s)) || s.length % 4 === 1)
    throw new HandlerInputError(field, `${field} is not valid base64`)
  const approx = Math.floor((s.length * 3) / 4)
  if (approx - 2 > maxBytes) throw new HandlerInputError(field, `${field} is larger than ${maxBytes} bytes`, 413)
  const buf = Buffer.from(s, BASE64.test(s) ? 'base64' : 'base64url')
  if (buf.length > maxBytes) throw new HandlerInputError(field, `${field} is larger than ${maxBytes} bytes`, 413)
  return buf
}
