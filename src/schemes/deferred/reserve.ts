/**
 * `reserve` of the `deferred` scheme: a deposit executed first, then the aggregation rules and the
 * escrow balance checked and reserved atomically in one Redis round trip (voucher-heads.ts), and a
 * voucher id new here checked against the escrow's collections; the hold `release()` gives back.
 */
import type { FastifyBaseLogger } from 'fastify'
import { CallRefusal } from '../../seam/types.js'
import { refuse } from '../../x402/reasons.js'
import type { Reservation, VerifyContext } from '../scheme.js'
import { retryShortly, type DeferredContext, type DeferredPayment } from './context.js'
import type { AccountRead } from './escrow-reader.js'
import type { HeldVoucher } from './voucher-heads.js'

/**
 * The hold on the voucher. A voucher written to Postgres with its payment (a record-first call,
 * or one whose record came back 'duplicate') is given back there too: removed while it is its
 * id's head, matched by digest, and the tuple reloaded from Postgres.
 */
function reservation(x: DeferredContext, held: HeldVoucher, log: FastifyBaseLogger): Reservation {
  let recorded = false
  let released = false
  return {
    settleFirst: false,
    recorded: () => {
      recorded = true
    },
    async release() {
      if (released) return
      released = true
      try {
        if (recorded && (await x.store.giveBack(held))) await x.heads.invalidate(held.tuple)
        else await x.heads.release(held)
      } catch (err) {
        log.error({ err: (err as Error).message, voucher: held.voucherId }, 'deferred voucher give-back failed')
      }
    },
  }
}

export async function reserveDeferred(
  x: DeferredContext,
  p: DeferredPayment,
  ctx: VerifyContext,
): Promise<Reservation | CallRefusal> {
  const v = p.voucher
  const reserve = (a: AccountRead) =>
    x.heads.reserve({
      voucher: v,
      digest: p.digest,
      amount: p.value,
      available: a.available,
      availableAtMs: a.atMs,
      nowMs: ctx.nowMs,
    })
  let r
  try {
    if (p.deposit) {
      // the deposit lands before the voucher counts (the spec's settlement step 1)
      const failed = await x.deposits.execute(p.deposit)
      if (failed) return CallRefusal.fromX402(failed)
    }
    r = await reserve(await x.reader.read(v.buyer, v.seller, v.asset, { fresh: p.deposit !== undefined }))
    // deposited since the balance was cached? one fresh read before refusing
    if (!r.ok && r.insufficient) r = await reserve(await x.reader.read(v.buyer, v.seller, v.asset, { fresh: true }))
  } catch (err) {
    ctx.log.error({ err: (err as Error).message }, 'deferred voucher could not be checked')
    return retryShortly('the escrow or the voucher store could not be read now; retry shortly')
  }
  // the catalogue's message (what to fix) with what was found
  if (!r.ok) return CallRefusal.fromX402(refuse(r.reason, r.message))
  const held = reservation(x, r.held, ctx.log)
  if (r.held.previousNonce === undefined) {
    // a voucher id new here may have been collected through another store: refuse rather than pay twice
    const collected = await x.reader.collected(v.buyer, v.seller, v.asset, v.id).catch(() => undefined)
    if (collected === undefined || collected > 0n) {
      await held.release()
      if (collected === undefined) return retryShortly('the escrow could not be read now; retry shortly')
      return CallRefusal.fromX402(
        refuse(
          'invalid_deferred_evm_payload_voucher_stale',
          `voucher ${v.id} was already collected in the escrow (${collected}); start a new voucher id`,
        ),
      )
    }
  }
  return held
}
