// One attempt at a claimed USDC withdrawal: the stored authorization, relayed; never a second one.
// What the chain already knows of the authorization (used, canceled, expired) is decided first.
import type { Hex, TransactionReceipt } from 'viem'
import type { Withdrawal, WithdrawalStatus } from '../../db/withdrawals-tables.js'
import { reasonFromRevert, transferCallData } from '../settlement/chain-ops.js'
import { relayVia } from '../wallets/authorization-sender.js'
import {
  authorizationOnChain,
  authorizationPayment,
  relayAuthorization,
  usedIn,
} from '../wallets/transfer-authorization.js'
import { withRelayer } from './chain.js'
import { AttemptFailed, type WithdrawalContext } from './context.js'
import { confirm, fail } from './finish.js'
import { event, update } from './rows.js'

const asPayment = (w: Withdrawal) =>
  authorizationPayment({
    payer: w.from_address,
    payTo: w.to_address,
    value: w.amount,
    validAfter: w.valid_after,
    validBefore: w.valid_before,
    nonce: w.auth_nonce,
    signature: w.signature,
  })

const landed = (ctx: WithdrawalContext, w: Withdrawal, receipt: TransactionReceipt) =>
  usedIn(ctx.usdc, receipt, w.from_address, w.auth_nonce!)

/** The withdrawal's end when the chain decides it already (sent, canceled, expired); undefined when it is still to send. */
async function decided(ctx: WithdrawalContext, w: Withdrawal): Promise<WithdrawalStatus | undefined> {
  const { chain } = ctx
  if (w.tx_hash) {
    const receipt = await chain.getTransactionReceipt({ hash: w.tx_hash as Hex }).catch(() => null)
    if (receipt && landed(ctx, w, receipt)) return confirm(ctx, w, w.tx_hash, receipt.blockNumber)
  }
  const onChain = await authorizationOnChain(chain, ctx.usdc, asPayment(w), ctx.config.settlement.logChunkBlocks)
  if (onChain.kind === 'used') return confirm(ctx, w, onChain.txHash, onChain.blockNumber)
  if (onChain.kind === 'canceled') return fail(ctx, w, 'the authorization was canceled')
  if (onChain.kind === 'unknown')
    throw new AttemptFailed('the authorization is used but its transaction was not found yet')
  // unused and (about to be) expired: it can never move the funds now
  if (BigInt(w.valid_before!) <= BigInt(Math.floor(Date.now() / 1000) + 30))
    return fail(
      ctx,
      w,
      'expired: the withdrawal was not sent before its authorization expired; nothing left the wallet',
    )
  return undefined
}

export async function attemptUsdc(ctx: WithdrawalContext, w: Withdrawal): Promise<WithdrawalStatus> {
  const known = await decided(ctx, w)
  if (known) return known
  const data = transferCallData(asPayment(w))
  const result = await withRelayer(ctx, (relayer) =>
    relayAuthorization(ctx.chain, relayer, data, {
      ...relayVia(ctx),
      estimateFailed: (err) => new AttemptFailed(`${reasonFromRevert(String(err.message))}: the transfer would revert`),
      record: async (hash, relayer) => {
        await update(ctx.db, w.id, { tx_hash: hash, relayer })
        await event(ctx.db, w.id, 'submitted', 'pending', 'pending', null, { tx_hash: hash, relayer })
      },
    }),
  )
  if (!result) {
    // every relayer busy settling: not the withdrawal's fault, so no attempt is counted
    await update(ctx.db, w.id, { locked_until: null, next_attempt_at: new Date(Date.now() + 1_000) })
    return 'pending'
  }
  const { hash, receipt } = result.value
  if (!receipt) {
    await update(ctx.db, w.id, { locked_until: null, next_attempt_at: new Date(Date.now() + 5_000) })
    return 'pending'
  }
  if (!landed(ctx, w, receipt)) throw new AttemptFailed(`the transaction ${hash} reverted`)
  return confirm(ctx, w, hash, receipt.blockNumber)
}
