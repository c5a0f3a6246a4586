import type { RedisClient } from '../../redis-client.js'
import { sql, type Kysely } from 'kysely'
import { getAddress, type PublicClient } from 'viem'
import type { Config } from '../../config.js'
import { usdcAbi } from '../../chain/usdc-abi.js'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { createSpendWindows, type Unsettled } from '../agent-payments/spend-windows.js'
import { createPayerCredit } from '../../ledger/payer-credit.js'
import { OPEN_STATUSES } from '../../ledger/statuses.js'
import { exceedsAvailable } from './refusal.js'

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
  const r: Reservations = {
    deps,
    credit: createPayerCredit(deps),
    windows: createSpendWindows(deps.redis, deps.key),
    asset: deps.config.chain.usdc.address.toLowerCase(),
  }
  return {
    /**
     * Reserves `w` against the wallet's `balance` (read from the chain just now) in both places, or
     * throws 409 `withdrawal_exceeds_available` saying how much could be withdrawn.
     */
    async reserve(w: HeldWithdrawal, balance: bigint, nowMs: number): Promise<void> {
      const u: Unsettled = { payer: w.payer, nonce: w.nonce, amount: w.amount, validBefore: w.validBefore }
      await reserveUnsettled(r, u, balance, Math.floor(nowMs / 1000))
      await reserveCredit(r, w, u, balance, nowMs)
    },

    /** The withdrawal moved the funds: it leaves the proxy's exposure and cached balance now, the unsettled set a little later. */
    async settled(w: HeldWithdrawal): Promise<void> {
      await Promise.all([
        r.credit.settled({ payer: w.payer, asset: r.asset, value: w.amount }),
        r.windows.releaseUnsettled(
          { payer: w.payer, nonce: w.nonce, amount: w.amount },
          Math.floor(Date.now() / 1000) + SETTLED_GRACE_S,
        ),
      ])
    },

    /** The withdrawal can no longer move funds (failed, expired, or never recorded): both reservations go. */
    async release(w: HeldWithdrawal): Promise<void> {
      await Promise.all([
        r.credit.release({ payer: w.payer, asset: r.asset, value: w.amount }),
        r.credit.forgetNonce(w.payer, w.nonce),
        r.windows.releaseUnsettled({ payer: w.payer, nonce: w.nonce, amount: w.amount }),
      ])
    },
  }
}

/** The two places a withdrawal reserves in, and the asset (lower-case USDC address) it reserves. */
interface Reservations {
  deps: WalletReservationDeps
  credit: ReturnType<typeof createPayerCredit>
  windows: ReturnType<typeof createSpendWindows>
  asset: string
}

async function readBalance(r: Reservations, payers: string[]): Promise<bigint[]> {
  return Promise.all(
    payers.map((p) =>
      r.deps.chain.readContract({
        address: r.deps.config.chain.usdc.address,
        abi: usdcAbi,
        functionName: 'balanceOf',
        args: [p as `0x${string}`],
      }),
    ),
  )
}

/** The unsettled authorizations of the wallet Postgres knows of: the agent's open payments and pending withdrawals. */
async function openAuthorizations(r: Reservations, payer: string, nowSeconds: number): Promise<Unsettled[]> {
  const rows = await r.deps.db
    .selectFrom('agent_payments')
    .select(['nonce', 'amount', 'valid_before'])
    .where('payer', '=', payer)
    .where('scheme', '=', 'exact') // a voucher moves nothing from the wallet
    .where('status', 'in', ['reserved', 'accepted'])
    .where('tx_hash', 'is', null)
    .where('valid_before', '>', String(nowSeconds))
    .execute()
  const own = rows.map((row) => ({
    payer,
    nonce: row.nonce,
    amount: BigInt(row.amount),
    validBefore: BigInt(row.valid_before),
  }))
  return [...own, ...(await openWithdrawalAuthorizations(r.deps.db, payer, nowSeconds))]
}

/** The proxy's view of the payer: cached balance and exposure (either may be missing). */
async function creditView(r: Reservations, payer: string): Promise<{ balance: bigint | null; exposure: bigint }> {
  const [bal, exp] = await r.deps.redis.mget(
    r.credit.keys.balance(r.asset, payer),
    r.credit.keys.exposure(r.asset, payer),
  )
  return { balance: bal === null ? null : BigInt(bal), exposure: exp === null ? 0n : BigInt(exp) }
}

/** Reserves in the agent's unsettled set (rebuilt from Postgres when Redis lost it), or refuses. */
async function reserveUnsettled(r: Reservations, u: Unsettled, balance: bigint, nowSeconds: number): Promise<void> {
  let res = await r.windows.reserveUnsettled(u, balance, nowSeconds)
  for (let i = 0; res.kind === 'init-unsettled' && i < 3; i++) {
    await r.windows.rebuildUnsettled(u.payer, await openAuthorizations(r, u.payer, nowSeconds))
    res = await r.windows.reserveUnsettled(u, balance, nowSeconds)
  }
  if (res.kind === 'init-unsettled')
    throw appError('service_unavailable', { detail: "the wallet's unsettled payments could not be counted; retry" })
  if (res.kind === 'balance') throw exceedsAvailable('USDC', balance, res.unsettled, u.amount)
}

/** Reserves in the payer's credit at the proxy (warming its balance when needed), or gives the unsettled reservation back and refuses. */
async function reserveCredit(r: Reservations, w: HeldWithdrawal, u: Unsettled, balance: bigint, nowMs: number) {
  const { credit, windows, asset } = r
  const read = (payers: string[]) => readBalance(r, payers)
  const args = { payer: w.payer, asset, nonce: w.nonce, value: w.amount, validBefore: Number(w.validBefore), nowMs }
  let g: Awaited<ReturnType<typeof credit.reserve>>
  try {
    g = await credit.reserve(args)
    if (g.result === 'unknown_balance') {
      await credit.warm(asset, w.payer, read)
      g = await credit.reserve(args)
    } else if (g.result === 'insufficient' && g.stale) {
      await credit.readBalances(asset, [w.payer], read)
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
  const view = await creditView(r, w.payer)
  throw exceedsAvailable('USDC', view.balance ?? balance, view.exposure, w.amount)
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
      select lower(nonce) as nonce, value as amount from payments where payer = any(${[p, getAddress(p)]}::text[]) and scheme = 'exact' and status = any(${OPEN_STATUSES}::text[])
      union
      select lower(nonce), amount from agent_payments where payer = ${p} and scheme = 'exact' and status in ('reserved','accepted') and tx_hash is null and valid_before > ${nowSeconds}
      union
      select lower(auth_nonce), amount from withdrawals where lower(from_address) = ${p} and status = 'pending' and asset = 'USDC'
    ) open`.execute(db)
  return BigInt(r.rows[0]?.total ?? '0')
}
