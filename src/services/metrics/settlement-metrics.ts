import type { Queue } from 'bullmq'
import { sql } from 'kysely'
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import { formatEther } from 'viem'
import type { CoreDeps as Deps } from '../../core-deps.js'
import { SIGN_IN_SERVED_KEY } from '../../db/access-grant-store.js'
import { OPEN_STATUSES } from '../../ledger/statuses.js'
import { relayerFunds } from './relayer-funds.js'
import { FINAL, SettlementHistograms, type FinalTotals } from './settlement-histograms.js'

/**
 * A row is counted once it is this old (by `updated_at`), so a transaction that commits a little
 * after its timestamp is not skipped by the scrape cursor.
 */
export const METRICS_SETTLE_LAG_MS = 2_000

export interface SettlementMetricsOptions {
  /** the first scrape reads this much history; later ones only what was finalized since */
  lookbackMs?: number
  lagMs?: number
}

/**
 * Prometheus metrics of settlement, computed at scrape time from Postgres (payments, events,
 * batches), Redis (the BullMQ `settlement` queue) and the chain (relayer ETH), so the web role
 * can serve them while the worker role, which has no HTTP port, does the work. The two histograms
 * are incremental: each scrape adds only the batches confirmed and payments settled since the last
 * one (index ranges on (status, updated_at)), so a scrape never scans whole tables; they start
 * from the last `lookbackMs` (1 h) when this process starts, which Prometheus reads as a counter
 * reset. `tollgate_payments` by status counts open statuses exactly and final ones
 * (settled, failed, voided: never left) as running totals, counted in full once per process.
 *
 * @example
 *   const metrics = createSettlementMetrics(deps, settlementQueue(deps.config))
 *   reply.type(metrics.contentType).send(await metrics.render())
 */
export function createSettlementMetrics(
  deps: Deps,
  queue: Pick<Queue, 'getJobCounts'>,
  opts: SettlementMetricsOptions = {},
) {
  const histograms = new SettlementHistograms(
    deps.db,
    opts.lagMs ?? METRICS_SETTLE_LAG_MS,
    opts.lookbackMs ?? 3_600_000,
  )
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'tollgate_' })
  registerQueueGauge(registry, queue)
  registerPaymentsGauge(registry, deps, () => histograms.finals)
  registerBacklogMetrics(registry, deps)
  registerRelayerMetrics(registry, deps)

  return {
    registry,
    contentType: registry.contentType,
    /** The exposition text: registry metrics plus the two histograms read from Postgres. */
    async render(): Promise<string> {
      await histograms.advance()
      const base = await registry.metrics()
      return base + histograms.text()
    },
  }
}

export type SettlementMetrics = ReturnType<typeof createSettlementMetrics>

function registerQueueGauge(registry: Registry, queue: Pick<Queue, 'getJobCounts'>): void {
  new Gauge({
    name: 'tollgate_settlement_queue_jobs',
    help: 'Jobs in the BullMQ settlement queue, by state',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const counts = await queue.getJobCounts(
        'waiting',
        'active',
        'delayed',
        'prioritized',
        'waiting-children',
        'failed',
      )
      for (const [state, n] of Object.entries(counts)) this.set({ state }, n)
    },
  })
}

/** Payments by status: open ones counted exactly, final ones from the running totals. */
function registerPaymentsGauge(registry: Registry, deps: Deps, finals: () => FinalTotals): void {
  const { db } = deps
  new Gauge({
    name: 'tollgate_payments',
    help: 'Payments by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      // open statuses are few and counted exactly; final ones are the running totals up to the
      // cursor plus the rows finalized after it (both index ranges on (status, updated_at))
      const snap = finals()
      const [open, recent] = await Promise.all([
        db
          .selectFrom('payments')
          .select(['status', sql<string>`count(*)::text`.as('n')])
          .where('status', 'in', OPEN_STATUSES)
          .groupBy('status')
          .execute(),
        db
          .selectFrom('payments')
          .select(['status', sql<string>`count(*)::text`.as('n')])
          .where('status', 'in', FINAL)
          .where('updated_at', '>', snap.cursor)
          .groupBy('status')
          .execute(),
      ])
      this.reset()
      for (const s of [...OPEN_STATUSES, ...FINAL]) this.set({ status: s }, snap.counts.get(s) ?? 0)
      for (const r of open) this.set({ status: r.status }, Number(r.n))
      for (const r of recent) this.set({ status: r.status }, (snap.counts.get(r.status) ?? 0) + Number(r.n))
    },
  })
}

/** The settlement backlog's age, failures by reason, sign-in calls. */
function registerBacklogMetrics(registry: Registry, deps: Deps): void {
  const { db } = deps
  new Gauge({
    name: 'tollgate_settlement_backlog_oldest_seconds',
    help: 'Age of the oldest exact payment waiting for settlement (served or settling); deferred vouchers wait for collection by design',
    registers: [registry],
    async collect() {
      const r = await sql<{
        age: string | null
      }>`select extract(epoch from now() - min(updated_at))::text as age from payments where status in ('served', 'settling') and scheme = 'exact'`.execute(
        db,
      )
      this.set(Number(r.rows[0]?.age ?? 0))
    },
  })
  new Counter({
    name: 'tollgate_settlement_failures_total',
    help: 'Payments that failed to settle, by reason',
    labelNames: ['reason'],
    registers: [registry],
    async collect() {
      const rows = await db
        .selectFrom('payments')
        .select(['failure_reason', sql<string>`count(*)::text`.as('n')])
        .where('status', '=', 'failed')
        .groupBy('failure_reason')
        .execute()
      this.reset()
      for (const r of rows) this.inc({ reason: r.failure_reason ?? 'unknown' }, Number(r.n))
    },
  })
  new Counter({
    name: 'tollgate_sign_in_calls_total',
    help: 'Calls served on an x402 sign-in-with-x proof instead of a payment (paid access); counted in Redis',
    registers: [registry],
    async collect() {
      const n = await deps.redis.get(deps.key(...SIGN_IN_SERVED_KEY)).catch(() => null)
      this.reset()
      this.inc(Number(n ?? 0))
    },
  })
}

/** The relayers' ETH and the minimum /readyz asks of them. */
function registerRelayerMetrics(registry: Registry, deps: Deps): void {
  new Gauge({
    name: 'tollgate_relayer_balance_eth',
    help: 'ETH balance of each settlement relayer',
    labelNames: ['relayer'],
    registers: [registry],
    async collect() {
      this.reset()
      const funds = await relayerFunds(deps).catch(() => [])
      for (const f of funds) this.set({ relayer: f.address }, Number(formatEther(f.wei)))
    },
  })
  new Gauge({
    name: 'tollgate_relayer_min_balance_eth',
    help: 'RELAYER_MIN_ETH_WEI in ETH: below it /readyz fails',
    registers: [registry],
    collect() {
      this.set(Number(formatEther(deps.config.settlement.relayerMinEthWei)))
    },
  })
}
