import type { RedisClient } from '../../redis-client.js'
import { sql, type Kysely } from 'kysely'
import { getAddress, type PublicClient } from 'viem'
import type { Config } from '../../config.js'
import { usdcAbi } from '../../chain/usdc-abi.js'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { createSpendWindows, type Unsettled } from '../agent-payments/spend-windows.js'
import { createPayerCredit } from '../../ledger/payer-credit.js'
import { amountText } from './amount-text.js'

/** A withdrawal's authorization stays counted this long after it settled: every process re-reads the balance within it. */
const SETTLED_GRACE_S = 5

export interface WalletReservationDeps {
  db: Kysely<Database>
  redis: RedisClient
  key(...parts: string[]): string
  chain: PublicClient
  config: Pick<Config, 'chain'>
}

/** What a USDC withdrawal from an agent wallet holds while it is pending. */
export interface HeldWithdrawal {
  /** lower-case wallet address */
  payer: string
  /** the EIP-3009 nonce of its authorization */
  nonce: string
  amount: bigint
  /** unix seconds */
  validBefore: bigint
}

/**
 * An agent wallet's withdrawal reserved where its payments reserve, so that neither can take
 * what the other counts on:
 *  - the agent's unsettled authorizations (spend-windows.ts): every payment the platform signs for
 *    the wallet is checked there against its balance in one Lua call, and so is the withdrawal;
 *  - the payer's credit at the proxy (ledger/payer-credit.ts): a payment signed with the wallet's key
 *    elsewhere (the demo payer's key is in dev.json) is checked there, and so is the withdrawal.
 * Both must have room; the first that has none refuses, and what was taken is given back. Postgres
 * holds the truth for either after a Redis flush: `openWithdrawalAuthorizations` for the first,
 * pending withdrawals in payer-credit's exposure rebuild for the second.
 */
export function createWalletReservations(deps: WalletReservationDeps) {
  const credit = createPayerCredit(deps)
  const windows = createSpendWindows(deps.redis, deps.key)
  const asset = deps.config.chain.usdc.address.toLowerCase()

  async function readBalance(payers: string[]): Promise<bigint[]> {
    return Promise.all(
      payers.map((p) =>
        deps.chain.readContract({
          address: deps.config.chain.usdc.address,
          abi: usdcAbi,
          functionName: 'balanceOf',
          args: [p as `0x${string}`],
        }),
      ),
    )
  }

  /** The unsettled authorizations of the wallet Postgres knows of: the agent's open payments and pending withdrawals. */
  async function openAuthorizations(payer: string, nowSeconds: number): Promise<Unsettled[]> {
    const rows = await deps.db
      .selectFrom('agent_payments')
      .select(['nonce', 'amount', 'valid_before'])
      .where('payer', '=', payer)
      .where('scheme', '=', 'exact') // a voucher moves nothing from the wallet
      .where('status', 'in', ['reserved', 'accepted'])
      .where('tx_hash', 'is', null)
      .where('valid_before', '>', String(nowSeconds))
      .execute()
    const own = rows.map((r) => ({
      payer,
      nonce: r.nonce,
      amount: BigInt(r.amount),
      validBefore: BigInt(r.valid_before),
    }))
    return [...own, ...(await openWithdrawalAuthorizations(deps.db, payer, nowSeconds))]
  }

  function refusal(balance: bigint, unsettled: bigint, amount: bigint) {
    const available = balance > unsettled ? balance - unsettled : 0n
    return appError(
      'withdrawal_exceeds_available',
      {
        available: amountText('USDC', available),
        balance: amountText('USDC', balance),
        unsettled: amountText('USDC', unsettled),
        fee: '',
        amount: amountText('USDC', amount),
      },
      {
        details: {
          asset: 'USDC',
          balance: balance.toString(),
          unsettled: unsettled.toString(),
          available: available.toString(),
          amount: amount.toString(),
        },
      },
    )
  }

  /** The proxy's view of the payer: cached balance and exposure (either may be missing). */
  async function creditView(payer: string): Promise<{ balance: bigint | null; exposure: bigint }> {
    const [bal, exp] = await deps.redis.mget(credit.keys.balance(asset, payer), credit.keys.exposure(asset, payer))
    return { balance: bal === null ? null : BigInt(bal), exposure: exp === null ? 0n : BigInt(exp) }
  }

  return {
    /**
     * Reserves `w` against the wallet's `balance` (read from the chain just now) in both places, or
     * throws 409 `withdrawal_exceeds_available` saying how much could be withdrawn.
     */
    async reserve(w: HeldWithdrawal, balance: bigint, nowMs: number): Promise<void> {
      const nowSeconds = Math.floor(nowMs / 1000)
      const u: Unsettled = { payer: w.payer, nonce: w.nonce, amount: w.amount, validBefore: w.validBefore }
      let r = await windows.reserveUnsettled(u, balance, nowSeconds)
      for (let i = 0; r.kind === 'init-unsettled' && i < 3; i++) {
        await windows.rebuildUnsettled(w.payer, await openAuthorizations(w.payer, nowSeconds))
        r = await windows.reserveUnsettled(u, balance, nowSeconds)
      }
      if (r.kind === 'init-unsettled')
        throw appError('service_unavailable', { detail: "the wallet's unsettled payments could not be counted; retry" })
      if (r.kind === 'balance') throw refusal(balance, r.unsettled, w.amount)

      const args = { payer: w.payer, asset, nonce: w.nonce, value: w.amount, validBefore: Number(w.validBefore), nowMs }
      let g: Awaited<ReturnType<typeof credit.reserve>>
      try {
        g = await credit.reserve(args)
        if (g.result === 'unknown_balance') {
          await credit.warm(asset, w.payer, readBalance)
          g = await credit.reserve(args)
        } else if (g.result === 'insufficient' && g.stale) {
          await credit.readBalances(asset, [w.payer], readBalance)
          g = await credit.reserve(args)
        }
      } catch (err) {
        await windows.releaseUnsettled(u).catch(() => {})
        throw err
      }
      // 'blocked' is reserved as 'ok' is: the block concerns the payer's later payments, not this
      if (g.result === 'ok' || g.result === 'blocked') return
      await windows.releaseUnsettled(u)
      if (g.result === 'unknown_balance')
        throw appError('service_unavailable', {
          detail: 'the chain RPC did not answer; cannot check the wallet balance, retry later',
        })
      if (g.result === 'nonce_used') throw new Error('a fresh withdrawal nonce was already taken')
      const view = await creditView(w.payer)
      throw refusal(view.balance ?? balance, view.exposure, w.amount)
    },

    /** The withdrawal moved the funds: it leaves the proxy's exposure and cached balance now, the unsettled set a little later. */
    async settled(w: HeldWithdrawal): Promise<void> {
      await Promise.all([
        credit.settled({ payer: w.payer, asset, value: w.amount }),
        windows.releaseUnsettled(
          { payer: w.payer, nonce: w.nonce, amount: w.amount },
          Math.floor(Date.now() / 1000) + SETTLED_GRACE_S,
        ),
      ])
    },

    /** The withdrawal can no longer move funds (failed, expired, or never recorded): both reservations go. */
    async release(w: HeldWithdrawal): Promise<void> {
      await Promise.all([
        credit.release({ payer: w.payer, asset, value: w.amount }),
        credit.forgetNonce(w.payer, w.nonce),
        windows.releaseUnsettled({ payer: w.payer, nonce: w.nonce, amount: w.amount }),
      ])
    },
  }
}

export type WalletReservations = ReturnType<typeof createWalletReservations>

/**
 * Pending USDC withdrawals of `payer` whose authorization can still move funds, as unsettled
 * authorizations: agent-payments adds them when it rebuilds a wallet's unsettled set from Postgres.
 */
export async function openWithdrawalAuthorizations(
  db: Kysely<Database>,
  payer: string,
  nowSeconds: number,
): Promise<Unsettled[]> {
  const rows = await db
    .selectFrom('withdrawals')
    .select(['auth_nonce', 'amount', 'valid_before'])
    .where(sql<string>`lower(from_address)`, '=', payer.toLowerCase())
    .where('status', '=', 'pending')
    .where('asset', '=', 'USDC')
    .where('auth_nonce', 'is not', null)
    .where('valid_before', '>', String(nowSeconds))
    .execute()
  return rows.map((r) => ({
    payer: payer.toLowerCase(),
    nonce: r.auth_nonce!,
    amount: BigInt(r.amount),
    validBefore: BigInt(r.valid_before!),
  }))
}

/**
 * What a wallet has signed or sent that has not settled yet, from Postgres (the truth the Redis
 * counters are rebuilt from): payments at the proxy not settled yet, the platform's open payments
 * for the agent, and pending withdrawals, each authorization counted once. Atomic USDC units.
 */
export async function unsettledFromLedger(db: Kysely<Database>, payer: string, nowSeconds: number): Promise<bigint> {
  const p = payer.toLowerCase()
  // payments_payer_status_idx: the proxy writes payers in lower case; rows written checksummed are found too
  const r = await sql<{ total: string }>`
    select coalesce(sum(amount), 0)::text as total from (
      select lower(nonce) as nonce, value as amount from payments where payer = any(${[p, getAddress(p)]}::text[]) and scheme = 'exact' and status in ('verified','served','settling')
      union
      select lower(nonce), amount from agent_payments where payer = ${p} and scheme = 'exact' and status in ('reserved','accepted') and tx_hash is null and valid_before > ${nowSeconds}
      union
      select lower(auth_nonce), amount from withdrawals where lower(from_address) = ${p} and status = 'pending' and asset = 'USDC'
    ) open`.execute(db)
  return BigInt(r.rows[0]?.total ?? '0')
}
