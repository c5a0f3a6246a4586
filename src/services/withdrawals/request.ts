// POST …/withdrawals: checks the request (target wallet, asset, address, amount, Idempotency-Key),
// answers a replay with the withdrawal its key made, and records a new one (record.ts).
import { createHash } from 'node:crypto'
import { zeroAddress } from 'viem'
import type { WithdrawalAsset, WithdrawalSource } from '../../db/withdrawals-tables.js'
import { appError } from '../../errors.js'
import { requireMasterKey } from '../../secrets/wallet-crypto.js'
import { address as parseAddress, atomicAmount, invalid } from '../accounts/validate.js'
import { MAX_COUNTED } from '../agent-payments/spend-windows.js'
import { ensureFundingWallet } from '../wallets/funding-wallet.js'
import type { WithdrawalContext } from './context.js'
import { recordAgentUsdc, recordFunding } from './record.js'
import { existing, type NewRow } from './rows.js'
import { withdrawalView, type WithdrawalView } from './view.js'

/** Which wallet a withdrawal leaves: one of the user's agents (by address) or the user's funding wallet. */
export type WithdrawalTarget = { source: 'agent'; address: string } | { source: 'funding_wallet' }

export interface WithdrawalBody {
  to?: unknown
  amount?: unknown
  asset?: unknown
}

interface SourceWallet {
  source: WithdrawalSource
  address: string
  encryptedKey: string
  agentId: string | null
}

function parseBody(ctx: WithdrawalContext, target: WithdrawalTarget, body: WithdrawalBody, from: string) {
  const asset = (body.asset ?? 'USDC') as WithdrawalAsset
  if (asset !== 'USDC' && asset !== 'ETH') throw invalid('asset', 'expected USDC or ETH')
  if (asset === 'ETH' && target.source !== 'funding_wallet')
    throw invalid(
      'asset',
      'agent wallets withdraw USDC only; ETH (the gas left in a wallet) is withdrawn from the funding wallet',
    )
  const to = parseAddress('to', body.to)
  if (to === zeroAddress) throw invalid('to', 'the zero address would burn the funds; name the address to send them to')
  if (to.toLowerCase() === from.toLowerCase())
    throw invalid('to', 'this is the wallet the funds leave; name another address')
  if (to.toLowerCase() === ctx.usdc.toLowerCase())
    throw invalid('to', 'this is the USDC token contract, which cannot hand the funds back; name a wallet address')
  const unit = asset === 'USDC' ? 'USDC atomic units (6 decimals: "1000000" = 1 USDC)' : 'wei'
  const raw = atomicAmount('amount', body.amount, { positive: true })!
  const amount = BigInt(raw)
  if (asset === 'USDC' && amount > MAX_COUNTED) throw invalid('amount', `at most ${MAX_COUNTED} ${unit}`)
  return { asset, to, amount, unit }
}

/** The wallet a target names: its address, its encrypted key and the agent's id. 404 for another user's agent. */
async function walletOf(ctx: WithdrawalContext, userId: string, target: WithdrawalTarget): Promise<SourceWallet> {
  const { db } = ctx
  if (target.source === 'funding_wallet') {
    await ensureFundingWallet(db, requireMasterKey(ctx.config), userId)
    const w = await db
      .selectFrom('funding_wallets')
      .select(['address', 'encrypted_key'])
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow()
    return { source: 'funding_wallet', address: w.address, encryptedKey: w.encrypted_key, agentId: null }
  }
  let address: string
  try {
    address = parseAddress('address', target.address)
  } catch {
    throw appError('not_found', { what: 'agent' })
  }
  const a = await db
    .selectFrom('agents')
    .select(['id', 'address', 'encrypted_key'])
    .where('user_id', '=', userId)
    .where('address', '=', address)
    .executeTakeFirst()
  if (!a) throw appError('not_found', { what: 'agent' })
  return { source: 'agent', address: a.address, encryptedKey: a.encrypted_key, agentId: a.id }
}

/** The checked request as a row to record, before any authorization is signed. */
async function checkedRow(
  ctx: WithdrawalContext,
  userId: string,
  target: WithdrawalTarget,
  body: WithdrawalBody,
  idempotencyKey: string,
): Promise<{ wallet: SourceWallet; base: NewRow }> {
  const wallet = await walletOf(ctx, userId, target)
  const { asset, to, amount } = parseBody(ctx, target, body ?? {}, wallet.address)
  // USDC leaves through a relayer; without one (SETTLEMENT_MODE=facilitator) it would wait forever
  if (asset === 'USDC' && ctx.relayers.length === 0)
    throw appError('service_unavailable', {
      detail:
        'USDC withdrawals are sent by a settlement relayer and this deployment has none (RELAYER_PRIVATE_KEYS); ask the operator',
    })
  const requestHash = createHash('sha256')
    .update(JSON.stringify([wallet.source, wallet.address.toLowerCase(), to.toLowerCase(), asset, amount.toString()]))
    .digest('hex')
  const base: NewRow = {
    user_id: userId,
    agent_id: wallet.agentId,
    source: wallet.source,
    from_address: wallet.address,
    to_address: to,
    asset,
    amount: amount.toString(),
    idempotency_key: idempotencyKey,
    request_hash: requestHash,
    auth_nonce: null,
    valid_after: null,
    valid_before: null,
    signature: null,
  }
  return { wallet, base }
}

/**
 * Checks and records a withdrawal (201), or finds the one this idempotency key made (replayed:
 * 200). 409 `withdrawal_exceeds_available` when the wallet's balance minus what it has signed and
 * not settled cannot cover it; 409 `idempotency_key_reused` for the key with another request.
 */
export async function requestWithdrawal(
  ctx: WithdrawalContext,
  userId: string,
  target: WithdrawalTarget,
  body: WithdrawalBody,
  idempotencyKey: unknown,
): Promise<{ withdrawal: WithdrawalView; replayed: boolean }> {
  if (typeof idempotencyKey !== 'string' || idempotencyKey.length < 1 || idempotencyKey.length > 255) {
    throw invalid(
      'Idempotency-Key',
      'required: send an Idempotency-Key header (1 to 255 characters, new for each withdrawal) so that a retried request cannot send the funds twice',
    )
  }
  const { wallet, base } = await checkedRow(ctx, userId, target, body, idempotencyKey)
  const prior = await existing(ctx.db, userId, idempotencyKey, base.request_hash)
  if (prior) return { withdrawal: withdrawalView(prior), replayed: true }
  const { w, created } =
    wallet.source === 'agent'
      ? await recordAgentUsdc(ctx, base, wallet.encryptedKey)
      : await recordFunding(ctx, base, wallet.encryptedKey)
  if (created)
    ctx.log.info(
      { withdrawal: w.id, from: w.from_address, to: w.to_address, amount: w.amount, asset: w.asset },
      'withdrawal requested',
    )
  return { withdrawal: withdrawalView(w), replayed: !created }
}
