import { createHmac, timingSafeEqual } from 'node:crypto'

/** A webhook whose `Tollgate-Signature` does not verify: `reason` says which check failed. */
export class WebhookSignatureError extends Error {
  constructor(
    readonly reason: 'malformed_header' | 'timestamp_out_of_tolerance' | 'signature_mismatch' | 'bad_payload',
  ) {
    super(
      {
        malformed_header: 'the Tollgate-Signature header is missing or not "t=<seconds>,v1=<hex>"',
        timestamp_out_of_tolerance: 'the signature timestamp is outside the tolerance (a replay, or a clock off)',
        signature_mismatch: 'no v1 signature matches the payload and secret (wrong secret, or the body was changed)',
        bad_payload: 'the payload is not a JSON event',
      }[reason],
    )
    this.name = 'WebhookSignatureError'
  }
}

export interface WebhookEvent {
  id: string
  object: 'event'
  type: string
  /** unix seconds */
  created: number
  data: Record<string, unknown>
}

export interface VerifyWebhookOptions {
  /** the raw request body, exactly as received (not re-serialized JSON) */
  payload: string | Uint8Array
  /** the `Tollgate-Signature` header */
  header: string | string[] | undefined | null
  /** the endpoint's signing secret (`whsec_…`) */
  secret: string
  /** how far the signature's time may be from now, in seconds (default 300; 0: not checked) */
  toleranceSeconds?: number
  /** unix seconds to compare with (default: now) */
  now?: number
}

/**
 * Verifies a Tollgate webhook and returns its event: the header's `v1` must be the hex
 * HMAC-SHA256 of `<t>.<raw body>` under the endpoint's secret, and `t` within the tolerance.
 * Deduplicate on `event.id`: delivery is at least once.
 *
 * @example
 *   const event = verifyWebhook({ payload: rawBody, header: req.headers['tollgate-signature'], secret })
 */
export function verifyWebhook(o: VerifyWebhookOptions): WebhookEvent {
  const header = Array.isArray(o.header) ? o.header[0] : o.header
  let t: number | undefined
  const sigs: string[] = []
  for (const part of (header ?? '').split(',')) {
    const [k, v] = part.trim().split('=', 2)
    if (k === 't' && v && /^\d{1,12}$/.test(v)) t = Number(v)
    else if (k === 'v1' && v && /^[0-9a-f]{64}$/i.test(v)) sigs.push(v.toLowerCase())
  }
  if (t === undefined || sigs.length === 0) throw new WebhookSignatureError('malformed_header')
  const tolerance = o.toleranceSeconds ?? 300
  const now = o.now ?? Math.floor(Date.now() / 1000)
  if (tolerance > 0 && Math.abs(now - t) > tolerance) throw new WebhookSignatureError('timestamp_out_of_tolerance')
  const body = typeof o.payload === 'string' ? Buffer.from(o.payload, 'utf8') : Buffer.from(o.payload)
  const want = createHmac('sha256', o.secret).update(`${t}.`, 'utf8').update(body).digest()
  if (!sigs.some((s) => timingSafeEqual(want, Buffer.from(s, 'hex'))))
    throw new WebhookSignatureError('signature_mismatch')
  try {
    const event = JSON.parse(body.toString('utf8')) as WebhookEvent
    if (typeof event?.id !== 'string' || typeof event.type !== 'string') throw new Error('not an event')
    return event
  } catch {
    throw new WebhookSignatureError('bad_payload')
  }
}
