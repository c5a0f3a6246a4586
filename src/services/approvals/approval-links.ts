import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * Signed approval links: what the `approval.requested` webhook carries so the owner can decide
 * from a phone without logging in. The token is `<expiry unix seconds>.<hex HMAC-SHA256>` over the
 * approval id and that expiry, keyed by a key derived from the server's master key (never the
 * master key itself). It expires with the approval's decision deadline; the decision itself is
 * still checked against the row (a link cannot decide twice, nor after the deadline).
 */
export function linkKey(masterKey: Buffer): Buffer {
  return createHmac('sha256', masterKey).update('tollgate approval links v1').digest()
}

function mac(key: Buffer, id: string, exp: number): string {
  return createHmac('sha256', key).update(`approval:${id}:${exp}`).digest('hex')
}

/** The link to the confirm page of approval `id`, valid until `expiresAt`. */
export function approvalLink(key: Buffer, baseUrl: string, id: string, expiresAt: Date): string {
  const exp = Math.floor(expiresAt.getTime() / 1000)
  const u = new URL(`/v1/approvals/${encodeURIComponent(id)}/decide`, baseUrl)
  u.searchParams.set('token', `${exp}.${mac(key, id, exp)}`)
  return u.href
}

/** Whether `token` is a link token for approval `id` that has not expired at `nowMs`. */
export function verifyLinkToken(key: Buffer, id: string, token: unknown, nowMs: number): boolean {
  if (typeof token !== 'string') return false
  const m = /^(\d{1,12})\.([0-9a-f]{64})$/.exec(token)
  if (!m) return false
  const exp = Number(m[1])
  if (exp * 1000 <= nowMs) return false
  const want = Buffer.from(mac(key, id, exp), 'hex')
  return timingSafeEqual(want, Buffer.from(m[2]!, 'hex'))
}
