import type { FetchLike } from './wrap-fetch.js'

/** What a Tollgate proxy says of a payment, looked up by the payer and nonce its buyer signed. */
export interface PaymentLookup {
  /** verified | served | settling | settled | voided | failed */
  status: string
  /** true: served, so charged (settled or about to be); false: never charged there; null: the call has not ended yet */
  charged: boolean | null
  /** one sentence: what happened, e.g. that an answer was lost after the call was served and charged */
  message: string
  transaction: string | null
  network: string
  amount: string
  failureReason: string | null
}

/**
 * Asks a Tollgate seller what became of a payment when no answer came back (a
 * `PaidCallFailedError`): `GET <origin of url>/_tollgate/payments?payer=…&nonce=…`. Resolves to
 * null when that proxy never recorded the payment (it charged nothing); throws when the seller has
 * no such look-up (not a Tollgate proxy) or cannot be reached.
 *
 * @example
 *   try { await pay(url) } catch (err) {
 *     if (err instanceof PaidCallFailedError) console.log(await lookupPayment(fetch, url, err.payment))
 *   }
 */
export async function lookupPayment(
  fetchImpl: FetchLike,
  url: string | URL,
  p: { payer: string; nonce?: string },
  init: { signal?: AbortSignal } = {},
): Promise<PaymentLookup | null> {
  if (!p.nonce)
    throw new TypeError(
      'lookupPayment needs the payment nonce (PaymentInfo.nonce; the platform answers it since it signs with one)',
    )
  const origin = new URL(url).origin
  const res = await fetchImpl(
    `${origin}/_tollgate/payments?payer=${encodeURIComponent(p.payer)}&nonce=${encodeURIComponent(p.nonce)}`,
    { signal: init.signal },
  )
  const body = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined
  if (res.ok && body && typeof body.status === 'string') return body as unknown as PaymentLookup
  if (res.status === 404 && body?.code === 'not_found') return null
  throw new Error(
    `${origin} has no Tollgate payment look-up (HTTP ${res.status}${typeof body?.message === 'string' ? `: ${body.message}` : ''})`,
  )
}
