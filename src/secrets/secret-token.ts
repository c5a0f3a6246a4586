import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
/** 32 random bytes in base62 always fit in 43 characters. */
export const SECRET_BODY_LENGTH = 43

/** 32 random bytes (256 bits) as 43 base62 characters: copy-paste safe, no `-`/`_` to break a double-click. */
export function randomBase62(bytes = 32): string {
  let n = BigInt('0x' + randomBytes(bytes).toString('hex'))
  let out = ''
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)] + out
    n /= 62n
  }
  return out.padStart(SECRET_BODY_LENGTH, '0')
}

/**
 * A new bearer secret with its stored parts. High-entropy secrets need no slow hash: SHA-256 is
 * enough, because guessing a 256-bit preimage is the attack.
 *
 * @example
 *   const { secret, hash, prefix, last4 } = newSecret('sk_test_') // show `secret` once, store the rest
 */
export function newSecret(prefix: string): { secret: string; hash: string; prefix: string; last4: string } {
  const body = randomBase62()
  const secret = prefix + body
  return { secret, hash: hashSecret(secret), prefix: prefix + body.slice(0, 4), last4: body.slice(-4) }
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex')
}

/** Constant-time equality of two hex digests. */
export function digestsEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex')
  const y = Buffer.from(b, 'hex')
  return x.length === y.length && timingSafeEqual(x, y)
}

/** Does `s` have the exact shape of a secret with this prefix (before any database look-up)? */
export function isWellFormed(s: string, prefix: string): boolean {
  return (
    s.startsWith(prefix) &&
    s.length === prefix.length + SECRET_BODY_LENGTH &&
    /^[0-9A-Za-z]+$/.test(s.slice(prefix.length))
  )
}
