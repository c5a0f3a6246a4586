import { Readable } from 'node:stream'
import { sql, type Kysely, type RawBuilder } from 'kysely'
import pg from 'pg'
import QueryStream from 'pg-query-stream'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { address as parseAddress, invalid } from './validate.js'

/**
 * Transaction history (payments) and payment events of a user, as pages or as streamed exports.
 * A user's transactions are payments made by one of the user's agents (role buyer) or received by
 * an endpoint of one of the user's sellers (role seller). Order is chronological (created_at, id) by
 * default, so a cursor is also a resumable sync position; `desc` lists the newest first.
 */

export type HistoryKind = 'transactions' | 'payment_events'
export type HistoryOrder = 'asc' | 'desc'

export interface HistoryFilters {
  from?: string
  to?: string
  agent?: string
  role?: 'buyer' | 'seller'
  order?: HistoryOrder
  cursor?: string
}

// Timestamps as text with microseconds: JS Dates would drop them and break cursors and exact exports.
const ts = (col: string) => sql.raw(`to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`)

export const TRANSACTION_COLUMNS = [
  'id', 'created_at', 'updated_at', 'status', 'payer', 'pay_to', 'value', 'asset', 'network', 'scheme', 'x402_version',
  'resource', 'method', 'endpoint_id', 'settlement_mode', 'nonce', 'valid_after', 'valid_before', 'tx_hash', 'failure_reason', 'settled_at',
] as const
export const EVENT_COLUMNS = ['id', 'payment_id', 'created_at', 'type', 'from_status', 'to_status', 'reason', 'data'] as const

export function columnsOf(kind: HistoryKind): readonly string[] {
  return kind === 'transactions' ? TRANSACTION_COLUMNS : EVENT_COLUMNS
}

// An asc cursor is [created_at, id], as before `order` existed (clients hold such cursors);
// a desc cursor adds 'desc', so it cannot be replayed with the other order (rows would be skipped or repeated).
function encodeCursor(createdAt: string, id: string, order: HistoryOrder): string {
  return Buffer.from(JSON.stringify(order === 'desc' ? [createdAt, id, 'desc'] : [createdAt, id])).toString('base64url')
}

function decodeCursor(kind: HistoryKind, c: string, order: HistoryOrder): [string, string] {
  let cursor: { at: string; id: string; order: HistoryOrder }
  try {
    const parts = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as unknown
    if (!Array.isArray(parts) || !(parts.length === 2 || (parts.length === 3 && parts[2] === 'desc'))) throw new Error()
    const [at, id] = parts as unknown[]
    if (typeof at !== 'string' || !isTimestamp(at) || typeof id !== 'string') throw new Error()
    if (kind === 'transactions' ? !UUID_RE.test(id) : !/^[0-9]{1,19}$/.test(id) || BigInt(id) > BIGINT_MAX) throw new Error()
    cursor = { at, id, order: parts.length === 3 ? 'desc' : 'asc' }
  } catch {
    throw invalid('cursor', 'not a cursor returned by this list')
  }
  if (cursor.order !== order) throw invalid('cursor', `this cursor is for order=${cursor.order}; send it with order=${cursor.order}, or leave out the cursor to start again`)
  return [cursor.at, cursor.id]
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const BIGINT_MAX = (1n << 63n) - 1n
// what Postgres reads as a timestamptz the same way JavaScript does: a date, optionally a time and an offset
const TIMESTAMP_RE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/

/** An ISO 8601 date or timestamp between the years 1 and 9999 whose day exists in its month. */
export function isTimestamp(v: string): boolean {
  const m = TIMESTAMP_RE.exec(v)
  if (!m || Number.isNaN(Date.parse(v.replace(' ', 'T')))) return false
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])]
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month)
}

function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!
}

function timestamp(param: string, v: string | undefined): string | undefined {
  if (v === undefined) return undefined
  if (!isTimestamp(v)) throw invalid(param, 'expected an ISO 8601 date or timestamp such as 2026-11-01 or 2026-11-01T00:00:00Z')
  return v
}

/**
 * What a user's history is made of: the lower-case addresses of the user's agents (buyer side) and
 * the ids of the endpoints the user sells (seller side). Read first, in their own statement, so the
 * history query gets them as constants: Postgres then estimates from its statistics how many
 * payments they hold, instead of guessing for a subquery.
 */
export interface HistoryScope {
  mine: string[]
  sold: string[]
}

export function scopeQuery(userId: string): RawBuilder<HistoryScope> {
  return sql<HistoryScope>`select
      array(select lower(a.address) from agents a where a.user_id = ${userId}) as mine,
      array(select e.id::text from endpoints e join services s on s.id = e.service_id join sellers sl on sl.id = s.seller_id where sl.owner_user_id = ${userId}) as sold`
}

interface Parsed {
  from?: string
  to?: string
  agent?: string
  role?: 'buyer' | 'seller'
  order: HistoryOrder
  cursor?: [string, string]
}

function parse(kind: HistoryKind, f: HistoryFilters): Parsed {
  const from = timestamp('from', f.from)
  const to = timestamp('to', f.to)
  const agent = f.agent === undefined ? undefined : parseAddress('agent', f.agent).toLowerCase()
  if (f.role !== undefined && f.role !== 'buyer' && f.role !== 'seller') throw invalid('role', 'expected buyer or seller')
  if (f.order !== undefined && f.order !== 'asc' && f.order !== 'desc') throw invalid('order', 'expected asc or desc')
  const order = f.order ?? 'asc'
  const cursor = f.cursor === undefined ? undefined : decodeCursor(kind, f.cursor, order)
  return { from, to, agent, role: f.role, order, cursor }
}

const TRANSACTION_SELECT = sql`select p.id::text as id, ${ts('p.created_at')} as created_at, ${ts('p.updated_at')} as updated_at, p.status, p.payer, p.pay_to,
    p.value::text as value, p.asset, p.network, p.scheme, p.x402_version, p.resource, p.method, p.endpoint_id::text as endpoint_id,
    p.settlement_mode, p.nonce, p.valid_after::text as valid_after, p.valid_before::text as valid_before, p.tx_hash, p.failure_reason,
    ${ts('p.settled_at')} as settled_at`
const EVENT_SELECT = sql`select ev.id::text as id, ev.payment_id::text as payment_id, ${ts('ev.created_at')} as created_at, ev.type, ev.from_status, ev.to_status,
    ev.reason, ev.data::text as data`

/**
 * A history query, shared by pages and exports. The user filter is "payer is one of the user's
 * agents, or the endpoint is one of the user's" over the scope's constants, which the indexes
 * payments (lower(payer), created_at, id) and (endpoint_id, created_at, id) start with.
 *
 * A transactions page (no agent filter) reads each agent's and each endpoint's payments in order
 * from those indexes, at most a page from each, and sorts those few rows: its cost grows with the
 * page size and the user's agents and endpoints, not with the table, whatever the user's share.
 * Exports, event lists and agent-filtered pages are left to the planner, which knows from the
 * constants whether the user's rows are few (read them by the indexes and sort) or many (for
 * events: walk payment_events_created_idx and keep the user's). See
 * migrations/2026-11-23T0300-history-indexes.ts and test/integration/v1-history-scale.test.ts.
 */
function query(kind: HistoryKind, scope: HistoryScope, f: Parsed, limit: number | undefined): RawBuilder<Record<string, unknown>> {
  const buyer = sql`lower(p.payer) = any(${scope.mine}::text[])`
  const seller = sql`p.endpoint_id = any(${scope.sold}::uuid[])`
  const t = kind === 'transactions' ? sql.raw('p') : sql.raw('ev')
  const range: RawBuilder<unknown>[] = []
  if (f.from) range.push(sql`${t}.created_at >= ${f.from}::timestamptz`)
  if (f.to) range.push(sql`${t}.created_at < ${f.to}::timestamptz`)
  // rows past the cursor in the chosen order; desc reads the same indexes backwards
  const past = sql.raw(f.order === 'desc' ? '<' : '>')
  const dir = sql.raw(f.order === 'desc' ? ' desc' : '')
  if (f.cursor) range.push(kind === 'transactions' ? sql`(p.created_at, p.id) ${past} (${f.cursor[0]}::timestamptz, ${f.cursor[1]}::uuid)` : sql`(ev.created_at, ev.id) ${past} (${f.cursor[0]}::timestamptz, ${f.cursor[1]}::bigint)`)
  const lim = limit === undefined ? sql`` : sql`limit ${limit}`
  const and = (conds: RawBuilder<unknown>[]) => (conds.length ? sql.join(conds, sql` and `) : sql`true`)

  if (kind === 'transactions' && limit !== undefined && f.agent === undefined) {
    // one ordered, bounded index read per agent and per endpoint; a payment both bought and sold
    // by the user comes from the buyer side only
    const sides: RawBuilder<unknown>[] = []
    const page = (key: RawBuilder<unknown>) => sql`select p.* from payments p where ${and([key, ...range])} order by p.created_at${dir}, p.id${dir} ${lim}`
    if (f.role !== 'seller') sides.push(sql`select p.* from unnest(${scope.mine}::text[]) k(payer) cross join lateral (${page(sql`lower(p.payer) = k.payer`)}) p`)
    if (f.role !== 'buyer') {
      const key = f.role === 'seller' ? sql`p.endpoint_id = k.id` : sql`p.endpoint_id = k.id and not ${buyer}`
      sides.push(sql`select p.* from unnest(${scope.sold}::uuid[]) k(id) cross join lateral (${page(key)}) p`)
    }
    return sql`${TRANSACTION_SELECT} from (${sql.join(sides, sql` union all `)}) p order by p.created_at${dir}, p.id${dir} ${lim}`
  }

  const conds: RawBuilder<unknown>[] = [f.role === 'buyer' ? buyer : f.role === 'seller' ? seller : sql`(${buyer} or ${seller})`]
  if (f.agent) conds.push(sql`lower(p.payer) = ${f.agent}`)
  conds.push(...range)
  if (kind === 'transactions') return sql`${TRANSACTION_SELECT} from payments p where ${and(conds)} order by p.created_at${dir}, p.id${dir} ${lim}`
  return sql`${EVENT_SELECT} from payment_events ev join payments p on p.id = ev.payment_id where ${and(conds)} order by ev.created_at${dir}, ev.id${dir} ${lim}`
}

/** NDJSON/JSON shape of a row: jsonb `data` as an object, everything else as the database text. */
function shape(kind: HistoryKind, row: Record<string, unknown>): Record<string, unknown> {
  const object = kind === 'transactions' ? 'transaction' : 'payment_event'
  if (kind === 'payment_events') return { object, ...row, data: row.data === null ? null : JSON.parse(row.data as string) }
  return { object, ...row }
}

function csvField(v: unknown): string {
  if (v === null || v === undefined) return ''
  const s = String(v)
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
}

export function csvLine(kind: HistoryKind, row: Record<string, unknown>): string {
  return columnsOf(kind).map((c) => csvField(row[c])).join(',') + '\r\n'
}

export interface HistoryDeps {
  db: Kysely<Database>
  databaseUrl: string
  databaseSchema: string
}

export function historyService(deps: HistoryDeps) {
  return {
    /** One page (1–100 rows) and the cursor of the next. */
    async page(kind: HistoryKind, userId: string, f: HistoryFilters, limit: number) {
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw invalid('limit', 'expected an integer from 1 to 100')
      const parsed = parse(kind, f)
      const scope = (await scopeQuery(userId).execute(deps.db)).rows[0]!
      const { rows } = await query(kind, scope, parsed, limit + 1).execute(deps.db)
      const hasMore = rows.length > limit
      const data = rows.slice(0, limit)
      const last = data.at(-1)
      return {
        object: 'list' as const,
        data: data.map((r) => shape(kind, r)),
        has_more: hasMore,
        next_cursor: hasMore && last ? encodeCursor(last.created_at as string, last.id as string, f.order ?? 'asc') : null,
      }
    },

    /**
     * The whole filtered history as CSV (header line first) or NDJSON, read through a server-side
     * cursor on its own connection, batch by batch as the client reads: memory stays bounded by
     * the batch size whatever the row count.
     */
    export(kind: HistoryKind, userId: string, f: HistoryFilters, format: 'csv' | 'ndjson'): Readable {
      const parsed = parse(kind, f)
      const scoped = scopeQuery(userId).compile(deps.db)
      async function* lines(): AsyncGenerator<string> {
        const client = new pg.Client({ connectionString: deps.databaseUrl, options: `-c search_path=${deps.databaseSchema} -c jit=off` })
        client.on('error', () => {})
        await client.connect()
        try {
          const scope = (await client.query<HistoryScope>(scoped.sql, scoped.parameters as unknown[])).rows[0]!
          const compiled = query(kind, scope, parsed, undefined).compile(deps.db)
          if (format === 'csv') yield columnsOf(kind).join(',') + '\r\n'
          const stream = client.query(new QueryStream(compiled.sql, compiled.parameters as unknown[], { batchSize: 1000 }))
          try {
            let buf = ''
            let n = 0
            for await (const row of stream as AsyncIterable<Record<string, unknown>>) {
              buf += format === 'csv' ? csvLine(kind, row) : JSON.stringify(shape(kind, row)) + '\n'
              // hand out ~1000 rows at a time: fewer, larger chunks, still bounded
              if (++n % 1000 === 0) {
                yield buf
                buf = ''
              }
            }
            if (buf) yield buf
          } finally {
            stream.destroy()
          }
        } finally {
          await client.end().catch(() => {})
        }
      }
      return Readable.from(lines(), { objectMode: false, highWaterMark: 1 })
    },

    /** Validates filters before a streamed export starts (errors must come before the 200 header). */
    validate(kind: HistoryKind, userId: string, f: HistoryFilters): void {
      try {
        parse(kind, f)
      } catch (err) {
        if ((err as { code?: string }).code) throw err
        throw appError('bad_request', { detail: 'invalid filters' })
      }
    },
  }
}

export type HistoryService = ReturnType<typeof historyService>
