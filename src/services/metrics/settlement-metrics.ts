import type { Queue } from 'bullmq'
import { sql } from 'kysely'
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import { formatEther } from 'viem'
import type { Deps } from '../../deps.js'
import { relayerFunds } from './relayer-funds.js'

/** Batch sizes (payments per aggregate3 transaction). */
export const BATCH_SIZE_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500] as const
/** Seconds from `served` to `settled`. */
export const LATENCY_BUCKETS = [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600] as const

interface HistogramRow {
  count: string
  sum: string | null
  [bucket: string]: string | null
}

/**
 * Prometheus metrics of settlement, computed at scrape time from Postgres (payments, events,
 * batches), Redis (the BullMQ `settlement` queue) and the chain (relayer ETH), so the web role
 * can serve them while the worker role, which has no HTTP port, does the work. Histograms are
 * cumulative over the whole history, as Prometheus expects of a counter.
 *
 * @example
 *   const metrics = settlementMetrics(deps, settlementQueue(deps.config))
 *   reply.type(metrics.contentType).send(await metrics.render())
 */
export function settlementMetrics(deps: Deps, queue: Pick<Queue, 'getJobCounts'>) {
  const { db } = deps
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'tollgate_' })

  new Gauge({
    name: 'tollgate_settlement_queue_jobs',
    help: 'Jobs in the BullMQ settlement queue, by state',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'failed')
      for (const [state, n] of Object.entries(counts)) this.set({ state }, n)
    },
  })
  new Gauge({
    name: 'tollgate_payments',
    help: 'Payments by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const rows = await db.selectFrom('payments').select(['status', sql<string>`count(*)::text`.as('n')]).groupBy('status').execute()
      this.reset()
      for (const s of ['verified', 'served', 'settling', 'settled', 'failed', 'voided']) this.set({ status: s }, 0)
      for (const r of rows) this.set({ status: r.status }, Number(r.n))
    },
  })
  new Gauge({
    name: 'tollgate_settlement_backlog_oldest_seconds',
    help: 'Age of the oldest payment waiting for settlement (served or settling)',
    registers: [registry],
    async collect() {
      const r = await sql<{ age: string | null }>`select extract(epoch from now() - min(updated_at))::text as age from payments where status in ('served', 'settling')`.execute(db)
      this.set(Number(r.rows[0]?.age ?? 0))
    },
  })
  new Counter({
    name: 'tollgate_settlement_failures_total',
    help: 'Payments that failed to settle, by reason',
    labelNames: ['reason'],
    registers: [registry],
    async collect() {
      const rows = await db.selectFrom('payments').select(['failure_reason', sql<string>`count(*)::text`.as('n')]).where('status', '=', 'failed').groupBy('failure_reason').execute()
      this.reset()
      for (const r of rows) this.inc({ reason: r.failure_reason ?? 'unknown' }, Number(r.n))
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

  async function batchSizes(): Promise<HistogramRow> {
    const cols = BATCH_SIZE_BUCKETS.map((b, i) => sql<string>`count(*) filter (where size <= ${b})::text`.as(`b${i}`))
    return db
      .selectFrom('settlement_batches')
      .select([...cols, sql<string>`count(*)::text`.as('count'), sql<string>`sum(size)::text`.as('sum')])
      .where('status', '=', 'confirmed')
      .executeTakeFirstOrThrow() as Promise<HistogramRow>
  }

  async function latencies(): Promise<HistogramRow> {
    // served -> settled: the first `served` event (from verified) to the payment's settled_at
    const cols = LATENCY_BUCKETS.map((b, i) => sql`count(*) filter (where l <= ${b})::text as ${sql.ref(`b${i}`)}`)
    const r = await sql<HistogramRow>`
      select ${sql.join(cols)}, count(*)::text as count, sum(l)::text as sum from (
        select extract(epoch from p.settled_at - e.created_at)::float8 as l
        from payments p join payment_events e on e.payment_id = p.id and e.to_status = 'served' and e.from_status = 'verified'
        where p.status = 'settled' and p.settled_at is not null) x`.execute(db)
    return r.rows[0]!
  }

  return {
    registry,
    contentType: registry.contentType,
    /** The exposition text: registry metrics plus the two histograms read from Postgres. */
    async render(): Promise<string> {
      const [base, sizes, lat] = await Promise.all([registry.metrics(), batchSizes(), latencies()])
      return (
        base +
        histogramText('tollgate_settlement_batch_size', 'Payments per settlement transaction (confirmed batches)', BATCH_SIZE_BUCKETS, sizes) +
        histogramText('tollgate_settlement_latency_seconds', 'Seconds from served to settled', LATENCY_BUCKETS, lat)
      )
    },
  }
}

export type SettlementMetrics = ReturnType<typeof settlementMetrics>

/** Prometheus text for a histogram whose cumulative bucket counts are already known. */
function histogramText(name: string, help: string, buckets: readonly number[], row: HistogramRow): string {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} histogram`]
  buckets.forEach((b, i) => lines.push(`${name}_bucket{le="${b}"} ${Number(row[`b${i}`] ?? 0)}`))
  lines.push(`${name}_bucket{le="+Inf"} ${Number(row.count)}`, `${name}_sum ${Number(row.sum ?? 0)}`, `${name}_count ${Number(row.count)}`)
  return lines.join('\n') + '\n'
}
