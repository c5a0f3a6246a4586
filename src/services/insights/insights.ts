import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { insightsRows } from './insights-rows.js'
import { invalid } from '../accounts/validate.js'

/** The longest range one request may cover. */
export const INSIGHTS_MAX_DAYS = 366
/** The range when none is given: the last 30 UTC days, today included. */
export const INSIGHTS_DEFAULT_DAYS = 30

const DAY_MS = 86_400_000
const DATE_RE = /^\d{4}-\d{2}-\d{2}$/

export interface InsightsRange {
  /** first UTC day, YYYY-MM-DD */
  from?: string
  /** last UTC day (included), YYYY-MM-DD */
  to?: string
}

/** Per-day series over the days of the range, in order; amounts in atomic USDC units as strings. */
export interface Insights {
  object: 'insights'
  from: string
  to: string
  days: string[]
  /** paid by each of the user's agents: payments at this platform not voided or failed, and payments the platform signed for them elsewhere that the seller accepted */
  spend: Array<{ agent: string; name: string; total: string; daily: string[] }>
  /** received by each of the user's endpoints (not voided or failed), and its paid calls */
  revenue: Array<{
    endpoint_id: string
    path: string
    total: string
    calls_total: number
    daily: string[]
    calls: number[]
  }>
  /** paid calls by the user's agents (buyer) and to the user's endpoints (seller) at this platform, and how many failed (voided: not served, nothing charged; failed: not settled) */
  calls: { buyer: number[]; buyer_failures: number[]; seller: number[]; seller_failures: number[] }
  /** settled payments of the user (either side), by the day they were made: how long settlement took */
  settlement_delay: { settled: number[]; p50_ms: Array<number | null>; p95_ms: Array<number | null> }
}

function parseDay(param: string, v: string): Date {
  const d = new Date(`${v}T00:00:00Z`)
  if (!DATE_RE.test(v) || Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== v)
    throw invalid(param, 'expected a UTC date such as 2026-11-01')
  return d
}

/** The range's first day and the day after its last (exclusive end), validated. */
export function insightsRange(r: InsightsRange, now = new Date()): { start: Date; end: Date; days: string[] } {
  const today = new Date(`${now.toISOString().slice(0, 10)}T00:00:00Z`)
  const last = r.to === undefined ? today : parseDay('to', r.to)
  const first =
    r.from === undefined ? new Date(last.getTime() - (INSIGHTS_DEFAULT_DAYS - 1) * DAY_MS) : parseDay('from', r.from)
  if (first > last) throw invalid('from', 'must be on or before `to`')
  const count = Math.round((last.getTime() - first.getTime()) / DAY_MS) + 1
  if (count > INSIGHTS_MAX_DAYS)
    throw invalid('from', `a range covers at most ${INSIGHTS_MAX_DAYS} days; this one covers ${count}`)
  const days = Array.from({ length: count }, (_, i) =>
    new Date(first.getTime() + i * DAY_MS).toISOString().slice(0, 10),
  )
  return { start: first, end: new Date(last.getTime() + DAY_MS), days }
}

/**
 * The numbers behind the dashboard's charts, per UTC day over a range, for one user. Each query
 * reads only the user's rows through the history's indexes: payments by (lower(payer), created_at)
 * for the user's agents and (endpoint_id, created_at) for the user's endpoints, agent_payments by
 * (agent_id, day_window); grouping happens in Postgres, so a year of a busy seller is one pass
 * over that seller's rows, not the table (test/integration/v1/insights.test.ts checks the plans).
 *
 * @example
 *   const i = await insights(db, userId, { from: '2026-11-01', to: '2026-11-30' })
 *   i.spend[0].daily // ['0', '2000', …], one per day of i.days
 */
export async function insights(
  db: Kysely<Database>,
  userId: string,
  range: InsightsRange,
  now = new Date(),
): Promise<Insights> {
  const { start, end, days } = insightsRange(range, now)
  const index = new Map(days.map((d, i) => [d, i]))
  const zeros = () => days.map(() => '0')
  const counts = () => days.map(() => 0)

  const agents = await db
    .selectFrom('agents')
    .select(['id', 'address', 'name'])
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .orderBy('id')
    .execute()
  const endpoints = await db
    .selectFrom('endpoints as e')
    .innerJoin('services as s', 's.id', 'e.service_id')
    .innerJoin('sellers as sl', 'sl.id', 's.seller_id')
    .select(['e.id', 'sl.namespace', 's.name as service', 'e.slug'])
    .where('sl.owner_user_id', '=', userId)
    .orderBy('sl.namespace')
    .orderBy('s.name')
    .orderBy('e.slug')
    .execute()
  const mine = agents.map((a) => a.address.toLowerCase())
  const sold = endpoints.map((e) => e.id)

  const { buyer, platformSigned, seller, delay } = await insightsRows(db, {
    mine,
    agentIds: agents.map((a) => a.id),
    sold,
    start,
    end,
    days,
  })

  const spend = new Map(
    agents.map((a) => [a.address.toLowerCase(), { agent: a.address, name: a.name, daily: zeros() }]),
  )
  const add = (arr: string[], i: number, v: string) => (arr[i] = (BigInt(arr[i]!) + BigInt(v)).toString())
  const calls = { buyer: counts(), buyer_failures: counts(), seller: counts(), seller_failures: counts() }
  for (const r of buyer.rows) {
    const i = index.get(r.day)
    if (i === undefined) continue
    add(spend.get(r.agent)!.daily, i, r.amount)
    calls.buyer[i]! += r.calls - r.failures
    calls.buyer_failures[i]! += r.failures
  }
  for (const r of platformSigned.rows) {
    const i = index.get(r.day)
    if (i !== undefined && spend.has(r.agent)) add(spend.get(r.agent)!.daily, i, r.amount)
  }
  const revenue = new Map(
    endpoints.map((e) => [
      e.id,
      { endpoint_id: e.id, path: `${e.namespace}/${e.service}/${e.slug}`, daily: zeros(), calls: counts() },
    ]),
  )
  for (const r of seller.rows) {
    const i = index.get(r.day)
    const e = revenue.get(r.endpoint_id)
    if (i === undefined || !e) continue
    add(e.daily, i, r.amount)
    e.calls[i]! += r.calls
    calls.seller[i]! += r.calls
    calls.seller_failures[i]! += r.failures
  }
  const settlement = settlementDelay(delay.rows, days, index)
  const sum = (xs: string[]) => xs.reduce((a, b) => a + BigInt(b), 0n).toString()
  return {
    object: 'insights',
    from: days[0]!,
    to: days.at(-1)!,
    days,
    spend: [...spend.values()].map((s) => ({ agent: s.agent, name: s.name, total: sum(s.daily), daily: s.daily })),
    revenue: [...revenue.values()].map((e) => ({
      endpoint_id: e.endpoint_id,
      path: e.path,
      total: sum(e.daily),
      calls_total: e.calls.reduce((a, b) => a + b, 0),
      daily: e.daily,
      calls: e.calls,
    })),
    calls,
    settlement_delay: settlement,
  }
}

/** Settled payments per day and their delay percentiles, in ms (null on a day without one). */
function settlementDelay(
  rows: Array<{ day: string; settled: number; p50: number | null; p95: number | null }>,
  days: string[],
  index: Map<string, number>,
): Insights['settlement_delay'] {
  const settlement = {
    settled: days.map(() => 0),
    p50_ms: days.map(() => null as number | null),
    p95_ms: days.map(() => null as number | null),
  }
  for (const r of rows) {
    const i = index.get(r.day)
    if (i === undefined) continue
    settlement.settled[i] = r.settled
    settlement.p50_ms[i] = r.p50 === null ? null : Math.round(r.p50)
    settlement.p95_ms[i] = r.p95 === null ? null : Math.round(r.p95)
  }
  return settlement
}
