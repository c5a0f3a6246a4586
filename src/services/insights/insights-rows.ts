// The four per-day queries behind the insights of one user: spend of their agents here and
// elsewhere, revenue of their endpoints, and settlement delay of their payments (either side).
import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { UNCHARGED_STATUSES } from '../../ledger/statuses.js'

type DayRow = { day: string }

export interface InsightsScope {
  /** lower-cased addresses of the user's agents */
  mine: string[]
  /** ids of the user's agents */
  agentIds: string[]
  /** ids of the user's endpoints */
  sold: string[]
  /** the range: [start, end) and its days */
  start: Date
  end: Date
  days: string[]
}

const dayOf = (col: string) => sql.raw(`to_char(${col} at time zone 'UTC', 'YYYY-MM-DD')`)

/** The user's rows grouped by day in Postgres, through the history's indexes. */
export async function insightsRows(db: Kysely<Database>, { mine, agentIds, sold, start, end, days }: InsightsScope) {
  const [buyer, platformSigned, seller, delay] = await Promise.all([
    // the agents' payments at this platform, per agent and day
    mine.length === 0
      ? { rows: [] }
      : sql<DayRow & { agent: string; amount: string; calls: number; failures: number }>`
          select lower(p.payer) as agent, ${dayOf('p.created_at')} as day,
                 coalesce(sum(p.value) filter (where p.status <> all(${UNCHARGED_STATUSES}::text[])), 0)::text as amount,
                 count(*)::int as calls, count(*) filter (where p.status = any(${UNCHARGED_STATUSES}::text[]))::int as failures
          from payments p
          where lower(p.payer) = any(${mine}::text[]) and p.created_at >= ${start} and p.created_at < ${end}
          group by 1, 2`.execute(db),
    // what the platform signed for them and a seller elsewhere accepted (a payment at this platform is counted above)
    agentIds.length === 0
      ? { rows: [] }
      : sql<DayRow & { agent: string; amount: string }>`
          select lower(ap.payer) as agent, ap.day_window as day, sum(ap.amount)::text as amount
          from agent_payments ap
          where ap.agent_id = any(${agentIds}::uuid[]) and ap.day_window >= ${days[0]} and ap.day_window <= ${days.at(-1)}
            and ap.status = 'accepted' and not exists (select 1 from payments p where p.payer = ap.payer and p.nonce = ap.nonce)
          group by 1, 2`.execute(db),
    sold.length === 0
      ? { rows: [] }
      : sql<DayRow & { endpoint_id: string; amount: string; calls: number; failures: number }>`
          select p.endpoint_id::text as endpoint_id, ${dayOf('p.created_at')} as day,
                 coalesce(sum(p.value) filter (where p.status <> all(${UNCHARGED_STATUSES}::text[])), 0)::text as amount,
                 count(*) filter (where p.status <> all(${UNCHARGED_STATUSES}::text[]))::int as calls, count(*) filter (where p.status = any(${UNCHARGED_STATUSES}::text[]))::int as failures
          from payments p
          where p.endpoint_id = any(${sold}::uuid[]) and p.created_at >= ${start} and p.created_at < ${end}
          group by 1, 2`.execute(db),
    mine.length + sold.length === 0
      ? { rows: [] }
      : sql<DayRow & { settled: number; p50: number | null; p95: number | null }>`
          select ${dayOf('p.created_at')} as day, count(*)::int as settled,
                 percentile_cont(0.5) within group (order by extract(epoch from p.settled_at - p.created_at) * 1000) as p50,
                 percentile_cont(0.95) within group (order by extract(epoch from p.settled_at - p.created_at) * 1000) as p95
          from payments p
          where (lower(p.payer) = any(${mine}::text[]) or p.endpoint_id = any(${sold}::uuid[]))
            and p.created_at >= ${start} and p.created_at < ${end} and p.status = 'settled' and p.settled_at is not null
          group by 1`.execute(db),
  ])

  return { buyer, platformSigned, seller, delay }
}
