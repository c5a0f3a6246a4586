/**
 * Whether `key` can go in an Authorization header as it is: printable ASCII, no space or line
 * break (checked before use: fetch's error for a bad header value quotes "Bearer <key>" whole).
 * Its own module so the CLI can check a configured key without loading the signing code.
 */
export function isSendableKey(key: unknown): key is string {
  return typeof key === 'string' && /^[\x21-\x7e]+$/.test(key)
}
