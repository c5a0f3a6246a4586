/**
 * batch-settlement (this platform's proxy only; its terms checked against the registry first):
 * the next cumulative voucher on the agent's channel to the payee, `charged + price`, with a
 * deposit (bounded by the owner's `spend_caps.channel_deposit`) when the channel cannot cover it.
 * The caps count the price; the deposit is not spending, but its authorization can move wallet
 * funds until it is used or expires, so the wallet's unsettled total counts it: held before signing,
 * then recorded with the authorization's nonce and validBefore as signed (deposit-holds.ts), for the
 * sweep to release once the chain says it was used or expired. Under the pair's lock.
 */
import { sql } from 'kysely'
import type { Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { toClientEvmSigner } from '@x402/evm'
import {
  computeChannelId,
  createBatchSettlementEIP3009DepositPayload,
  signVoucher as signChannelVoucher,
} from '@x402/evm/batch-settlement/client'
import type { Requirement } from '../../../client/challenge.js'
import { depositNonce } from '../../../schemes/batch-settlement/deposit.js'
import { voucherDigestOf } from '../../../schemes/batch-settlement/typed-data.js'
import { DEFERRED_NO_EXPIRY } from '../../../schemes/deferred/deferred-scheme.js'
import type { AgentRow } from '../../accounts/agent-auth.js'
import { channelDeposit, type ChannelPlan } from '../agent-channels.js'
import { chooseRequirement, withinPerTransactionCap, type PayBody } from '../choose-requirement.js'
import { recordDepositHold, type DepositHold } from '../deposit-holds.js'
import type { Unsettled, Windows } from '../spend-windows.js'
import { checked } from './checked.js'
import type { AgentPaymentsContext } from './context.js'
import { depositAmountOf, requirementColumns } from './pay-inputs.js'
import { holdUnsettled, reserve } from './reserve.js'
import type { Paying, SignedPayment } from './types.js'
import { voucherPayment, type RecordedVoucher } from './voucher-payment.js'

/** The channel voucher to sign next: on the plan's channel, up to `maxClaimable`, with `deposit` when one is needed. */
interface ChannelVoucher {
  plan: ChannelPlan
  channelId: string
  maxClaimable: bigint
  deposit: bigint | undefined
  /** its digest, the row's nonce */
  digest: string
}

export async function payBatch(ctx: AgentPaymentsContext, p: Paying): Promise<SignedPayment> {
  const { agent, body, c, w, at } = p
  const { req } = c
  const cv = await nextChannelVoucher(ctx, agent, body, req)
  const nowSeconds = Math.floor(at.getTime() / 1000)
  const payer = agent.address.toLowerCase()
  const timeout = ctx.validFor(req)
  const held =
    cv.deposit === undefined
      ? undefined
      : await holdUnsettled(ctx, agent, cv.deposit, nowSeconds, nowSeconds + timeout + 60)
  // the same voucher signed again (the last one never reached the proxy): one row, counted once
  const same = await ctx.db
    .selectFrom('agent_payments')
    .select(['id', 'status'])
    .where('payer', '=', payer)
    .where('nonce', '=', cv.digest)
    .executeTakeFirst()
  const counted = same?.status === 'reserved' || same?.status === 'accepted'
  const reserved = await reserve(ctx, agent, w, counted ? 0n : req.amount, {
    balance: undefined,
    nowSeconds,
    ...(counted ? { peek: true } : {}),
  })
  return voucherPayment(ctx, p, {
    r: reserved.kind === 'peek' ? { ...reserved, kind: 'ok' as const } : reserved,
    held,
    deposit: cv.deposit,
    back: counted ? 0n : -req.amount,
    record: () => recordChannelVoucher(ctx, p, cv, { same, counted, timeout, nowSeconds, held }),
    supersede: (v) =>
      ctx.channels.releaseCovered(ctx.windows, {
        rowId: v.id,
        payer,
        payTo: req.payTo.toLowerCase(),
        channelId: cv.channelId,
        charged: cv.plan.charged,
        aggregate: cv.maxClaimable,
      }),
  })
}

/**
 * Signs the channel voucher (with its deposit, recorded beside its hold `held`), records the
 * channel, and writes its row (or counts the same voucher's again).
 */
async function recordChannelVoucher(
  ctx: AgentPaymentsContext,
  p: Paying,
  cv: ChannelVoucher,
  o: {
    same: { id: string } | undefined
    counted: boolean
    timeout: number
    nowSeconds: number
    held: Unsettled | undefined
  },
): Promise<RecordedVoucher> {
  const { agent, c, w } = p
  const { req } = c
  const { plan, channelId, maxClaimable, deposit } = cv
  const payload = await batchPayload(ctx, agent, req, plan.config, { timeout: o.timeout, deposit, maxClaimable })
  if (o.held) await recordDepositHold(ctx.db, depositHoldOf(o.held, channelId, payload))
  await ctx.channels.record(agent.id, channelId, ctx.config.chain.caip2, plan.config, {
    deposit: deposit ?? 0n,
    maxClaimable,
  })
  const id = o.same
    ? await recount(ctx, o.same.id, o.counted, req.amount, w)
    : await ctx.writer.write({
        ...requirementColumns(agent, 2, c.url, c.method, req),
        nonce: cv.digest,
        valid_after: String(o.nowSeconds),
        valid_before: String(DEFERRED_NO_EXPIRY),
        day_window: w.day,
        month_window: w.month,
        scheme: 'batch-settlement',
      })
  const shown = { channel: { id: channelId, max_claimable: maxClaimable.toString() } }
  return { id, digest: cv.digest, payload, voucherId: channelId, aggregate: maxClaimable, shown }
}

/** The agent's channel to the payee and the voucher it signs next: `charged + price`, with a deposit when the channel is short. */
async function nextChannelVoucher(
  ctx: AgentPaymentsContext,
  agent: AgentRow,
  body: PayBody,
  req: Requirement,
): Promise<ChannelVoucher> {
  const authorizer = await ctx.platform.batchAuthorizer()
  if (!authorizer) throw new Error('batch-settlement requirement passed the registry check without an authorizer')
  const plan = await ctx.channels.plan(agent, channelTerms(ctx, req.payTo, authorizer), generatePrivateKey)
  const channelId = computeChannelId(plan.config, ctx.config.chain.caip2).toLowerCase()
  const maxClaimable = plan.charged + req.amount
  const asked = body.deposit_amount === undefined ? undefined : depositAmountOf(body, req.amount)
  const deposit =
    maxClaimable > plan.balance || plan.fresh
      ? channelDeposit(agent, req.amount, asked, maxClaimable - plan.balance)
      : undefined
  const digest = `0x${Buffer.from(voucherDigestOf(ctx.batchDomain, channelId as Hex, maxClaimable)).toString('hex')}`
  return { plan, channelId, maxClaimable, deposit, digest }
}

/**
 * The batch-settlement payload from the custodial key, with the official client's functions: a
 * deposit (ERC-3009 to the deposit collector, and the voucher) or a voucher. The token's EIP-712
 * domain, the network and the channel's terms are this deployment's, never the challenge's.
 */
async function batchPayload(
  ctx: AgentPaymentsContext,
  agent: AgentRow,
  req: Requirement,
  channel: Parameters<typeof computeChannelId>[0],
  o: { timeout: number; deposit: bigint | undefined; maxClaimable: bigint },
): Promise<Record<string, unknown>> {
  const { caip2: network, usdc } = ctx.config.chain
  const signer = toClientEvmSigner(privateKeyToAccount(`0x${ctx.keys.privateKeyOf(agent).toString('hex')}`))
  if (o.deposit === undefined) {
    const id = computeChannelId(channel, network)
    const voucher = await signChannelVoucher(signer, id, o.maxClaimable.toString(), network)
    return { type: 'voucher', channelConfig: channel, voucher }
  }
  const terms = {
    ...req.raw,
    network,
    asset: usdc.address,
    maxTimeoutSeconds: o.timeout,
    extra: { ...(req.raw.extra as object), name: usdc.name, version: usdc.version },
  }
  const r = await createBatchSettlementEIP3009DepositPayload(
    signer,
    2,
    terms as never,
    channel,
    o.deposit.toString(),
    o.maxClaimable.toString(),
  )
  return r.payload as Record<string, unknown>
}

/**
 * The deposit authorization in a deposit payload, as the official client signed it (it picks the
 * salt and validBefore itself): its ERC-3009 nonce, keccak256(abi.encode(channelId, salt)), and
 * validBefore, beside the hold `held` that counts it.
 */
function depositHoldOf(held: Unsettled, channelId: string, payload: Record<string, unknown>): DepositHold {
  const auth = (payload as { deposit?: { authorization?: { erc3009Authorization?: Record<string, unknown> } } }).deposit
    ?.authorization?.erc3009Authorization
  const { salt, validBefore } = auth ?? {}
  if (typeof salt !== 'string' || typeof validBefore !== 'string')
    throw new Error('the batch-settlement deposit payload carries no ERC-3009 authorization')
  return {
    held,
    nonce: depositNonce(channelId as Hex, BigInt(salt)).toLowerCase(),
    validBefore: BigInt(validBefore),
    channelId,
  }
}

/** The row of a voucher signed again: still counted, or counted again (in this window) when it had been released. */
async function recount(
  ctx: AgentPaymentsContext,
  id: string,
  counted: boolean,
  amount: bigint,
  w: Windows,
): Promise<string> {
  if (counted) return id
  await ctx.db
    .updateTable('agent_payments')
    .set({
      status: 'reserved',
      amount: amount.toString(),
      day_window: w.day,
      month_window: w.month,
      updated_at: sql`now()`,
    })
    .where('id', '=', id)
    .execute()
  return id
}

/** The terms of an agent's channel to `receiver`: this deployment's, never a challenge's. */
function channelTerms(ctx: AgentPaymentsContext, receiver: string, receiverAuthorizer: string) {
  const { caip2: network, usdc } = ctx.config.chain
  const withdrawDelay = ctx.config.batchSettlement.withdrawDelay
  return { network, receiver, receiverAuthorizer, token: usdc.address, withdrawDelay }
}

/** What the next batch-settlement payment of `agent` to the payee would deposit (undefined: none); throws past the bound. */
export async function batchDepositOf(
  ctx: AgentPaymentsContext,
  agent: AgentRow,
  body: PayBody,
  price: bigint,
): Promise<bigint | undefined> {
  const req = withinPerTransactionCap(agent, await checked(ctx, chooseRequirement(agent, body, ctx.terms)))
  return batchDepositFor(ctx, agent, body, req, price)
}

/** What paying `req` (batch-settlement) at `price` would deposit into the agent's channel to its payee (undefined: none); throws past the bound. */
export async function batchDepositFor(
  ctx: AgentPaymentsContext,
  agent: AgentRow,
  body: PayBody,
  req: Requirement,
  price: bigint = req.amount,
): Promise<bigint | undefined> {
  const authorizer = await ctx.platform.batchAuthorizer()
  if (!authorizer) return undefined
  const plan = await ctx.channels.plan(agent, channelTerms(ctx, req.payTo, authorizer), generatePrivateKey)
  const needed = plan.charged + price
  if (needed <= plan.balance) return undefined
  const asked = body.deposit_amount === undefined ? undefined : depositAmountOf(body, price)
  return channelDeposit(agent, price, asked, needed - plan.balance)
}
