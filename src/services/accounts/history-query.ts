/**
 * The SQL of a user's history (history-export.ts): the scope query, and the history query in its
 * forms (a transactions page read per agent and endpoint; transactions or events left to the planner).
 */
import { sql, type RawBuilder } from 'kysely'

export type HistoryKind = 'transactions' | 'payment_events'

/** a sign_in row's scheme and status: the x402 extension that served it, and served (nothing to settle) */
const SIGN_IN_SCHEME = 'sign-in-with-x'

/** agents + endpoints up to which a history page reads each one in a branch of its own */
const PER_KEY_BRANCHES = 64

// Timestamps as text with microseconds: JS Dates would drop them and break cursors and exact exports.
const ts = (col: string) => sql.raw(`to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`)

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

/** A history request's filters, parsed (history-export.ts) and its search resolved. */
export interface ParsedFilters {
  from?: string
  to?: string
  agent?: string
  role?: 'buyer' | 'seller'
  order: 'asc' | 'desc'
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
export function historyQuery(
  kind: HistoryKind,
  scope: HistoryScope,
  f: ParsedFilters,
  limit: number | undefined,
): RawBuilder<Record<string, unknown>> {
  const q = queryParts(scope, f, idTypeOf(kind), limit)
  if (kind === 'transactions' && limit !== undefined && f.agent === undefined) return pagedTransactions(q)
  const conds: RawBuilder<unknown>[] = [
    f.role === 'buyer' ? q.buyer : f.role === 'seller' ? q.seller : sql`(${q.buyer} or ${q.seller})`,
  ]
  if (f.agent) conds.push(sql`lower(p.payer) = ${f.agent}`)
  // payment events of the payments to the matched endpoints (transactions get it with paymentStatus)
  if (kind === 'payment_events') conds.push(...q.onEndpoints('p'))
  return kind === 'transactions' ? transactions(q, conds) : paymentEvents(q, conds)
}

const idTypeOf = (kind: HistoryKind) => sql.raw(kind === 'transactions' ? 'uuid' : 'bigint')

/** The pieces every form of the history query is built from, over the scope's constants and the filters. */
interface QueryParts {
  scope: HistoryScope
  f: ParsedFilters
  buyer: RawBuilder<unknown>
  seller: RawBuilder<unknown>
  /** ` desc` or nothing */
  dir: RawBuilder<unknown>
  lim: RawBuilder<unknown>
  /** created_at range and cursor on the table aliased `t` */
  range(t: string): RawBuilder<unknown>[]
  /** a search keeps the payments (and sign-ins) to the endpoints it matched */
  onEndpoints(t: string): RawBuilder<unknown>[]
  paymentStatus: RawBuilder<unknown>[]
  /** the user's withdrawals join in */
  withdrawals: boolean
  /** calls served on a sign-in join in */
  signIns: boolean
  useBuyer: RawBuilder<unknown>
  useSeller: RawBuilder<unknown>
  withdrawalConds(): RawBuilder<unknown>[]
}

function queryParts(
  scope: HistoryScope,
  f: ParsedFilters,
  idType: RawBuilder<unknown>,
  limit: number | undefined,
): QueryParts {
  // rows past the cursor in the chosen order; desc reads the same indexes backwards
  const past = sql.raw(f.order === 'desc' ? '<' : '>')
  const range = (t: string): RawBuilder<unknown>[] => {
    const a = sql.raw(t)
    const out: RawBuilder<unknown>[] = []
    if (f.from) out.push(sql`${a}.created_at >= ${f.from}::timestamptz`)
    if (f.to) out.push(sql`${a}.created_at < ${f.to}::timestamptz`)
    if (f.cursor)
      out.push(sql`(${a}.created_at, ${a}.id) ${past} (${f.cursor[0]}::timestamptz, ${f.cursor[1]}::${idType})`)
    return out
  }
  const onEndpoints = (t: string) => (f.endpoints ? [sql`${sql.raw(t)}.endpoint_id = any(${f.endpoints}::uuid[])`] : [])
  return {
    scope,
    f,
    buyer: sql`lower(p.payer) = any(${scope.mine}::text[])`,
    seller: sql`p.endpoint_id = any(${scope.sold}::uuid[])`,
    dir: sql.raw(f.order === 'desc' ? ' desc' : ''),
    lim: limit === undefined ? sql`` : sql`limit ${limit}`,
    range,
    onEndpoints,
    paymentStatus: [
      ...(f.payments?.statuses ? [sql`p.status = any(${f.payments.statuses}::text[])`] : []),
      ...onEndpoints('p'),
    ],
    // the user's withdrawals join in only when they have some and the filters keep them: everyone
    // else's history runs exactly the payments query
    withdrawals: scope.withdrew !== null && f.withdrawals !== null,
    // calls served on a sign-in join in only when the user has some and the filters keep them (as withdrawals)
    signIns: scope.signed_in && f.signIns,
    useBuyer: sql`u.payer = any(${scope.mine}::text[])`,
    useSeller: sql`u.endpoint_id = any(${scope.sold}::uuid[])`,
    withdrawalConds: () => [
      sql`w.user_id = ${scope.withdrew}::uuid`,
      ...(f.agent ? [sql`lower(w.from_address) = ${f.agent}`] : []),
      ...(f.withdrawals?.statuses ? [sql`w.status = any(${f.withdrawals.statuses}::text[])`] : []),
    ],
  }
}

const and = (conds: RawBuilder<unknown>[]) => (conds.length ? sql.join(conds, sql` and `) : sql`true`)

/**
 * A transactions page without an agent filter: one ordered, bounded index read per agent and per
 * endpoint; a payment both bought and sold by the user comes from the buyer side only.
 */
function pagedTransactions(q: QueryParts): RawBuilder<Record<string, unknown>> {
  const { scope, dir, lim } = q
  // payments is partitioned by day: only a read whose key is a constant can merge the days'
  // ordered index reads (Postgres builds no ordered append for a LATERAL-parameterized scan, it
  // would sort all the key's rows), so each agent and endpoint gets a branch of its own, up to
  // PER_KEY_BRANCHES of them; a user with more keeps the one-statement LATERAL form
  const perKey = scope.mine.length + scope.sold.length <= PER_KEY_BRANCHES
  const sides: RawBuilder<unknown>[] = [...paymentSides(q, perKey), ...(q.signIns ? signInSides(q, perKey) : [])]
  if (q.withdrawals)
    sides.push(
      sql`(select ${WITHDRAWAL_ROW} from withdrawals w where ${and([...q.withdrawalConds(), ...q.range('w')])} order by w.created_at${dir}, w.id${dir} ${lim})`,
    )
  if (sides.length === 0) sides.push(sql`select ${PAYMENT_ROW} from payments p where false`)
  return sql`${TRANSACTION_SELECT} from (${sql.join(sides, sql` union all `)}) p order by p.created_at${dir}, p.id${dir} ${lim}`
}

/** The paged form's payment branches: per agent (buyer side), per endpoint (seller side). */
function paymentSides(q: QueryParts, perKey: boolean): RawBuilder<unknown>[] {
  const { scope, f, dir, lim } = q
  const sides: RawBuilder<unknown>[] = []
  const page = (key: RawBuilder<unknown>) =>
    sql`select ${PAYMENT_ROW} from payments p where ${and([key, ...q.paymentStatus, ...q.range('p')])} order by p.created_at${dir}, p.id${dir} ${lim}`
  const sellerKey = (id: RawBuilder<unknown>) =>
    f.role === 'seller' ? sql`p.endpoint_id = ${id}` : sql`p.endpoint_id = ${id} and not ${q.buyer}`
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
  return sides
}

/** The paged form's sign-in branches: access_uses is partitioned by day as payments are, the same branch per key. */
function signInSides(q: QueryParts, perKey: boolean): RawBuilder<unknown>[] {
  const { scope, f, dir, lim } = q
  const sides: RawBuilder<unknown>[] = []
  const usePage = (key: RawBuilder<unknown>) =>
    sql`select ${SIGN_IN_ROW} from access_uses u where ${and([key, ...q.onEndpoints('u'), ...q.range('u')])} order by u.created_at${dir}, u.id${dir} ${lim}`
  const useSellerKey = (id: RawBuilder<unknown>) =>
    f.role === 'seller' ? sql`u.endpoint_id = ${id}` : sql`u.endpoint_id = ${id} and not ${q.useBuyer}`
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
  return sides
}

/** Transactions for an export or an agent-filtered page: left to the planner. */
function transactions(q: QueryParts, conds: RawBuilder<unknown>[]): RawBuilder<Record<string, unknown>> {
  const { f, dir, lim } = q
  const parts: RawBuilder<unknown>[] = []
  if (f.payments)
    parts.push(sql`select ${PAYMENT_ROW} from payments p where ${and([...conds, ...q.paymentStatus, ...q.range('p')])}`)
  if (q.signIns) {
    const useConds = [
      f.role === 'buyer' ? q.useBuyer : f.role === 'seller' ? q.useSeller : sql`(${q.useBuyer} or ${q.useSeller})`,
      ...(f.agent ? [sql`u.payer = ${f.agent}`] : []),
      ...q.onEndpoints('u'),
      ...q.range('u'),
    ]
    parts.push(sql`select ${SIGN_IN_ROW} from access_uses u where ${and(useConds)}`)
  }
  if (q.withdrawals)
    parts.push(sql`select ${WITHDRAWAL_ROW} from withdrawals w where ${and([...q.withdrawalConds(), ...q.range('w')])}`)
  if (parts.length === 0) parts.push(sql`select ${PAYMENT_ROW} from payments p where false`)
  // payments alone stay a plain query (no derived table) for the planner, as before withdrawals existed
  if (parts.length === 1 && f.payments)
    return sql`${TRANSACTION_SELECT_PLAIN} from payments p where ${and([...conds, ...q.paymentStatus, ...q.range('p')])} order by p.created_at${dir}, p.id${dir} ${lim}`
  return sql`${TRANSACTION_SELECT} from (${sql.join(parts, sql` union all `)}) p order by p.created_at${dir}, p.id${dir} ${lim}`
}

/** Payment (and withdrawal) events: left to the planner. */
function paymentEvents(q: QueryParts, conds: RawBuilder<unknown>[]): RawBuilder<Record<string, unknown>> {
  const { f, dir, lim } = q
  const eventParts: RawBuilder<unknown>[] = []
  if (f.payments)
    eventParts.push(
      sql`select ${PAYMENT_EVENT_ROW} from payment_events ev join payments p on p.id = ev.payment_id where ${and([...conds, ...q.range('ev')])}`,
    )
  if (q.withdrawals)
    eventParts.push(
      sql`select ${WITHDRAWAL_EVENT_ROW} from withdrawal_events ev join withdrawals w on w.id = ev.withdrawal_id where ${and([...q.withdrawalConds(), ...q.range('ev')])}`,
    )
  if (eventParts.length === 1 && f.payments) {
    return sql`${EVENT_SELECT_PLAIN} from payment_events ev join payments p on p.id = ev.payment_id where ${and([...conds, ...q.range('ev')])} order by ev.created_at${dir}, ev.id${dir} ${lim}`
  }
  if (eventParts.length === 0) eventParts.push(sql`select ${PAYMENT_EVENT_ROW} from payment_events ev where false`)
  return sql`${EVENT_SELECT} from (${sql.join(eventParts, sql` union all `)}) ev order by ev.created_at${dir}, ev.id${dir} ${lim}`
}
