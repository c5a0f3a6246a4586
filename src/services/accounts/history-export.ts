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
 * an endpoint of one of the user's sellers (role seller), the calls served on a sign-in with such a
 * payment's access grant (kind `sign_in`, amount 0, from access_uses), and withdrawals. Order is chronological (created_at, id) by
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
/** a sign_in row's scheme and status: the x402 extension that served it, and served (nothing to settle) */
export const SIGN_IN_SCHEME = 'sign-in-with-x'
export const PAYMENT_STATUSES = ['verified', 'served', 'settling', 'settled', 'voided', 'failed'] as const
export const WITHDRAWAL_STATUSES = ['pending', 'confirmed', 'failed'] as const

// Timestamps as text with microseconds: JS Dates would drop them and break cursors and exact exports.
const ts = (col: string) => sql.raw(`to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`)

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

/** agents + endpoints up to which a history page reads each one in a branch of its own */
const PER_KEY_BRANCHES = 64

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

/**
 * What a user's history is made of: the lower-case addresses of the user's agents (buyer side) and
 * the ids of the endpoints the user sells (seller side). Read first, in their own statement, so the
 * history query gets them as constants: Postgres then estimates from its statistics how many
 * payments they hold, instead of guessing for a subquery.
 */
export interface HistoryScope {
  mine: string[]
  sold: string[]
  /** the user, when they have made a withdrawal (its rows join the history); null otherwise */
  withdrew: string | null
  /** whether a call was served on a sign-in for one of the agents or on one of the endpoints (their rows join the history) */
  signed_in: boolean
}

export function scopeQuery(userId: string): RawBuilder<HistoryScope> {
  return sql<HistoryScope>`select
      array(select lower(a.address) from agents a where a.user_id = ${userId}) as mine,
      array(select e.id::text from endpoints e join services s on s.id = e.service_id join sellers sl on sl.id = s.seller_id where sl.owner_user_id = ${userId}) as sold,
      (select ${userId}::text where exists (select 1 from withdrawals w where w.user_id = ${userId})) as withdrew,
      exists (select 1 from access_uses u where u.payer = any(array(select lower(a.address) from agents a where a.user_id = ${userId})))
        or exists (select 1 from access_uses u where u.endpoint_id = any(array(select e.id from endpoints e join services s on s.id = e.service_id join sellers sl on sl.id = s.seller_id where sl.owner_user_id = ${userId}))) as signed_in`
}

interface Parsed {
  from?: string
  to?: string
  agent?: string
  role?: 'buyer' | 'seller'
  order: HistoryOrder
  cursor?: [string, string]
  /** which kinds of row, and the statuses kept of each (undefined: all) */
  payments: { statuses?: string[] } | null
  withdrawals: { statuses?: string[] } | null
  /** calls served on a sign-in (always `served`; transactions only) */
  signIns: boolean
  /** the `endpoint` and `seller` filters' text; resolved to endpoint ids by `endpointsMatching` */
  search?: { endpoint?: string; seller?: string }
  /** the ids of the endpoints the search matched (undefined: no search) */
  endpoints?: string[]
}

function parseKinds(kind: HistoryKind, f: HistoryFilters): Pick<Parsed, 'payments' | 'withdrawals' | 'signIns'> {
  if (f.kind !== undefined && !(TRANSACTION_KINDS as readonly string[]).includes(f.kind))
    throw invalid('kind', `expected one of ${TRANSACTION_KINDS.join(', ')}`)
  let payments: Parsed['payments'] = f.kind === 'withdrawal' || f.kind === 'sign_in' ? null : {}
  // withdrawals belong to neither role: `role` lists payments alone
  let withdrawals: Parsed['withdrawals'] =
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

function parse(kind: HistoryKind, f: HistoryFilters): Parsed {
  const from = timestamp('from', f.from)
  const to = timestamp('to', f.to)
  const agent = f.agent === undefined ? undefined : parseAddress('agent', f.agent).toLowerCase()
  if (f.role !== undefined && f.role !== 'buyer' && f.role !== 'seller')
    throw invalid('role', 'expected buyer or seller')
  if (f.order !== undefined && f.order !== 'asc' && f.order !== 'desc') throw invalid('order', 'expected asc or desc')
  const order = f.order ?? 'asc'
  const cursor = f.cursor === undefined ? undefined : decodeCursor(kind, f.cursor, order)
  const parsed: Parsed = { from, to, agent, role: f.role, order, cursor, ...parseKinds(kind, f) }
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
async function endpointsMatching(db: Kysely<Database>, search: NonNullable<Parsed['search']>): Promise<string[]> {
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
async function resolveSearch(db: Kysely<Database>, parsed: Parsed): Promise<Parsed> {
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

/**
 * A deferred payment's voucher field, from the voucher store (payments.nonce is the voucher's EIP-712
 * digest, unique per buyer); null for other schemes and for a voided call whose voucher was given back.
 */
const voucherField = (as: string, col: string) =>
  sql.raw(
    `case when p.scheme = 'deferred' then (select ${col} from deferred_vouchers v where v.buyer = lower(p.payer) and v.digest = p.nonce limit 1) end as ${as}`,
  )
const TRANSACTION_FIELDS = sql`select p.id::text as id, ${ts('p.created_at')} as created_at, ${ts('p.updated_at')} as updated_at, p.status, p.payer, p.pay_to,
    p.value::text as value, p.asset, p.network, p.scheme, p.x402_version, p.resource, p.method, p.endpoint_id::text as endpoint_id,
    p.settlement_mode, p.nonce, p.valid_after::text as valid_after, p.valid_before::text as valid_before, p.tx_hash, p.failure_reason,
    ${ts('p.settled_at')} as settled_at, ${voucherField('voucher_id', 'v.voucher_id')}, ${voucherField('voucher_nonce', 'v.nonce::text')},
    ${voucherField('voucher_value_aggregate', 'v.value_aggregate::text')}`
const EVENT_FIELDS = sql`select ev.id::text as id, ev.payment_id::text as payment_id, ${ts('ev.created_at')} as created_at, ev.type, ev.from_status, ev.to_status,
    ev.reason, ev.data::text as data`
// from payments alone (PLAIN), or from payments, sign-ins and withdrawals in one derived table
const TRANSACTION_SELECT = sql`${TRANSACTION_FIELDS}, p.kind, p.grant_payment_id::text as grant_payment_id, p.grant_scope_id::text as grant_scope_id`
const TRANSACTION_SELECT_PLAIN = sql`${TRANSACTION_FIELDS}, 'payment'::text as kind, null::text as grant_payment_id, null::text as grant_scope_id`
const EVENT_SELECT = sql`${EVENT_FIELDS}, ev.withdrawal_id::text as withdrawal_id`
const EVENT_SELECT_PLAIN = sql`${EVENT_FIELDS}, null::text as withdrawal_id`
// a payment as a transaction row, and a withdrawal in the same columns (kind tells them apart)
const PAYMENT_ROW = sql`p.id, p.created_at, p.updated_at, p.status, p.payer, p.pay_to, p.value, p.asset, p.network, p.scheme, p.x402_version, p.resource, p.method,
    p.endpoint_id, p.settlement_mode, p.nonce, p.valid_after, p.valid_before, p.tx_hash, p.failure_reason, p.settled_at, 'payment'::text as kind,
    null::uuid as grant_payment_id, null::uuid as grant_scope_id`
const WITHDRAWAL_ROW = sql`w.id, w.created_at, w.updated_at, w.status, w.from_address as payer, w.to_address as pay_to, w.amount as value, w.asset, null::text as network,
    null::text as scheme, null::smallint as x402_version, null::text as resource, null::text as method, null::uuid as endpoint_id, null::text as settlement_mode,
    w.auth_nonce as nonce, w.valid_after, w.valid_before, w.tx_hash, case when w.status = 'failed' then w.error end as failure_reason, w.confirmed_at as settled_at,
    'withdrawal'::text as kind, null::uuid as grant_payment_id, null::uuid as grant_scope_id`
// a call served on a sign-in: nothing paid (value 0), served, never settled; the grant's payment and scope
const SIGN_IN_ROW = sql`u.id, u.created_at, u.created_at as updated_at, 'served'::text as status, u.payer, u.pay_to, 0::numeric as value,
    null::text as asset, null::text as network, ${sql.lit(SIGN_IN_SCHEME)}::text as scheme, 2::smallint as x402_version, u.resource, u.method,
    u.endpoint_id, null::text as settlement_mode, null::text as nonce, null::int8 as valid_after, null::int8 as valid_before, null::text as tx_hash,
    null::text as failure_reason, null::timestamptz as settled_at, 'sign_in'::text as kind, u.payment_id as grant_payment_id, u.scope_id as grant_scope_id`
const PAYMENT_EVENT_ROW = sql`ev.id, ev.payment_id, null::uuid as withdrawal_id, ev.created_at, ev.type, ev.from_status, ev.to_status, ev.reason, ev.data`
const WITHDRAWAL_EVENT_ROW = sql`ev.id, null::uuid as payment_id, ev.withdrawal_id, ev.created_at, ev.type, ev.from_status, ev.to_status, ev.reason, ev.data`

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
 * migrations/2026-11-23T0300-history-indexes.ts and test/integration/v1/history-scale.test.ts.
 */
function query(
  kind: HistoryKind,
  scope: HistoryScope,
  f: Parsed,
  limit: number | undefined,
): RawBuilder<Record<string, unknown>> {
  const buyer = sql`lower(p.payer) = any(${scope.mine}::text[])`
  const seller = sql`p.endpoint_id = any(${scope.sold}::uuid[])`
  // rows past the cursor in the chosen order; desc reads the same indexes backwards
  const past = sql.raw(f.order === 'desc' ? '<' : '>')
  const dir = sql.raw(f.order === 'desc' ? ' desc' : '')
  const idType = sql.raw(kind === 'transactions' ? 'uuid' : 'bigint')
  /** created_at range and cursor on the table aliased `t` */
  const range = (t: string): RawBuilder<unknown>[] => {
    const a = sql.raw(t)
    const out: RawBuilder<unknown>[] = []
    if (f.from) out.push(sql`${a}.created_at >= ${f.from}::timestamptz`)
    if (f.to) out.push(sql`${a}.created_at < ${f.to}::timestamptz`)
    if (f.cursor)
      out.push(sql`(${a}.created_at, ${a}.id) ${past} (${f.cursor[0]}::timestamptz, ${f.cursor[1]}::${idType})`)
    return out
  }
  const lim = limit === undefined ? sql`` : sql`limit ${limit}`
  const and = (conds: RawBuilder<unknown>[]) => (conds.length ? sql.join(conds, sql` and `) : sql`true`)
  // a search keeps the payments (and sign-ins) to the endpoints it matched
  const onEndpoints = (t: string) => (f.endpoints ? [sql`${sql.raw(t)}.endpoint_id = any(${f.endpoints}::uuid[])`] : [])
  const paymentStatus = [
    ...(f.payments?.statuses ? [sql`p.status = any(${f.payments.statuses}::text[])`] : []),
    ...onEndpoints('p'),
  ]
  // the user's withdrawals join in only when they have some and the filters keep them: everyone
  // else's history runs exactly the payments query
  const withdrawals = scope.withdrew !== null && f.withdrawals !== null
  // calls served on a sign-in join in only when the user has some and the filters keep them (as withdrawals)
  const signIns = scope.signed_in && f.signIns
  const useBuyer = sql`u.payer = any(${scope.mine}::text[])`
  const useSeller = sql`u.endpoint_id = any(${scope.sold}::uuid[])`
  const withdrawalConds = (): RawBuilder<unknown>[] => [
    sql`w.user_id = ${scope.withdrew}::uuid`,
    ...(f.agent ? [sql`lower(w.from_address) = ${f.agent}`] : []),
    ...(f.withdrawals?.statuses ? [sql`w.status = any(${f.withdrawals.statuses}::text[])`] : []),
  ]

  if (kind === 'transactions' && limit !== undefined && f.agent === undefined) {
    // one ordered, bounded index read per agent and per endpoint; a payment both bought and sold
    // by the user comes from the buyer side only
    const sides: RawBuilder<unknown>[] = []
    const page = (key: RawBuilder<unknown>) =>
      sql`select ${PAYMENT_ROW} from payments p where ${and([key, ...paymentStatus, ...range('p')])} order by p.created_at${dir}, p.id${dir} ${lim}`
    // payments is partitioned by day: only a read whose key is a constant can merge the days'
    // ordered index reads (Postgres builds no ordered append for a LATERAL-parameterized scan, it
    // would sort all the key's rows), so each agent and endpoint gets a branch of its own, up to
    // PER_KEY_BRANCHES of them; a user with more keeps the one-statement LATERAL form
    const perKey = scope.mine.length + scope.sold.length <= PER_KEY_BRANCHES
    const sellerKey = (id: RawBuilder<unknown>) =>
      f.role === 'seller' ? sql`p.endpoint_id = ${id}` : sql`p.endpoint_id = ${id} and not ${buyer}`
    if (f.payments && f.role !== 'seller') {
      if (perKey) for (const a of scope.mine) sides.push(sql`(${page(sql`lower(p.payer) = ${a}`)})`)
      else
        sides.push(
          sql`select p.* from unnest(${scope.mine}::text[]) k(payer) cross join lateral (${page(sql`lower(p.payer) = k.payer`)}) p`,
        )
    }
    if (f.payments && f.role !== 'buyer') {
      if (perKey) for (const e of scope.sold) sides.push(sql`(${page(sellerKey(sql`${e}::uuid`))})`)
      else
        sides.push(
          sql`select p.* from unnest(${scope.sold}::uuid[]) k(id) cross join lateral (${page(sellerKey(sql`k.id`))}) p`,
        )
    }
    if (signIns) {
      // access_uses is partitioned by day as payments are: the same branch per key
      const usePage = (key: RawBuilder<unknown>) =>
        sql`select ${SIGN_IN_ROW} from access_uses u where ${and([key, ...onEndpoints('u'), ...range('u')])} order by u.created_at${dir}, u.id${dir} ${lim}`
      const useSellerKey = (id: RawBuilder<unknown>) =>
        f.role === 'seller' ? sql`u.endpoint_id = ${id}` : sql`u.endpoint_id = ${id} and not ${useBuyer}`
      if (f.role !== 'seller') {
        if (perKey) for (const a of scope.mine) sides.push(sql`(${usePage(sql`u.payer = ${a}`)})`)
        else
          sides.push(
            sql`select u.* from unnest(${scope.mine}::text[]) k(payer) cross join lateral (${usePage(sql`u.payer = k.payer`)}) u`,
          )
      }
      if (f.role !== 'buyer') {
        if (perKey) for (const e of scope.sold) sides.push(sql`(${usePage(useSellerKey(sql`${e}::uuid`))})`)
        else
          sides.push(
            sql`select u.* from unnest(${scope.sold}::uuid[]) k(id) cross join lateral (${usePage(useSellerKey(sql`k.id`))}) u`,
          )
      }
    }
    if (withdrawals)
      sides.push(
        sql`(select ${WITHDRAWAL_ROW} from withdrawals w where ${and([...withdrawalConds(), ...range('w')])} order by w.created_at${dir}, w.id${dir} ${lim})`,
      )
    if (sides.length === 0) sides.push(sql`select ${PAYMENT_ROW} from payments p where false`)
    return sql`${TRANSACTION_SELECT} from (${sql.join(sides, sql` union all `)}) p order by p.created_at${dir}, p.id${dir} ${lim}`
  }

  const conds: RawBuilder<unknown>[] = [
    f.role === 'buyer' ? buyer : f.role === 'seller' ? seller : sql`(${buyer} or ${seller})`,
  ]
  if (f.agent) conds.push(sql`lower(p.payer) = ${f.agent}`)
  // payment events of the payments to the matched endpoints (transactions get it with paymentStatus)
  if (kind === 'payment_events') conds.push(...onEndpoints('p'))
  if (kind === 'transactions') {
    const parts: RawBuilder<unknown>[] = []
    if (f.payments)
      parts.push(sql`select ${PAYMENT_ROW} from payments p where ${and([...conds, ...paymentStatus, ...range('p')])}`)
    if (signIns) {
      const useConds = [
        f.role === 'buyer' ? useBuyer : f.role === 'seller' ? useSeller : sql`(${useBuyer} or ${useSeller})`,
        ...(f.agent ? [sql`u.payer = ${f.agent}`] : []),
        ...onEndpoints('u'),
        ...range('u'),
      ]
      parts.push(sql`select ${SIGN_IN_ROW} from access_uses u where ${and(useConds)}`)
    }
    if (withdrawals)
      parts.push(sql`select ${WITHDRAWAL_ROW} from withdrawals w where ${and([...withdrawalConds(), ...range('w')])}`)
    if (parts.length === 0) parts.push(sql`select ${PAYMENT_ROW} from payments p where false`)
    // payments alone stay a plain query (no derived table) for the planner, as before withdrawals existed
    if (parts.length === 1 && f.payments)
      return sql`${TRANSACTION_SELECT_PLAIN} from payments p where ${and([...conds, ...paymentStatus, ...range('p')])} order by p.created_at${dir}, p.id${dir} ${lim}`
    return sql`${TRANSACTION_SELECT} from (${sql.join(parts, sql` union all `)}) p order by p.created_at${dir}, p.id${dir} ${lim}`
  }
  const eventParts: RawBuilder<unknown>[] = []
  if (f.payments)
    eventParts.push(
      sql`select ${PAYMENT_EVENT_ROW} from payment_events ev join payments p on p.id = ev.payment_id where ${and([...conds, ...range('ev')])}`,
    )
  if (withdrawals)
    eventParts.push(
      sql`select ${WITHDRAWAL_EVENT_ROW} from withdrawal_events ev join withdrawals w on w.id = ev.withdrawal_id where ${and([...withdrawalConds(), ...range('ev')])}`,
    )
  if (eventParts.length === 1 && f.payments) {
    return sql`${EVENT_SELECT_PLAIN} from payment_events ev join payments p on p.id = ev.payment_id where ${and([...conds, ...range('ev')])} order by ev.created_at${dir}, ev.id${dir} ${lim}`
  }
  if (eventParts.length === 0) eventParts.push(sql`select ${PAYMENT_EVENT_ROW} from payment_events ev where false`)
  return sql`${EVENT_SELECT} from (${sql.join(eventParts, sql` union all `)}) ev order by ev.created_at${dir}, ev.id${dir} ${lim}`
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
      const { rows } = await query(kind, scope, parsed, limit + 1).execute(deps.db)
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
          const compiled = query(kind, scope, parsed, undefined).compile(deps.db)
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
