/**
 * One batch-settlement transaction of the facilitator (a deposit, a claim, a settle, a refund),
 * sent exactly once: its `facilitator_settlements` row, inserted before anything is sent under a
 * key unique to what it does, is the lock. The request that inserted it sends the transaction from
 * the first free relayer (gas estimated first: one that would revert is refused before anything is
 * sent, and the row released), records the hash before the broadcast and decides from the receipt;
 * a repeat of the same action (or one arriving meanwhile) gets the first answer, waiting for it
 * while it is in flight; a row a dead request left is finished from the chain by the next repeat.
 */
import type { Hex, TransactionReceipt } from 'viem'
import type { FacilitatorBatchAction } from '../../db/facilitator-settlements-table.js'
import { refuse, type ReasonCode } from '../../x402/reasons.js'
import type { BatchFacilitatorContext } from './batch.js'
import { SettleRefusal, type SettleAnswer } from './exact-settle.js'
import { relayedSend } from './relayed-send.js'

/** how long a repeat waits for the first request's transaction */
const IN_FLIGHT_WAIT_MS = 45_000
/** tries for a free relayer before answering "busy" */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** What the row records; (network, asset, payer, nonce) is unique. */
interface BatchRowKey {
  action: FacilitatorBatchAction
  network: string
  /** lower-case token */
  asset: string
  /** lower-case: the channel's payer (deposit, refund) or the receiver (claim, settle) */
  payer: string
  payTo: string
  value: bigint
  /** the action's unique key */
  nonce: string
  /** what authorizes it (a repeat with another one is refused): a signature, or '' */
  signature: string
}

export interface BatchSend {
  key: BatchRowKey
  tx: { to: Hex; data: Hex }
  /** the reason of a transaction that would revert (estimated before sending) and of one that reverted */
  simulationFailed: ReasonCode
  transactionFailed: ReasonCode
  /** the answer of a mined, successful transaction */
  succeeded: (receipt: TransactionReceipt) => Promise<SettleAnswer>
  /** held: before sending (the row is this request's); a refusal releases the row, nothing sent */
  beforeSend?: () => Promise<SettleRefusal | undefined>
}

export const batchFailure = (network: string, reason: ReasonCode, detail?: string, payer?: string): SettleAnswer => {
  const r = refuse(reason, detail)
  return {
    success: false,
    errorReason: r.reason,
    errorMessage: r.message,
    ...(payer ? { payer } : {}),
    transaction: '',
    network,
  }
}

async function finish(x: BatchFacilitatorContext, id: string, answer: SettleAnswer, receipt: TransactionReceipt) {
  await x.db
    .updateTable('facilitator_settlements')
    .set({
      status: answer.success ? 'settled' : 'failed',
      response: JSON.stringify(answer),
      updated_at: new Date(),
      gas_used: receipt.gasUsed,
      effective_gas_price: receipt.effectiveGasPrice,
    })
    .where('id', '=', id)
    .execute()
  return answer
}

/** the outcome of a sent transaction once mined (recorded); undefined while it is not */
async function outcomeOf(x: BatchFacilitatorContext, id: string, hash: Hex, s: BatchSend) {
  const receipt = await x.chain.getTransactionReceipt({ hash }).catch(() => undefined)
  if (!receipt) return undefined
  if (receipt.status !== 'success') {
    const failed = batchFailure(s.key.network, s.transactionFailed, `transaction ${hash} reverted`)
    return finish(x, id, { ...failed, transaction: hash }, receipt)
  }
  return finish(x, id, await s.succeeded(receipt), receipt)
}

/** The answer a row holds once its action is over (waits while another request sends it). */
async function answerOf(x: BatchFacilitatorContext, id: string, s: BatchSend): Promise<SettleAnswer | SettleRefusal> {
  const network = s.key.network
  const until = Date.now() + IN_FLIGHT_WAIT_MS
  for (;;) {
    const row = await x.db
      .selectFrom('facilitator_settlements')
      .select(['status', 'response', 'tx_hash'])
      .where('id', '=', id)
      .executeTakeFirst()
    if (!row)
      return new SettleRefusal(
        409,
        batchFailure(network, 'unexpected_settle_error', 'the first request was just refused; retry'),
      )
    if (row.status !== 'pending') return row.response as SettleAnswer
    if (row.tx_hash) {
      const done = await outcomeOf(x, id, row.tx_hash as Hex, s)
      if (done) return done
    }
    if (Date.now() > until) {
      const why = `it is in flight (transaction ${row.tx_hash ?? 'not sent yet'}); retry shortly`
      return new SettleRefusal(503, batchFailure(network, 'unexpected_settle_error', why))
    }
    await sleep(250)
  }
}

/** the action of a row this request holds */
async function sendHeld(x: BatchFacilitatorContext, id: string, s: BatchSend): Promise<SettleAnswer | SettleRefusal> {
  const network = s.key.network
  const release = () => x.db.deleteFrom('facilitator_settlements').where('id', '=', id).execute()
  const sent: { hash?: Hex } = {}
  try {
    const refused = await s.beforeSend?.()
    if (refused) {
      await release()
      return refused
    }
    const done = await relayedSend(x, id, s.tx, sent)
    if (!done) {
      await release()
      return new SettleRefusal(
        503,
        batchFailure(network, 'unexpected_settle_error', 'every relayer is busy; retry shortly'),
      )
    }
    await x.db.updateTable('facilitator_settlements').set({ tx_hash: done.hash }).where('id', '=', id).execute()
    return (await outcomeOf(x, id, done.hash, s)) ?? (await answerOf(x, id, s))
  } catch (err) {
    const msg = ((err as Error).message.split('\n')[0] ?? '').slice(0, 300)
    x.log.warn({ err: msg, action: s.key.action }, 'facilitator batch transaction failed')
    if (!sent.hash) {
      // nothing sent (the gas estimate reverted, or the chain could not be reached): free to retry
      await release()
      return new SettleRefusal(200, batchFailure(network, s.simulationFailed, msg))
    }
    const why = `transaction ${sent.hash} was sent and is not confirmed yet; retry to get its outcome`
    return new SettleRefusal(503, batchFailure(network, 'unexpected_settle_error', why))
  }
}

/** The answer of the same action asked before by `userId` (a repeat), undefined when none was. */
export async function firstAnswer(
  x: BatchFacilitatorContext,
  userId: string,
  s: BatchSend,
): Promise<SettleAnswer | SettleRefusal | undefined> {
  const k = s.key
  const first = await x.db
    .selectFrom('facilitator_settlements')
    .select(['id', 'signature', 'user_id'])
    .where('network', '=', k.network)
    .where('asset', '=', k.asset)
    .where('payer', '=', k.payer)
    .where('nonce', '=', k.nonce)
    .executeTakeFirst()
  if (first && first.signature === k.signature && first.user_id === userId) return answerOf(x, first.id, s)
  return undefined
}

/**
 * The action sent once for `userId` (whose key asked: the gas is theirs): its answer, the first
 * answer of the same action, or the refusal of the same key with another authorization.
 */
export async function sendOnce(
  x: BatchFacilitatorContext,
  userId: string,
  s: BatchSend,
): Promise<SettleAnswer | SettleRefusal> {
  const k = s.key
  const inserted = await x.db
    .insertInto('facilitator_settlements')
    .values({
      user_id: userId,
      scheme: 'batch-settlement',
      action: k.action,
      network: k.network,
      asset: k.asset,
      payer: k.payer,
      nonce: k.nonce,
      pay_to: k.payTo,
      value: k.value,
      signature: k.signature,
    })
    .onConflict((oc) => oc.columns(['network', 'asset', 'payer', 'nonce']).doNothing())
    .returning('id')
    .executeTakeFirst()
  if (inserted) return sendHeld(x, inserted.id, s)
  const first = await firstAnswer(x, userId, s)
  if (first) return first
  return new SettleRefusal(
    200,
    batchFailure(
      k.network,
      'unexpected_settle_error',
      `this ${k.action} was already asked for (${k.nonce.slice(0, 80)})`,
    ),
  )
}
