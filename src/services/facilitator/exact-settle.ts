/**
 * `POST /facilitator/settle` for `exact`: the checks of verify (./exact.ts), then one
 * `transferWithAuthorization` from the first free relayer (under the relayer lock the settlement
 * worker takes too), its receipt awaited. The authorization's `facilitator_settlements` row,
 * inserted before anything is sent, is the lock: a second settle of the same payload waits for the
 * first and answers its response; the same nonce with another signature is refused; the chain
 * refuses a used authorization anyway (gas is estimated first, so a used one costs nothing). The
 * row keeps the user whose key asked and the gas the transfer used.
 */
import { getAddress, type Hex } from 'viem'
import type { RelayerCallResult } from '../../chain/relayer-call.js'
import type { Payment } from '../../db/database.js'
import { transferCallData } from '../../schemes/exact/settlement.js'
import { refuse, type ReasonCode } from '../../x402/reasons.js'
import { relayedSend } from './relayed-send.js'
import { checkChainState, checkPayment, type CheckedPayment, type ExactCall, type ExactContext } from './exact.js'

export interface SettleAnswer {
  success: boolean
  errorReason?: string
  errorMessage?: string
  payer?: string
  transaction: string
  network: string
  amount?: string
  /** batch-settlement: the channel's state after a deposit or refund (`channelState`) */
  extra?: Record<string, unknown>
}

/** A failed settle; `status` is the HTTP status it is answered with. */
export class SettleRefusal {
  constructor(
    readonly status: number,
    readonly answer: SettleAnswer,
  ) {}
}

/** how long a second settle of an authorization waits for the first to finish */
const IN_FLIGHT_WAIT_MS = 45_000
/** tries for a free relayer before answering "busy" */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const failure = (network: string, reason: ReasonCode, message: string, payer?: string): SettleAnswer => ({
  success: false,
  errorReason: reason,
  errorMessage: message,
  ...(payer ? { payer } : {}),
  transaction: '',
  network,
})

const refusal = (status: number, network: string, reason: ReasonCode, message: string, payer?: string) =>
  new SettleRefusal(status, failure(network, reason, message, payer))

async function finish(
  x: ExactContext,
  id: string,
  status: 'settled' | 'failed',
  answer: SettleAnswer,
  gas: { used: bigint; price: bigint },
): Promise<SettleAnswer> {
  await x.db
    .updateTable('facilitator_settlements')
    .set({
      status,
      response: JSON.stringify(answer),
      updated_at: new Date(),
      gas_used: gas.used,
      effective_gas_price: gas.price,
    })
    .where('id', '=', id)
    .execute()
  return answer
}

/** the recorded outcome of a sent transfer once mined; undefined while it is not */
async function outcomeOf(x: ExactContext, id: string, hash: Hex, network: string): Promise<SettleAnswer | undefined> {
  const receipt = await x.chain.getTransactionReceipt({ hash }).catch(() => undefined)
  if (!receipt) return undefined
  const row = await x.db
    .selectFrom('facilitator_settlements')
    .select(['payer', 'value'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow()
  const payer = getAddress(row.payer)
  const gas = { used: receipt.gasUsed, price: receipt.effectiveGasPrice }
  if (receipt.status !== 'success') {
    const reverted = failure(network, 'invalid_transaction_state', `the transfer ${hash} reverted`, payer)
    return finish(x, id, 'failed', { ...reverted, transaction: hash }, gas)
  }
  return finish(x, id, 'settled', { success: true, payer, transaction: hash, network, amount: row.value }, gas)
}

/** The answer a row holds, once its settle is over (waits while another request sends it). */
async function answerOf(x: ExactContext, id: string, network: string): Promise<SettleAnswer | SettleRefusal> {
  const until = Date.now() + IN_FLIGHT_WAIT_MS
  for (;;) {
    const row = await x.db
      .selectFrom('facilitator_settlements')
      .select(['status', 'response', 'tx_hash'])
      .where('id', '=', id)
      .executeTakeFirst()
    if (!row)
      return refusal(409, network, 'unexpected_settle_error', 'a settle of this authorization was just refused; retry')
    if (row.status !== 'pending') return row.response as SettleAnswer
    // sent, by a request in flight or by one that died before recording the outcome: the chain says
    if (row.tx_hash) {
      const done = await outcomeOf(x, id, row.tx_hash as Hex, network)
      if (done) return done
    }
    if (Date.now() > until) {
      const tx = row.tx_hash ?? 'not sent yet'
      return refusal(
        503,
        network,
        'unexpected_settle_error',
        `a settle of this authorization is in flight (transaction ${tx}); retry shortly`,
      )
    }
    await sleep(250)
  }
}

/** the transfer of the checked authorization, sent once through the relayers (relayed-send.ts) */
function send(x: ExactContext, id: string, p: CheckedPayment, sent: { hash?: Hex }): Promise<RelayerCallResult | null> {
  const data = transferCallData({
    payer: p.auth.from,
    pay_to: p.auth.to,
    value: String(p.auth.value),
    valid_after: String(p.auth.validAfter),
    valid_before: String(p.auth.validBefore),
    nonce: p.auth.nonce,
    signature: p.signature,
  } as Payment)
  return relayedSend(x, id, { to: p.asset, data }, sent)
}

/** the row of a settle already asked for this authorization; its answer, or the refusal of another signature */
async function repeated(x: ExactContext, p: CheckedPayment, network: string): Promise<SettleAnswer | SettleRefusal> {
  const first = await x.db
    .selectFrom('facilitator_settlements')
    .select(['id', 'signature', 'pay_to', 'value'])
    .where('network', '=', network)
    .where('asset', '=', p.asset)
    .where('payer', '=', p.auth.from)
    .where('nonce', '=', p.auth.nonce)
    .executeTakeFirst()
  // the same authorization (same signature, recipient and value): the first settle's answer
  const same =
    first?.signature === p.signature.toLowerCase() && first.pay_to === p.auth.to && first.value === String(p.auth.value)
  if (first && same) return answerOf(x, first.id, network)
  const used = refuse('invalid_exact_evm_nonce_already_used')
  return refusal(200, network, used.reason, used.message, getAddress(p.auth.from))
}

/** the settle of a payment whose row this request holds */
async function sendHeld(
  x: ExactContext,
  id: string,
  p: CheckedPayment,
  network: string,
): Promise<SettleAnswer | SettleRefusal> {
  const payer = getAddress(p.auth.from)
  const release = () => x.db.deleteFrom('facilitator_settlements').where('id', '=', id).execute()
  const sent: { hash?: Hex } = {}
  try {
    const state = await checkChainState(x, p)
    if (state) {
      await release()
      return refusal(200, network, state.reason, state.message, payer)
    }
    const done = await send(x, id, p, sent)
    if (!done) {
      await release()
      return refusal(503, network, 'unexpected_settle_error', 'every relayer is busy; retry shortly', payer)
    }
    await x.db.updateTable('facilitator_settlements').set({ tx_hash: done.hash }).where('id', '=', id).execute()
    // relayerCall awaited the receipt
    return (await outcomeOf(x, id, done.hash, network)) ?? (await answerOf(x, id, network))
  } catch (err) {
    x.log.warn({ err: (err as Error).message }, 'facilitator settle failed')
    // nothing sent: the authorization is free to settle again; sent: the chain decides, a repeat finds it
    if (!sent.hash) {
      await release()
      const why = 'the transfer could not be sent (the chain refused it or could not be reached)'
      return refusal(200, network, 'unexpected_settle_error', why, payer)
    }
    const why = `transaction ${sent.hash} was sent and is not confirmed yet; retry to get its outcome`
    return refusal(503, network, 'unexpected_settle_error', why, payer)
  }
}

export async function settleExact(
  x: ExactContext,
  call: ExactCall,
  userId: string,
  nowMs: number,
): Promise<SettleAnswer | SettleRefusal> {
  const network = call.requirements.network
  const p = await checkPayment(x, call, nowMs)
  if ('ok' in p) return refusal(200, network, p.reason, p.message)
  const inserted = await x.db
    .insertInto('facilitator_settlements')
    .values({
      user_id: userId,
      scheme: 'exact',
      network,
      asset: p.asset,
      payer: p.auth.from,
      nonce: p.auth.nonce,
      pay_to: p.auth.to,
      value: p.auth.value,
      signature: p.signature.toLowerCase(),
    })
    .onConflict((oc) => oc.columns(['network', 'asset', 'payer', 'nonce']).doNothing())
    .returning('id')
    .executeTakeFirst()
  return inserted ? sendHeld(x, inserted.id, p, network) : repeated(x, p, network)
}
