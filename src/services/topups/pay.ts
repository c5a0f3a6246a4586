// One attempt at a claimed top-up: the funding wallet's EIP-3009 authorization to the agent,
// submitted by a relayer. Never signs a second authorization while the first can still be used:
// a used one is found on the chain, an unused one is re-signed only when about to expire.
import { getAddress, type Hex, type TransactionReceipt } from 'viem'
import { usdcAbi } from '../../chain/usdc-abi.js'
import type { Topup } from '../../db/topups-tables.js'
import { reasonFromRevert, transferCallData } from '../settlement/chain-ops.js'
import { relayVia } from '../wallets/authorization-sender.js'
import { custodialAccount } from '../wallets/custodial-wallet.js'
import {
  authorizationOnChain,
  authorizationPayment,
  relayAuthorization,
  signTransferAuthorization,
  usedIn,
} from '../wallets/transfer-authorization.js'
import { AttemptFailed, withRelayer, type TopupContext } from './context.js'
import { confirm, update } from './rows.js'

/** The stored authorization as the settlement calldata builder expects it. */
const asPayment = (t: Topup) =>
  authorizationPayment({
    payer: t.funding_address!,
    payTo: t.agent_address,
    value: t.amount,
    validAfter: t.valid_after,
    validBefore: t.valid_before,
    nonce: t.auth_nonce,
    signature: t.signature,
  })

const landed = (ctx: TopupContext, t: Topup, receipt: TransactionReceipt) =>
  usedIn(ctx.usdc, receipt, t.funding_address!, t.auth_nonce!)

/** Signs a fresh authorization from the user's funding wallet and stores it on the row. */
async function authorize(ctx: TopupContext, t: Topup): Promise<Topup> {
  const w = await ctx.db
    .selectFrom('agents')
    .innerJoin('funding_wallets', 'funding_wallets.user_id', 'agents.user_id')
    .select(['funding_wallets.address', 'funding_wallets.encrypted_key'])
    .where('agents.id', '=', t.agent_id)
    .executeTakeFirst()
  if (!w) throw new AttemptFailed('the user has no funding wallet')
  if (!ctx.config.masterKey) throw new AttemptFailed('TOLLGATE_MASTER_KEY is not configured')
  const account = custodialAccount([ctx.config.masterKey], 'funding', w.address, w.encrypted_key)
  const now = Math.floor(Date.now() / 1000)
  const auth = await signTransferAuthorization(
    account,
    ctx.config.chain,
    t.agent_address,
    BigInt(t.amount),
    now,
    ctx.ttlS,
  )
  const set = { funding_address: account.address, ...auth }
  await update(ctx, t.id, set)
  return { ...t, ...set }
}

/**
 * The top-up as it stands before sending: confirmed when an earlier transaction or a lost one
 * used its authorization; else with an authorization that can be sent (signed now if it had none
 * or its own is about to expire).
 */
async function prepare(ctx: TopupContext, t: Topup): Promise<'confirmed' | Topup> {
  const { chain } = ctx
  // an earlier submission: its receipt decides
  if (t.status === 'submitted' && t.tx_hash) {
    const receipt = await chain.getTransactionReceipt({ hash: t.tx_hash as Hex }).catch(() => null)
    if (receipt && landed(ctx, t, receipt)) return confirm(ctx, t, t.tx_hash, receipt.blockNumber)
  }
  if (!(t.signature && t.auth_nonce && t.funding_address)) return authorize(ctx, t)
  const onChain = await authorizationOnChain(chain, ctx.usdc, asPayment(t), ctx.config.settlement.logChunkBlocks)
  // used by some transaction we lost track of: that is the refill
  if (onChain.kind === 'used') return confirm(ctx, t, onChain.txHash, onChain.blockNumber)
  if (onChain.kind !== 'unused')
    throw new AttemptFailed(
      onChain.kind === 'canceled'
        ? 'the authorization was canceled'
        : 'the authorization is used but its transaction was not found',
    )
  // unused and about to expire: it can never be used once expired, so a new one is safe
  return BigInt(t.valid_before!) < BigInt(Math.floor(Date.now() / 1000) + 120) ? authorize(ctx, t) : t
}

/** One attempt at a claimed top-up; its status after. */
export async function attempt(ctx: TopupContext, t0: Topup): Promise<Topup['status']> {
  const prepared = await prepare(ctx, t0)
  if (prepared === 'confirmed') return 'confirmed'
  const t = prepared
  const funding = await ctx.chain.readContract({
    address: ctx.usdc,
    abi: usdcAbi,
    functionName: 'balanceOf',
    args: [getAddress(t.funding_address!)],
  })
  if (funding < BigInt(t.amount))
    throw new AttemptFailed(
      `insufficient_funds: the funding wallet ${t.funding_address} holds ${funding}, the top-up needs ${t.amount}`,
    )
  const data = transferCallData(asPayment(t))
  const result = await withRelayer(ctx, (relayer) =>
    relayAuthorization(ctx.chain, relayer, data, {
      ...relayVia(ctx),
      estimateFailed: (err) =>
        new AttemptFailed(reasonFromRevert(String(err.message)) + ': ' + String(err.message).split('\n')[0]),
      record: (hash, relayer) => update(ctx, t.id, { status: 'submitted', tx_hash: hash, relayer }),
    }),
  )
  if (!result) {
    // every relayer busy settling: not the top-up's fault, so no attempt is counted
    await update(ctx, t.id, { locked_until: null, next_attempt_at: new Date(Date.now() + 2_000) })
    return t.status
  }
  const { hash, receipt } = result.value
  if (!receipt) {
    // still in flight: stay `submitted`; the next run reads its receipt or the authorization state
    await update(ctx, t.id, { locked_until: null, next_attempt_at: new Date(Date.now() + 5_000) })
    return 'submitted'
  }
  if (!landed(ctx, { ...t, tx_hash: hash }, receipt)) throw new AttemptFailed(`the transaction ${hash} reverted`)
  return confirm(ctx, t, hash, receipt.blockNumber)
}
