import type { Readable } from 'node:stream'
import type { FastifyBaseLogger } from 'fastify'
import { appError } from '../../errors.js'
import type { AccessGrantWrite, IdRelease, LedgerWriter, NewProxyPayment } from '../../ledger/ledger-writer.js'
import type { SettleNow } from '../../ledger/settle-now.js'
import type { Reservation, VerifiedPayment } from '../../schemes/scheme.js'
import { settlementReasonCode } from '../../x402/reasons.js'
import type { CallResult, CallTarget } from './call.js'
import { chargeOf } from './charge.js'
import type { Dispatched, EndpointAnswer } from './dispatch.js'
import { recordPayment } from './record.js'
import { CallRefusal } from './refusal.js'

export interface FinishInput {
  target: CallTarget
  row: NewProxyPayment
  payment: VerifiedPayment
  held: Reservation
  /** settle before answering: a `sync` endpoint or a blocked payer */
  settleFirst: boolean
  dispatched: Dispatched
  log: FastifyBaseLogger
  /**
   * The call's payment-identifier release, written with the outcome (payment-id.ts `foldedRelease`),
   * given the answer to keep; not for a call settled before answering (a failed settlement withholds
   * the answer after the outcome is written), whose id is released when the call ends.
   */
  idRelease?: (answer: EndpointAnswer | undefined) => IdRelease
  /** a served call's access grant, written with its outcome (same rule as `idRelease`) */
  grant?: AccessGrantWrite
}

const refused = (refusal: CallRefusal): CallResult => ({ kind: 'refused', refusal })

/**
 * Stage 7: the call's outcome, durable before anything is answered.
 *
 * - Failed (handler error, status >= 400, upstream unreachable): the payment is voided — a call
 *   recorded once is written `voided`, a record-first call's `verified` row moves to `voided` —
 *   and the reservation is given back. Nothing is charged.
 * - Answered < 400: a call recorded once is written `served`; a record-first call's row moves to
 *   `served`. A sync endpoint (or a blocked payer) is settled now; a payment that fails on chain
 *   withholds the answer (402), as the reference middleware does, since nothing was charged.
 */
export function createFinisher(opts: FinisherOptions) {
  return (f: FinishInput): Promise<CallResult> => finish(opts, f)
}

export interface FinisherOptions {
  ledger: LedgerWriter
  sync?: SettleNow
  uptoLlmRatePer1kTokens?: bigint
}

/**
 * A usage-priced (`upto`) call that answered: its actual charge (charge.ts) becomes the row's
 * value and the rest of the reservation goes back. A charge of 0 voids the payment (nothing to
 * settle); the answer still leaves, with a receipt for 0.
 */
async function usage(opts: FinisherOptions, f: FinishInput, answer: EndpointAnswer): Promise<bigint> {
  const max = f.payment.value
  const c = chargeOf(f.target, answer, max, opts.uptoLlmRatePer1kTokens ?? 2000n)
  f.row.value = c.value
  await f.held.charged?.(c.value)
  if (c.capped) {
    f.log.warn({ id: f.row.id, reported: c.capped.reported, max: max.toString() }, 'upto charge capped at the maximum')
    // recorded after the payment row (a hosted call's row is written in finish)
    queueMicrotask(() => {
      void opts.ledger
        .event(f.row.id, 'charge_capped', 'the reported charge was above the maximum or unreadable', {
          reported: c.capped!.reported,
          charged: c.value.toString(),
        })
        .catch((err) => f.log.error({ err: (err as Error).message, id: f.row.id }, 'charge_capped event failed'))
    })
  }
  return c.value
}

async function voided(
  { ledger }: FinisherOptions,
  f: FinishInput,
  d: Extract<Dispatched, { ok: false }>,
): Promise<CallResult> {
  const release = f.idRelease?.(undefined)
  if (!f.target.recordFirst) await recordPayment(ledger, f.row, 'voided', f.held, f.log, d.reason, { release })
  else
    await ledger
      .finish(f.row.id, 'voided', d.reason, undefined, { release })
      .catch((err) => f.log.error({ err: (err as Error).message, id: f.row.id }, 'void failed'))
  await f.held.release()
  return d.answer ? { kind: 'answer', ...d.answer } : refused(d.refusal!)
}

/** Records `served` (an upto call charged 0: `voided`, nothing to settle); a refusal when the payment cannot be kept. */
async function served(
  { ledger }: FinisherOptions,
  f: FinishInput,
  charged: bigint | undefined,
  answer: EndpointAnswer,
): Promise<CallRefusal | undefined> {
  const to = charged === 0n ? 'voided' : 'served'
  const reason = charged === 0n ? 'nothing_charged' : undefined
  const extras = { release: f.idRelease?.(answer), grant: f.grant }
  if (!f.target.recordFirst) {
    const r = await recordPayment(ledger, f.row, to, f.held, f.log, reason, extras)
    if (r === true && to === 'voided') await f.held.release()
    if (r === true) return undefined
    // 'id_used' comes only of a claim, and an outcome's record carries none: fail closed all the same
    return r === 'id_used' ? CallRefusal.error(appError('payment_not_recorded')) : r
  }
  try {
    // false: the payment is no longer `verified` (the sweep voided it as a call that never
    // ended, and gave its credit back): it will never be settled, so the answer must not leave as a paid one
    if (await ledger.finish(f.row.id, to, reason, charged, extras)) {
      if (to === 'voided') await f.held.release()
      return undefined
    }
    f.log.warn({ id: f.row.id }, 'served record found the payment already voided')
  } catch (err) {
    // the payment stays `verified`; the recovery sweep voids it (and gives the credit back)
    f.log.error({ err: (err as Error).message, id: f.row.id }, 'served record failed')
  }
  return CallRefusal.error(appError('payment_not_recorded'))
}

/** Settles now when asked; the transaction hash, '' when left to the batch, or a refusal. */
async function settle(opts: FinisherOptions, f: FinishInput): Promise<string | CallRefusal> {
  if (!f.settleFirst || !opts.sync) return ''
  let r: Awaited<ReturnType<SettleNow['settleNow']>>
  try {
    r = await opts.sync.settleNow(f.row.id)
  } catch (err) {
    // the chain or its RPC failed mid-way: the payment is served and the batch worker settles it
    f.log.warn({ id: f.row.id, err: (err as Error).message }, 'sync settlement interrupted; left to the batch')
    return ''
  }
  if (r.ok) return r.txHash
  f.log.warn({ id: f.row.id, reason: r.reason }, 'sync settlement failed')
  if (!r.final) return ''
  return CallRefusal.payment(
    settlementReasonCode(r.reason),
    `the payment could not be settled (${r.reason}), so the response was withheld; nothing was charged`,
  )
}

async function finish(opts: FinisherOptions, f: FinishInput): Promise<CallResult> {
  const d = f.dispatched
  if (!d.ok) return voided(opts, f, d)
  const charged = f.payment.usageBased ? await usage(opts, f, d.answer) : undefined
  const notKept = await served(opts, f, charged, d.answer)
  const transaction = notKept ?? (charged === 0n ? '' : await settle(opts, f))
  if (transaction instanceof CallRefusal) {
    discard(d.answer)
    return refused(transaction)
  }
  // batch-settlement: the channel follows the committed row; its receipt says what moved
  const part =
    f.held.served && charged !== 0n ? await f.held.served(charged ?? f.payment.value, !f.target.recordFirst) : {}
  return {
    kind: 'answer',
    ...d.answer,
    receipt: {
      paymentId: f.row.id,
      payer: f.payment.payer,
      version: f.payment.version,
      transaction,
      ...(charged === undefined ? {} : { amount: charged.toString() }),
      ...part,
    },
  }
}

/** An upstream's streamed body that will not be sent is destroyed (with a listener: its 'error' would crash the process). */
function discard(answer: EndpointAnswer): void {
  const body = answer.body as Readable
  if (typeof body === 'object' && typeof body.destroy === 'function' && !Buffer.isBuffer(body)) {
    body.on('error', () => {})
    body.destroy()
  }
}
