import { sql } from 'kysely'
import type { CoreDeps as Deps } from '../../core-deps.js'
import { FINAL_STATUSES } from '../../ledger/statuses.js'

/*
 * The incremental part of the settlement metrics: the batch-size and latency histograms and the
 * running totals of final payment statuses, each scrape adding only what was finalized since the
 * last one (a cursor on updated_at, one advance at a time).
 */

/** statuses a payment never leaves */
export const FINAL = [...FINAL_STATUSES]

/** Batch sizes (payments per aggregate3 transaction). */
const BATCH_SIZE_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500] as const
/** Seconds from `served` to `settled`. */
const LATENCY_BUCKETS = [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600] as const

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

/** Payments in a final status with updated_at <= cursor (counted in full once, then incrementally). */
export interface FinalTotals {
  cursor: Date
  counts: Map<string, number>
}

export class SettlementHistograms {
  private readonly sizes: Histogram = { buckets: BATCH_SIZE_BUCKETS.map(() => 0), count: 0, sum: 0 }
  private readonly lat: Histogram = { buckets: LATENCY_BUCKETS.map(() => 0), count: 0, sum: 0 }
  private cursor: Date
  private advancing: Promise<void> = Promise.resolve()
  private finalsCounted = false
  /** the running totals of final statuses, up to their cursor */
  finals: FinalTotals = { cursor: new Date(0), counts: new Map() }

  constructor(
    private readonly db: Deps['db'],
    private readonly lagMs: number,
    lookbackMs: number,
  ) {
    this.cursor = new Date(Date.now() - lookbackMs)
  }

  /** Adds what was finalized since the cursor (one scrape at a time). */
  advance(): Promise<void> {
    this.advancing = this.advancing.catch(() => {}).then(() => this.step())
    return this.advancing
  }

  private async step(): Promise<void> {
    const to = new Date(Date.now() - this.lagMs)
    const cursor = this.cursor
    if (to <= cursor) return
    const since = this.finalsCounted ? cursor : new Date(0)
    const [s, l, f] = await Promise.all([
      this.batchSizes(cursor, to),
      this.latencies(cursor, to),
      this.db
        .selectFrom('payments')
        .select(['status', sql<string>`count(*)::text`.as('n')])
        .where('status', 'in', FINAL)
        .where('updated_at', '>', since)
        .where('updated_at', '<=', to)
        .groupBy('status')
        .execute(),
    ])
    add(this.sizes, s)
    add(this.lat, l)
    const counts = new Map(this.finals.counts)
    for (const r of f) counts.set(r.status, (counts.get(r.status) ?? 0) + Number(r.n))
    this.finals = { cursor: to, counts }
    this.finalsCounted = true
    this.cursor = to
  }

  /** batches confirmed in (from, to]: confirmed is final, so updated_at is when it was confirmed */
  private async batchSizes(from: Date, to: Date): Promise<HistogramRow> {
    const cols = BATCH_SIZE_BUCKETS.map((b, i) => sql<string>`count(*) filter (where size <= ${b})::text`.as(`b${i}`))
    return this.db
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
  private async latencies(from: Date, to: Date): Promise<HistogramRow> {
    const cols = LATENCY_BUCKETS.map((b, i) => sql`count(*) filter (where l <= ${b})::text as ${sql.ref(`b${i}`)}`)
    const r = await sql<HistogramRow>`
      select ${sql.join(cols)}, count(*)::text as count, sum(l)::text as sum from (
        select extract(epoch from p.settled_at - e.created_at)::float8 as l
        from payments p join payment_events e on e.payment_id = p.id and e.to_status = 'served' and e.from_status is distinct from 'settling'
        where p.status = 'settled' and p.updated_at > ${from} and p.updated_at <= ${to} and p.settled_at is not null) x`.execute(
      this.db,
    )
    return r.rows[0]!
  }

  /** The two histograms as Prometheus text. */
  text(): string {
    return (
      histogramText(
        'tollgate_settlement_batch_size',
        'Payments per settlement transaction (confirmed batches)',
        BATCH_SIZE_BUCKETS,
        this.sizes,
      ) +
      histogramText('tollgate_settlement_latency_seconds', 'Seconds from served to settled', LATENCY_BUCKETS, this.lat)
    )
  }
}

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
