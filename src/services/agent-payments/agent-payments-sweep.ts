import { sql, type Kysely, type Selectable } from 'kysely'
import type { PublicClient } from 'viem'
import { PERMIT2_ADDRESS, permit2Abi, permit2NonceUsed } from '../../chain/permit2.js'
import { usdcAbi } from '../../chain/usdc-abi.js'
import type { Config } from '../../config.js'
import type { Database } from '../../db/database.js'
import { heldDeposit, markDepositHoldReleased, unreleasedDepositHolds } from './deposit-holds.js'
import { heldOf, lowerToCharge, settledReleaseAt } from './spend-release.js'
import type { SpendWindows } from './spend-windows.js'
import type { AgentPaymentStatus, AgentPaymentsTable } from '../../db/agent-payments-tables.js'
import { moveAgentPayment } from './move-payment.js'
import { CHARGED_STATUSES } from '../../ledger/statuses.js'

export interface AgentPaymentsSweepDeps {
  db: Kysely<Database>
  chain: PublicClient
  config: Pick<Readonly<Config>, 'chain' | 'x402'>
  windows: SpendWindows
  now: () => Date
  /** how long a wallet balance is trusted (a settled payment stays counted that long after) */
  balanceTtlMs: number
}

export interface SweepCounts {
  expired: number
  spent: number
  released: number
  recounted: number
  /** deposit holds released (their authorization used, or expired unused) */
  deposits: number
}

/**
 * Decides what the agent's word could not, every 30 s in the web role:
 * - once the chain's latest block is past validBefore (upto: the Permit2 deadline), from the chain
 *   (authorizationState, the Permit2 nonce bitmap): a `reserved` payment that was used counts as
 *   accepted, one that was not is released (`expired`); a payment released early by an older
 *   version (`rejected`) that was used after all counts again (`accepted`, event `spent_late`);
 * - from the proxy's records: one released early that the proxy recorded after all is counted
 *   again (`reserved`); one the proxy settled carries its transaction; an upto payment the proxy
 *   charged less than its maximum counts the charge (the difference released);
 * - a deposit authorization (deposit-holds.ts) leaves the wallet's unsettled total once the chain
 *   says it was used (authorizationState; a little later, as a settled payment does) or once the
 *   chain's latest block is past its validBefore unused (at once).
 *
 * Nothing else releases: not the proxy's `voided` (a signed authorization stays valid on chain
 * until its validBefore, and a voucher has no expiry), not the agent's report. Early release is
 * only by an on-chain cancellation (chain-cancel.ts), in `outcome`.
 */
export function createAgentPaymentsSweep(d: AgentPaymentsSweepDeps) {
  return async function sweep(limit = 200): Promise<SweepCounts> {
    const nowS = Math.floor(d.now().getTime() / 1000)
    const counts: SweepCounts = { expired: 0, spent: 0, released: 0, recounted: 0, deposits: 0 }
    // past validBefore by the chain's clock, not ours: until a block is past it, the authorization can still be used
    const chainS = await d.chain
      .getBlock({ blockTag: 'latest' })
      .then((b) => Number(b.timestamp))
      .catch(() => undefined)
    if (chainS !== undefined) await decideExpired(d, Math.min(nowS, chainS), limit, counts)
    await releaseDepositHolds(d, chainS === undefined ? undefined : Math.min(nowS, chainS), limit, counts)
    await recountRecorded(d, nowS, limit, counts)
    await noteSettled(d, nowS, limit)
    await lowerCharged(d, limit)
    return counts
  }
}

/** Unix seconds until which a settled payment stays counted in the wallet's unsettled total. */
const releaseAt = (d: AgentPaymentsSweepDeps) => settledReleaseAt(d.now().getTime(), d.balanceTtlMs)

type Row = Selectable<AgentPaymentsTable>

/** Past validBefore: the chain decides. */
async function decideExpired(d: AgentPaymentsSweepDeps, nowS: number, limit: number, counts: SweepCounts) {
  const { db, windows } = d
  const rows = await db
    .selectFrom('agent_payments')
    .selectAll()
    .where('status', 'in', ['reserved', 'rejected'])
    .where('valid_before', '<', String(nowS))
    .orderBy('valid_before')
    .limit(limit)
    .execute()
  for (const row of rows) {
    const used = await usedOnChain(d, row)
    if (used === undefined) continue // chain down: try again next sweep
    const next: AgentPaymentStatus = used ? 'accepted' : 'expired'
    const late = row.status === 'rejected'
    const u = await moveAgentPayment(
      db,
      row.id,
      row.status,
      { status: next },
      {
        type: late && used ? 'spent_late' : next,
        data: null,
      },
    )
    if (!u) continue
    const w = { day: row.day_window, month: row.month_window }
    if (late) {
      // released early: its amount and unsettled entry are gone already; used after all, it counts again
      if (used) {
        counts.recounted++
        await windows.adjust(row.agent_id, row.payer, w, BigInt(u.amount))
      }
      continue
    }
    if (used) counts.spent++
    else {
      counts.expired++
      await windows.adjust(row.agent_id, row.payer, w, -BigInt(u.amount))
    }
    await windows.releaseUnsettled(heldOf(row), used ? releaseAt(d) : undefined)
  }
}

/**
 * The deposit holds whose authorization the chain proves unusable: used (the balance dropped by it:
 * released once every process re-read the balance) or, with the chain's latest block past its
 * validBefore (`pastBefore`, undefined when the chain did not answer), never used (released now).
 */
async function releaseDepositHolds(
  d: AgentPaymentsSweepDeps,
  pastBefore: number | undefined,
  limit: number,
  counts: SweepCounts,
) {
  for (const row of await unreleasedDepositHolds(d.db, limit)) {
    const used = await authorizationUsed(d, row.payer, row.nonce)
    if (used === undefined) continue // chain down: try again next sweep
    if (!used && (pastBefore === undefined || BigInt(row.valid_before) >= BigInt(pastBefore))) continue
    // Redis first: a failure before Postgres says released leaves the row for the next sweep to release again
    await d.windows.releaseUnsettled(heldDeposit(row), used ? releaseAt(d) : undefined)
    if (await markDepositHoldReleased(d.db, row)) counts.deposits++
  }
}

/** Whether the payment's authorization was used on chain (undefined: the chain did not answer). */
async function usedOnChain(d: AgentPaymentsSweepDeps, row: Row): Promise<boolean | undefined> {
  try {
    if (row.scheme === 'upto') {
      // a Permit2 signature transfer: its nonce's bit in the owner's bitmap
      const n = BigInt(row.nonce)
      const word = await d.chain.readContract({
        address: PERMIT2_ADDRESS,
        abi: permit2Abi,
        functionName: 'nonceBitmap',
        args: [row.payer as `0x${string}`, n >> 8n],
      })
      return permit2NonceUsed(word, n)
    }
    return await authorizationUsed(d, row.payer, row.nonce)
  } catch {
    return undefined
  }
}

/** The USDC contract's `authorizationState(payer, nonce)`: whether that ERC-3009 nonce was used (undefined: the chain did not answer). */
async function authorizationUsed(
  d: AgentPaymentsSweepDeps,
  payer: string,
  nonce: string,
): Promise<boolean | undefined> {
  return d.chain
    .readContract({
      address: d.config.chain.usdc.address,
      abi: usdcAbi,
      functionName: 'authorizationState',
      args: [payer as `0x${string}`, nonce as `0x${string}`],
    })
    .catch(() => undefined)
}

/** Released early, yet recorded by the proxy after all: counted again until settlement or expiry decides. */
async function recountRecorded(d: AgentPaymentsSweepDeps, nowS: number, limit: number, counts: SweepCounts) {
  const recorded = await d.db
    .selectFrom('agent_payments as ap')
    .innerJoin('payments as p', (j) => j.onRef('p.payer', '=', 'ap.payer').onRef('p.nonce', '=', 'ap.nonce'))
    .select([
      'ap.id',
      'ap.agent_id',
      'ap.payer',
      'ap.amount',
      'ap.day_window',
      'ap.month_window',
      'p.status as seller_status',
    ])
    .where('ap.status', '=', 'rejected')
    .where('ap.valid_before', '>=', String(nowS))
    .where('p.status', 'in', CHARGED_STATUSES)
    .limit(limit)
    .execute()
  for (const row of recorded) {
    const u = await moveAgentPayment(
      d.db,
      row.id,
      'rejected',
      { status: 'reserved' },
      {
        type: 'recounted',
        data: { seller_status: row.seller_status },
      },
    )
    if (!u) continue
    const w = { day: row.day_window, month: row.month_window }
    await d.windows.adjust(row.agent_id, row.payer, w, BigInt(row.amount))
    counts.recounted++
  }
}

/** Payments to this platform's own endpoints: once the seller side settled them, the funds left the wallet. */
async function noteSettled(d: AgentPaymentsSweepDeps, nowS: number, limit: number): Promise<void> {
  const settled = await d.db
    .selectFrom('agent_payments as ap')
    .innerJoin('payments as p', (j) => j.onRef('p.payer', '=', 'ap.payer').onRef('p.nonce', '=', 'ap.nonce'))
    .select(['ap.id', 'ap.payer', 'ap.nonce', 'ap.amount', 'ap.max_amount', 'p.tx_hash'])
    .where('ap.status', 'in', ['reserved', 'accepted'])
    .where('ap.tx_hash', 'is', null)
    .where('ap.valid_before', '>=', String(nowS))
    .where('p.status', '=', 'settled')
    .limit(limit)
    .execute()
  for (const row of settled) {
    await d.db
      .updateTable('agent_payments')
      .set({ tx_hash: row.tx_hash, updated_at: sql`now()` })
      .where('id', '=', row.id)
      .where('tx_hash', 'is', null)
      .execute()
    await d.windows.releaseUnsettled(heldOf(row), releaseAt(d))
  }
}

/** upto payments the proxy charged less than their maximum (the agent did not report it): the difference released. */
async function lowerCharged(d: AgentPaymentsSweepDeps, limit: number): Promise<void> {
  const charged = await d.db
    .selectFrom('agent_payments as ap')
    .innerJoin('payments as p', (j) => j.onRef('p.payer', '=', 'ap.payer').onRef('p.nonce', '=', 'ap.nonce'))
    .selectAll('ap')
    .select('p.value as charged')
    .where('ap.scheme', '=', 'upto')
    .where('ap.status', 'in', ['reserved', 'accepted'])
    .where(sql<boolean>`ap.amount = ap.max_amount`)
    .where('p.status', 'in', CHARGED_STATUSES)
    .where(sql<boolean>`p.value < ap.max_amount`)
    .limit(limit)
    .execute()
  for (const { charged: value, ...row } of charged) await lowerToCharge(d.db, d.windows, row, BigInt(value))
}
