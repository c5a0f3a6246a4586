/**
 * A seller's revenue per endpoint since a time (`GET /v1/revenue`, `tollgate revenue`): paid calls
 * and what they brought (payments not voided or failed), what has settled, and the vouchers
 * (`deferred` payments) not collected yet. Amounts in atomic USDC units as strings. Reads the
 * user's endpoints' payments through the ledger's (endpoint_id, created_at) index.
 */
import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { OPEN_STATUSES, UNCHARGED_STATUSES } from '../../ledger/statuses.js'
import { invalid } from '../accounts/validate.js'

interface EndpointRevenue {
  endpoint_id: string
  /** namespace/service/slug */
  path: string
  calls: number
  revenue: string
  settled: string
  /** deferred payments served or on their way, whose vouchers the seller has not collected yet */
  uncollected_vouchers: number
  uncollected: string
}

export interface Revenue {
  object: 'revenue'
  since: string
  endpoints: EndpointRevenue[]
  total: { calls: number; revenue: string; settled: string; uncollected_vouchers: number; uncollected: string }
}

/** `?since=` of GET /v1/revenue: an ISO 8601 date or time; absent, 30 days ago (a 400 naming `since` otherwise) */
export function revenueSince(raw: string | undefined): Date {
  const since = raw === undefined ? new Date(Date.now() - 30 * 86_400_000) : new Date(raw)
  if (Number.isNaN(since.getTime()) || !/^\d{4}-\d{2}-\d{2}/.test(raw ?? '2000-01-01'))
    throw invalid('since', 'expected an ISO 8601 date or time such as 2026-11-01 or 2026-11-01T12:00Z')
  return since
}

export async function revenueByEndpoint(db: Kysely<Database>, userId: string, since: Date): Promise<Revenue> {
  const rows = await sql<{
    endpoint_id: string
    path: string
    calls: string
    revenue: string
    settled: string
    uncollected_vouchers: string
    uncollected: string
  }>`
    select e.id::text as endpoint_id, sl.namespace || '/' || s.name || '/' || e.slug as path,
      count(p.id) filter (where p.status <> all(${UNCHARGED_STATUSES}::text[])) as calls,
      coalesce(sum(p.value) filter (where p.status <> all(${UNCHARGED_STATUSES}::text[])), 0)::text as revenue,
      coalesce(sum(p.value) filter (where p.status = 'settled'), 0)::text as settled,
      count(p.id) filter (where p.scheme = 'deferred' and p.status = any(${OPEN_STATUSES}::text[])) as uncollected_vouchers,
      coalesce(sum(p.value) filter (where p.scheme = 'deferred' and p.status = any(${OPEN_STATUSES}::text[])), 0)::text as uncollected
    from endpoints e
    join services s on s.id = e.service_id
    join sellers sl on sl.id = s.seller_id
    left join payments p on p.endpoint_id = e.id and p.created_at >= ${since}
    where sl.owner_user_id = ${userId}
    group by e.id, sl.namespace, s.name, e.slug
    order by sl.namespace, s.name, e.slug
  `.execute(db)
  const endpoints = rows.rows.map((r) => ({
    endpoint_id: r.endpoint_id,
    path: r.path,
    calls: Number(r.calls),
    revenue: r.revenue,
    settled: r.settled,
    uncollected_vouchers: Number(r.uncollected_vouchers),
    uncollected: r.uncollected,
  }))
  const add = (k: 'revenue' | 'settled' | 'uncollected') => endpoints.reduce((a, e) => a + BigInt(e[k]), 0n).toString()
  return {
    object: 'revenue',
    since: since.toISOString(),
    endpoints,
    total: {
      calls: endpoints.reduce((a, e) => a + e.calls, 0),
      revenue: add('revenue'),
      settled: add('settled'),
      uncollected_vouchers: endpoints.reduce((a, e) => a + e.uncollected_vouchers, 0),
      uncollected: add('uncollected'),
    },
  }
}
