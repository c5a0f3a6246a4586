import { randomBytes, randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { appError } from '../../errors.js'
import { checkUpstreamUrl } from '../../net/ssrf-guard.js'
import { encryptSecret, requireMasterKey } from '../../secrets/wallet-crypto.js'
import { secretAad } from './deliver.js'
import { ALERT_TYPES, EVENT_TYPES, TEST_EVENT_TYPE, type EventDeps } from './types.js'

/** the most endpoints one user may register */
const MAX_ENDPOINTS = 20
export const DELIVERIES_PAGE_MAX = 100

export interface EndpointInput {
  url?: unknown
  events?: unknown
  cap_near_percent?: unknown
  enabled?: unknown
}

interface EndpointRow {
  id: string
  url: string
  events: string[]
  cap_near_percent: number
  disabled_at: Date | string | null
  disabled_reason: string | null
  created_at: Date | string
}

function view(r: EndpointRow) {
  return {
    id: r.id,
    object: 'webhook_endpoint',
    url: r.url,
    events: r.events,
    cap_near_percent: r.cap_near_percent,
    enabled: r.disabled_at === null,
    disabled_at: r.disabled_at,
    disabled_reason: r.disabled_reason,
    created_at: r.created_at,
  }
}

function invalid(param: string, detail: string) {
  return appError('invalid_parameter', { param, detail }, { details: { param } })
}

function checkEvents(raw: unknown): string[] {
  const known = EVENT_TYPES as readonly string[]
  if (!Array.isArray(raw) || raw.length === 0 || raw.some((e) => typeof e !== 'string'))
    throw invalid(
      'events',
      `expected a non-empty list of event types, e.g. ["payment.settled"]; known: ${known.join(', ')}`,
    )
  const unknown = raw.filter((e) => !known.includes(e as string))
  if (unknown.length > 0)
    throw invalid('events', `unknown event type ${unknown.join(', ')}; known: ${known.join(', ')}`)
  return [...new Set(raw as string[])]
}

function checkPercent(raw: unknown): number {
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 1 || raw > 100)
    throw invalid('cap_near_percent', 'expected an integer percent from 1 to 100')
  return raw
}

const COLUMNS = ['id', 'url', 'events', 'cap_near_percent', 'disabled_at', 'disabled_reason', 'created_at'] as const

/** Webhook endpoints of a user, their delivery log and test events (docs/api.md, "Webhooks"). */
export function createWebhooks(deps: EventDeps) {
  const { db, config } = deps
  const checkUrl = (raw: unknown) => {
    if (typeof raw !== 'string' || raw.length > 2048) throw invalid('url', 'expected an http or https URL')
    return checkUpstreamUrl(raw, config.allowPrivateUpstreams, 'url')
  }
  async function find(userId: string, id: string): Promise<EndpointRow> {
    const row = /^[0-9a-f-]{36}$/i.test(id)
      ? await db
          .selectFrom('webhook_endpoints')
          .select(COLUMNS)
          .where('user_id', '=', userId)
          .where('id', '=', id)
          .executeTakeFirst()
      : undefined
    if (!row) throw appError('not_found', { what: `webhook endpoint ${id}` })
    return row
  }
  return {
    async create(userId: string, body: EndpointInput) {
      const url = checkUrl(body.url)
      const events = checkEvents(body.events)
      const percent = body.cap_near_percent === undefined ? 80 : checkPercent(body.cap_near_percent)
      const count = await db
        .selectFrom('webhook_endpoints')
        .select((e) => e.fn.countAll<string>().as('n'))
        .where('user_id', '=', userId)
        .executeTakeFirstOrThrow()
      if (Number(count.n) >= MAX_ENDPOINTS)
        throw appError('conflict', { detail: `at most ${MAX_ENDPOINTS} webhook endpoints per user; delete one first` })
      const id = randomUUID()
      const secret = `whsec_${randomBytes(32).toString('base64url')}`
      const encrypted = encryptSecret(requireMasterKey(config), secret, secretAad(id))
      const row = await db
        .insertInto('webhook_endpoints')
        .values({ id, user_id: userId, url, events, cap_near_percent: percent, encrypted_secret: encrypted })
        .returning(COLUMNS)
        .executeTakeFirstOrThrow()
      return { ...view(row), secret }
    },
    async list(userId: string) {
      const rows = await db
        .selectFrom('webhook_endpoints')
        .select(COLUMNS)
        .where('user_id', '=', userId)
        .orderBy('created_at')
        .execute()
      return { object: 'list', data: rows.map(view) }
    },
    get: async (userId: string, id: string) => view(await find(userId, id)),
    async update(userId: string, id: string, body: EndpointInput) {
      await find(userId, id)
      const set: Record<string, unknown> = {}
      if (body.url !== undefined) set.url = checkUrl(body.url)
      if (body.events !== undefined) set.events = checkEvents(body.events)
      if (body.cap_near_percent !== undefined) set.cap_near_percent = checkPercent(body.cap_near_percent)
      if (body.enabled !== undefined) {
        if (typeof body.enabled !== 'boolean') throw invalid('enabled', 'expected true or false')
        set.disabled_at = body.enabled ? null : sql`now()`
        set.disabled_reason = body.enabled ? null : 'disabled by the user'
      }
      const row = await db
        .updateTable('webhook_endpoints')
        .set({ ...set, updated_at: sql`now()` })
        .where('user_id', '=', userId)
        .where('id', '=', id)
        .returning(COLUMNS)
        .executeTakeFirstOrThrow()
      return view(row)
    },
    async remove(userId: string, id: string) {
      await find(userId, id)
      await db.deleteFrom('webhook_endpoints').where('user_id', '=', userId).where('id', '=', id).execute()
      return { id, object: 'webhook_endpoint', deleted: true }
    },
    ...logFunctions(db, find),
  }
}

/** The test event, the delivery log and the alerts list, on the endpoint lookup of createWebhooks. */
function logFunctions(db: EventDeps['db'], find: (userId: string, id: string) => Promise<EndpointRow>) {
  return {
    /** Queues a `webhook.test` event for this endpoint only (even a disabled one is not sent to). */
    async sendTest(userId: string, id: string) {
      const ep = await find(userId, id)
      if (ep.disabled_at !== null)
        throw appError('conflict', { detail: 'the endpoint is disabled; enable it (PATCH {"enabled": true}) first' })
      return db.transaction().execute(async (trx) => {
        const ev = await trx
          .insertInto('webhook_events')
          .values({ user_id: userId, type: TEST_EVENT_TYPE, data: JSON.stringify({ endpoint_id: id, test: true }) })
          .returning('id')
          .executeTakeFirstOrThrow()
        const d = await trx
          .insertInto('webhook_deliveries')
          .values({ endpoint_id: id, event_id: ev.id })
          .returning('id')
          .executeTakeFirstOrThrow()
        return { object: 'webhook_test', event_id: ev.id, delivery_id: d.id, status: 'pending' }
      })
    },
    async deliveries(userId: string, id: string, limit = DELIVERIES_PAGE_MAX) {
      await find(userId, id)
      const rows = await db
        .selectFrom('webhook_deliveries as d')
        .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
        .select([
          'd.id',
          'd.event_id',
          'e.type',
          'd.status',
          'd.attempts',
          'd.response_code',
          'd.latency_ms',
          'd.last_error',
          'd.next_at',
          'd.created_at',
          'd.updated_at',
        ])
        .where('d.endpoint_id', '=', id)
        .orderBy('d.created_at', 'desc')
        .limit(Math.min(Math.max(1, limit), DELIVERIES_PAGE_MAX))
        .execute()
      return {
        object: 'list',
        data: rows.map((r) => ({
          ...r,
          object: 'webhook_delivery',
          next_at: r.status === 'pending' ? r.next_at : null,
        })),
      }
    },
    /** The user's latest alerts (cap, balance and failure events), newest first, for the dashboard. */
    async alerts(userId: string, limit = 20) {
      const rows = await db
        .selectFrom('webhook_events')
        .select(['id', 'type', 'data', 'created_at', 'notify'])
        .where('user_id', '=', userId)
        .where('type', 'in', [...ALERT_TYPES])
        .orderBy('created_at', 'desc')
        .limit(Math.min(Math.max(1, limit), 100))
        .execute()
      return { object: 'list', data: rows.map((r) => ({ ...r, object: 'alert', emailed: r.notify === 'sent' })) }
    },
  }
}

export type Webhooks = ReturnType<typeof createWebhooks>
