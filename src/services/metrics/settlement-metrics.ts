import type { Queue } from 'bullmq'
import { sql } from 'kysely'
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import { formatEther } from 'viem'
import type { Deps } from '../../deps.js'
import { SIGN_IN_SERVED_KEY } from '../../db/access-grant-store.js'
import { relayerFunds } from './relayer-funds.js'

const OPEN = ['verified', 'served', 'settling'] as const
/** statuses a payment never leaves */
const FINAL = ['settled', 'failed', 'voided'] as const

/** Batch sizes (payments per aggregate3 transaction). */
export const BATCH_SIZE_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500] as const
/** Seconds from `served` to `settled`. */
export const LATENCY_BUCKETS = [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600] as const

interface HistogramRow {
  count: string
  sum: string | null
  [bucket: string]: string | null
}

/** Cumulative histogram state kept in memory: bucket counts, count and sum. */
interface Histogram {
  buckets: number[]
  count: number
  sum: number
}

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
  const { db } = deps
  const lagMs = opts.lagMs ?? METRICS_SETTLE_LAG_MS
  const sizes: Histogram = { buckets: BATCH_SIZE_BUCKETS.map(() => 0), count: 0, sum: 0 }
  const lat: Histogram = { buckets: LATENCY_BUCKETS.map(() => 0), count: 0, sum: 0 }
  let cursor = new Date(Date.now() - (opts.lookbackMs ?? 3_600_000))
  let advancing: Promise<void> = Promise.resolve()
  /** payments in a final status with updated_at <= cursor (counted in full once, then incrementally) */
  let finals: { cursor: Date; counts: Map<string, number> } = { cursor: new Date(0), counts: new Map() }
  let finalsCounted = false
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'tollgate_' })

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
  new Gauge({
    name: 'tollgate_payments',
    help: 'Payments by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      // open statuses are few and counted exactly; final ones are the running totals up to the
      // cursor plus the rows finalized after it (both index ranges on (status, updated_at))
      const snap = finals
      const [open, recent] = await Promise.all([
        db
          .selectFrom('payments')
          .select(['status', sql<string>`count(*)::text`.as('n')])
          .where('status', 'in', OPEN)
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
      for (const s of [...OPEN, ...FINAL]) this.set({ status: s }, snap.counts.get(s) ?? 0)
      for (const r of open) this.set({ status: r.status }, Number(r.n))
      for (const r of recent) this.set({ status: r.status }, (snap.counts.get(r.status) ?? 0) + Number(r.n))
    },
  })
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

  /** batches confirmed in (from, to]: confirmed is final, so updated_at is when it was confirmed */
  async function batchSizes(from: Date, to: Date): Promise<HistogramRow> {
    const cols = BATCH_SIZE_BUCKETS.map((b, i) => sql<string>`count(*) filter (where size <= ${b})::text`.as(`b${i}`))
    return db
      .selectFrom('settlement_batches')
      .select([...cols, sql<string>`count(*)::text`.as('count'), sql<string>`sum(size)::text`.as('sum')])
      .where('status', '=', 'confirmed')
      .where('updated_at', '>', from)
      .where('updated_at', '<=', to)
      .executeTakeFirstOrThrow() as Promise<HistogramRow>
  }

  /**
   * payments settled in (from, to]; served -> settled: the payment's first `served` event (recorded
   * served, or from verified; not a requeue from settling) to settled_at
   */
  async function latencies(from: Date, to: Date): Promise<HistogramRow> {
    const cols = LATENCY_BUCKETS.map((b, i) => sql`count(*) filter (where l <= ${b})::text as ${sql.ref(`b${i}`)}`)
    const r = await sql<HistogramRow>`
      select ${sql.join(cols)}, count(*)::text as count, sum(l)::text as sum from (
        select extract(epoch from p.settled_at - e.created_at)::float8 as l
        from payments p join payment_events e on e.payment_id = p.id and e.to_status = 'served' and e.from_status is distinct from 'settling'
        where p.status = 'settled' and p.updated_at > ${from} and p.updated_at <= ${to} and p.settled_at is not null) x`.execute(
      db,
    )
    return r.rows[0]!
  }

  /** Adds what was finalized since the cursor (one scrape at a time). */
  function advance(): Promise<void> {
    advancing = advancing
      .catch(() => {})
      .then(async () => {
        const to = new Date(Date.now() - lagMs)
        if (to <= cursor) return
        const since = finalsCounted ? cursor : new Date(0)
        const [s, l, f] = await Promise.all([
          batchSizes(cursor, to),
          latencies(cursor, to),
          db
            .selectFrom('payments')
            .select(['status', sql<string>`count(*)::text`.as('n')])
            .where('status', 'in', FINAL)
            .where('updated_at', '>', since)
            .where('updated_at', '<=', to)
            .groupBy('status')
            .execute(),
        ])
        add(sizes, s)
        add(lat, l)
        const counts = new Map(finals.counts)
        for (const r of f) counts.set(r.status, (counts.get(r.status) ?? 0) + Number(r.n))
        finals = { cursor: to, counts }
        finalsCounted = true
        cursor = to
      })
    return advancing
  }

  return {
    registry,
    contentType: registry.contentType,
    /** The exposition text: registry metrics plus the two histograms read from Postgres. */
    async render(): Promise<string> {
      await advance()
      const base = await registry.metrics()
      return (
        base +
        histogramText(
          'tollgate_settlement_batch_size',
          'Payments per settlement transaction (confirmed batches)',
          BATCH_SIZE_BUCKETS,
          sizes,
        ) +
        histogramText('tollgate_settlement_latency_seconds', 'Seconds from served to settled', LATENCY_BUCKETS, lat)
      )
    },
  }
}

export type SettlementMetrics = ReturnType<typeof createSettlementMetrics>

function add(h: Histogram, row: HistogramRow): void {
  h.buckets.forEach((_, i) => (h.buckets[i]! += Number(row[`b${i}`] ?? 0)))
  h.count += Number(row.count)
  h.sum += Number(row.sum ?? 0)
}

/** Prometheus text for a histogram whose cumulative bucket counts are already known. */
function histogramText(name: string, help: string, buckets: readonly number[], h: Histogram): string {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} histogram`]
  buckets.forEach((b, i) => lines.push(`${name}_bucket{le="${b}"} ${h.buckets[i]}`))
  lines.push(`${name}_bucket{le="+Inf"} ${h.count}`, `${name}_sum ${h.sum}`, `${name}_count ${h.count}`)
  return lines.join('\n') + '\n'
}
