import type { FastifyBaseLogger } from 'fastify'
import { appError } from '../../errors.js'
import type { FixedWindowLimiter } from '../../limits/fixed-window.js'
import type { Reservation } from '../../schemes/scheme.js'
import type { CallTarget, ResolvedCall } from './call.js'
import type { CheckedPayment } from './check-payment.js'
import { CallRefusal } from './refusal.js'

/**
 * Stage 4: the payment's reservation (its scheme's replay guard and the payer's credit), then the
 * endpoint's rate limit. Returns one reservation with one `release()`, or a refusal with nothing held.
 *
 * The seller's per-endpoint limit (or a hosted handler's own) is shared by every proxy process.
 * Only payments that passed every check count, so unfunded or forged calls cannot use up a seller's
 * budget; over the limit the reservation is released, nonce included, so the same payment can retry.
 */
export function createReserver(opts: { limiter: FixedWindowLimiter; settleFirstAvailable: boolean }) {
  return async function reserve(
    call: ResolvedCall,
    checked: CheckedPayment,
    target: CallTarget,
    log: FastifyBaseLogger,
    nowMs: number,
  ): Promise<Reservation | CallRefusal> {
    const held = await checked.scheme.reserve(checked.payment, { nowMs, callMs: target.timeoutMs, log })
    if (held instanceof CallRefusal) return held
    // a blocked payer gets no more unsettled credit: without sync settlement here it cannot be served
    if (held.settleFirst && !opts.settleFirstAvailable) {
      await held.release()
      return CallRefusal.payment('payer_blocked')
    }
    const limited = await rateLimit(opts.limiter, call, target, log)
    if (limited) await held.release()
    return limited ?? held
  }
}

/**
 * The endpoint's rate limit (the seller's, or a hosted handler's own), shared by every proxy
 * process: undefined under it, else the refusal. Calls served by sign-in-with-x count too.
 */
export async function rateLimit(
  limiter: FixedWindowLimiter,
  call: ResolvedCall,
  target: CallTarget,
  log: FastifyBaseLogger,
): Promise<CallRefusal | undefined> {
  const limit = target.rateLimit
  if (!limit) return undefined
  let hit
  try {
    hit = await limiter.hit('endpoint', call.entry.id, { max: limit.requests, windowSeconds: limit.perSeconds })
  } catch (err) {
    log.error({ err: (err as Error).message }, 'rate limiter unavailable')
    return CallRefusal.error(appError('payment_not_recorded'))
  }
  if (!hit.limited) return undefined
  return CallRefusal.error(
    appError(
      'rate_limited',
      { retryAfter: hit.resetSeconds },
      {
        headers: {
          'retry-after': String(hit.resetSeconds),
          'ratelimit-policy': `${limit.requests};w=${limit.perSeconds}`,
        },
      },
    ),
  )
}
