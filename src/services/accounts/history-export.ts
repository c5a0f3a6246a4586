import { Readable } from 'node:stream'
import { sql, type Kysely } from 'kysely'
import pg from 'pg'
import QueryStream from 'pg-query-stream'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { PAYMENT_STATUSES } from '../../ledger/statuses.js'
import { historyQuery, scopeQuery, type HistoryKind, type HistoryScope, type ParsedFilters } from './history-query.js'
import { address as parseAddress, invalid } from './validate.js'

export { scopeQuery, type HistoryKind, type HistoryScope } from './history-query.js'

/**
 * Transaction history (payments) and payment events of a user, as pages or as streamed exports.
 * A user's transactions are payments made by one of the user's agents (role buyer) or received by
 * an endpoint of one of the user's sellers (role seller), the calls served on a sign-in with such a
 * payment's access grant (kind `sign_in`, amount 0, from access_uses), and withdrawals. Order is chronological (created_at, id) by
 * default, so a cursor is also a resumable sync position; `desc` lists the newest first.
 */

export type HistoryOrder = 'asc' | 'desc'

export interface HistoryFilters {
  from?: string
  to?: string
  agent?: string
  role?: 'buyer' | 'seller'
  order?: HistoryOrder
  cursor?: string
  /** payment | sign_in | withdrawal; all by default */
  kind?: string
  /** comma-separated statuses (payments': verified … failed; withdrawals': pending, confirmed, failed) */
  status?: string
  /** payments to endpoints whose path (/namespace/service/slug) contains this text, any case (withdrawals left out) */
  endpoint?: string
  /** payments to sellers whose namespace or display name contains this text, any case (withdrawals left out) */
  seller?: string
}

/**
 * What a transaction row may be: a payment (x402, buyer or seller side), a call served on a sign-in
 * (x402 sign-in-with-x: nothing paid, on the access a payment bought) or a withdrawal (money out of
 * one of the user's wallets).
 */
export const TRANSACTION_KINDS = ['payment', 'sign_in', 'withdrawal'] as const
export const WITHDRAWAL_STATUSES = ['pending', 'confirmed', 'failed'] as const

export const TRANSACTION_COLUMNS = [
  'id',
  'created_at',
  'updated_at',
  'status',
  'payer',
  'pay_to',
  'value',
  'asset',
  'network',
  'scheme',
  'x402_version',
  'resource',
  'method',
  'endpoint_id',
  'settlement_mode',
  'nonce',
  'valid_after',
  'valid_before',
  'tx_hash',
  'failure_reason',
  'settled_at',
  'kind',
  // a deferred call's voucher (its id, nonce and valueAggregate); `tx_hash` is then the collectMany that settled it
  'voucher_id',
  'voucher_nonce',
  'voucher_value_aggregate',
  // a sign_in row's access grant: the payment that bought it and its scope (the endpoint, or its service)
  'grant_payment_id',
  'grant_scope_id',
] as const
export const EVENT_COLUMNS = [
  'id',
  'payment_id',
  'created_at',
  'type',
  'from_status',
  'to_status',
  'reason',
  'data',
  'withdrawal_id',
] as const

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
    if (kind === 'transactions' ? !UUID_RE.test(id) : !/^[0-9]{1,19}$/.test(id) || BigInt(id) > BIGINT_MAX)
      throw new Error()
    cursor = { at, id, order: parts.length === 3 ? 'desc' : 'asc' }
  } catch {
    throw invalid('cursor', 'not a cursor returned by this list')
  }
  if (cursor.order !== order)
    throw invalid(
      'cursor',
      `this cursor is for order=${cursor.order}; send it with order=${cursor.order}, or leave out the cursor to start again`,
    )
  return [cursor.at, cursor.id]
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const BIGINT_MAX = (1n << 63n) - 1n
// what Postgres reads as a timestamptz the same way JavaScript does: a date, optionally a time and an offset
const TIMESTAMP_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/

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
  if (!isTimestamp(v))
    throw invalid(param, 'expected an ISO 8601 date or timestamp such as 2026-11-01 or 2026-11-01T00:00:00Z')
  return v
}

function parseKinds(kind: HistoryKind, f: HistoryFilters): Pick<ParsedFilters, 'payments' | 'withdrawals' | 'signIns'> {
  if (f.kind !== undefined && !(TRANSACTION_KINDS as readonly string[]).includes(f.kind))
    throw invalid('kind', `expected one of ${TRANSACTION_KINDS.join(', ')}`)
  let payments: ParsedFilters['payments'] = f.kind === 'withdrawal' || f.kind === 'sign_in' ? null : {}
  // withdrawals belong to neither role: `role` lists payments alone
  let withdrawals: ParsedFilters['withdrawals'] =
    f.kind === 'payment' || f.kind === 'sign_in' || f.role !== undefined ? null : {}
  // sign-ins are not payments: the payment events list has none
  let signIns = kind === 'transactions' && (f.kind === undefined || f.kind === 'sign_in')
  if (f.status !== undefined) {
    if (kind !== 'transactions')
      throw invalid('status', 'payment events are filtered by type, not status; filter /v1/transactions by status')
    const list = f.status
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean)
    const known = new Set<string>([...PAYMENT_STATUSES, ...WITHDRAWAL_STATUSES])
    const bad = list.find((x) => !known.has(x))
    if (list.length === 0 || bad !== undefined)
      throw invalid('status', `expected a comma-separated list of ${[...known].join(', ')}`)
    if (payments) payments = { statuses: list.filter((x) => (PAYMENT_STATUSES as readonly string[]).includes(x)) }
    if (withdrawals)
      withdrawals = { statuses: list.filter((x) => (WITHDRAWAL_STATUSES as readonly string[]).includes(x)) }
    if (payments?.statuses?.length === 0) payments = null
    if (withdrawals?.statuses?.length === 0) withdrawals = null
    signIns &&= list.includes('served')
  }
  return { payments, withdrawals, signIns }
}

function parse(kind: HistoryKind, f: HistoryFilters): ParsedFilters {
  const from = timestamp('from', f.from)
  const to = timestamp('to', f.to)
  const agent = f.agent === undefined ? undefined : parseAddress('agent', f.agent).toLowerCase()
  if (f.role !== undefined && f.role !== 'buyer' && f.role !== 'seller')
    throw invalid('role', 'expected buyer or seller')
  if (f.order !== undefined && f.order !== 'asc' && f.order !== 'desc') throw invalid('order', 'expected asc or desc')
  const order = f.order ?? 'asc'
  const cursor = f.cursor === undefined ? undefined : decodeCursor(kind, f.cursor, order)
  const parsed: ParsedFilters = { from, to, agent, role: f.role, order, cursor, ...parseKinds(kind, f) }
  const search = { endpoint: searchText('endpoint', f.endpoint), seller: searchText('seller', f.seller) }
  if (search.endpoint !== undefined || search.seller !== undefined) {
    // only payments and sign-ins have an endpoint
    parsed.search = search
    parsed.withdrawals = null
  }
  return parsed
}

function searchText(param: string, v: string | undefined): string | undefined {
  if (v === undefined || v.trim() === '') return undefined
  if (v.length > 200) throw invalid(param, 'expected at most 200 characters of text to search for')
  return v.trim()
}

/** The ids of the endpoints the `endpoint` and `seller` texts match (contained, any case). */
async function endpointsMatching(
  db: Kysely<Database>,
  search: NonNullable<ParsedFilters['search']>,
): Promise<string[]> {
  const like = (t: string) => `%${t.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
  let q = db
    .selectFrom('endpoints as e')
    .innerJoin('services as s', 's.id', 'e.service_id')
    .innerJoin('sellers as sl', 'sl.id', 's.seller_id')
    .select('e.id')
  if (search.endpoint !== undefined)
    q = q.where(sql`'/' || sl.namespace || '/' || s.name || '/' || e.slug`, 'ilike', like(search.endpoint))
  if (search.seller !== undefined) {
    const text = like(search.seller)
    q = q.where((w) => w.or([w('sl.namespace', 'ilike', text), w('sl.display_name', 'ilike', text)]))
  }
  return (await q.execute()).map((e) => e.id)
}

/** With a search: its endpoint ids (resolved once, before the history query). */
async function resolveSearch(db: Kysely<Database>, parsed: ParsedFilters): Promise<ParsedFilters> {
  return parsed.search ? { ...parsed, endpoints: await endpointsMatching(db, parsed.search) } : parsed
}

/**
 * Names for a page's payees: per endpoint id, its path and its seller's namespace and display name
 * (JSON pages only; the exports keep their columns).
 */
async function payeeNames(db: Kysely<Database>, rows: Record<string, unknown>[]) {
  const ids = [...new Set(rows.map((r) => r.endpoint_id).filter((x): x is string => typeof x === 'string'))]
  if (ids.length === 0) return new Map<string, { endpoint_path: string; seller: string; seller_name: string }>()
  const found = await db
    .selectFrom('endpoints as e')
    .innerJoin('services as s', 's.id', 'e.service_id')
    .innerJoin('sellers as sl', 'sl.id', 's.seller_id')
    .select(['e.id', 'e.slug', 's.name', 'sl.namespace', 'sl.display_name'])
    .where('e.id', 'in', ids)
    .execute()
  return new Map(
    found.map((e) => [
      e.id,
      { endpoint_path: `/${e.namespace}/${e.name}/${e.slug}`, seller: e.namespace, seller_name: e.display_name },
    ]),
  )
}

/** NDJSON/JSON shape of a row: jsonb `data` as an object, everything else as the database text. */
function shape(kind: HistoryKind, row: Record<string, unknown>): Record<string, unknown> {
  const object = kind === 'transactions' ? 'transaction' : row.withdrawal_id ? 'withdrawal_event' : 'payment_event'
  if (kind === 'payment_events')
    return { object, ...row, data: row.data === null ? null : JSON.parse(row.data as string) }
  return { object, ...row }
}

function csvField(v: unknown): string {
  if (v === null || v === undefined) return ''
  const s = String(v)
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
}

export function csvLine(kind: HistoryKind, row: Record<string, unknown>): string {
  return (
    columnsOf(kind)
      .map((c) => csvField(row[c]))
      .join(',') + '\r\n'
  )
}

export interface HistoryDeps {
  db: Kysely<Database>
  databaseUrl: string
  databaseSchema: string
}

export function createHistory(deps: HistoryDeps) {
  return {
    /** One page (1–100 rows) and the cursor of the next. */
    async page(kind: HistoryKind, userId: string, f: HistoryFilters, limit: number) {
      if (!Number.isInteger(limit) || limit < 1 || limit > 100)
        throw invalid('limit', 'expected an integer from 1 to 100')
      const parsed = await resolveSearch(deps.db, parse(kind, f))
      const scope = (await scopeQuery(userId).execute(deps.db)).rows[0]!
      const { rows } = await historyQuery(kind, scope, parsed, limit + 1).execute(deps.db)
      const hasMore = rows.length > limit
      const data = rows.slice(0, limit)
      const last = data.at(-1)
      const names = kind === 'transactions' ? await payeeNames(deps.db, data) : new Map()
      return {
        object: 'list' as const,
        data: data.map((r) => ({ ...shape(kind, r), ...names.get(r.endpoint_id as string) })),
        has_more: hasMore,
        next_cursor:
          hasMore && last ? encodeCursor(last.created_at as string, last.id as string, f.order ?? 'asc') : null,
      }
    },

    /**
     * The whole filtered history as CSV (header line first) or NDJSON, read through a server-side
     * cursor on its own connection, batch by batch as the client reads: memory stays bounded by
     * the batch size whatever the row count.
     */
    export(kind: HistoryKind, userId: string, f: HistoryFilters, format: 'csv' | 'ndjson'): Readable {
      const unresolved = parse(kind, f)
      const scoped = scopeQuery(userId).compile(deps.db)
      async function* lines(): AsyncGenerator<string> {
        const client = new pg.Client({
          connectionString: deps.databaseUrl,
          options: `-c search_path=${deps.databaseSchema} -c jit=off`,
        })
        client.on('error', () => {})
        await client.connect()
        try {
          const scope = (await client.query<HistoryScope>(scoped.sql, scoped.parameters as unknown[])).rows[0]!
          const parsed = await resolveSearch(deps.db, unresolved)
          const compiled = historyQuery(kind, scope, parsed, undefined).compile(deps.db)
          if (format === 'csv') yield columnsOf(kind).join(',') + '\r\n'
          const stream = client.query(
            new QueryStream(compiled.sql, compiled.parameters as unknown[], { batchSize: 1000 }),
          )
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

export type HistoryService = ReturnType<typeof createHistory>
