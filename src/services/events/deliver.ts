import type { EventDeps } from './types.js'
import { sql } from 'kysely'
import { Agent, fetch } from 'undici'
import { checkUpstreamUrl, guardedLookup } from '../../net/ssrf-guard.js'
import { decryptSecret, requireMasterKey } from '../../secrets/wallet-crypto.js'
import { emitEvent } from './outbox.js'
import { signatureHeader } from './signature.js'

/** How many due deliveries one tick sends (in parallel). */
const BATCH = 50

interface Due {
  id: string
  endpoint_id: string
  event_id: string
  attempts: number
  url: string
  user_id: string
  encrypted_secret: string
  disabled_at: Date | null
  type: string
  data: unknown
  event_created: Date
}

export interface Attempt {
  ok: boolean
  code: number | null
  latencyMs: number
  error: string | null
}

/** The JSON body of an event's POST: the same bytes on every retry, so `id` deduplicates. */
function eventBody(e: { id: string; type: string; created: Date; data: unknown }): string {
  return JSON.stringify({
    id: e.id,
    object: 'event',
    type: e.type,
    created: Math.floor(e.created.getTime() / 1000),
    data: e.data,
  })
}

export function secretAad(endpointId: string): string {
  return `webhook:${endpointId}`
}

/** Sends signed POSTs; refuses private and loopback targets unless TOLLGATE_ALLOW_PRIVATE_UPSTREAMS is on. */
export function createPoster(config: EventDeps['config']) {
  const dispatcher = new Agent({ connect: { lookup: guardedLookup(config.allowPrivateUpstreams) } })
  async function post(url: string, secret: string, body: string): Promise<Attempt> {
    const started = Date.now()
    try {
      const target = checkUpstreamUrl(url, config.allowPrivateUpstreams, 'url')
      const t = Math.floor(Date.now() / 1000)
      const res = await fetch(target, {
        method: 'POST',
        dispatcher,
        redirect: 'manual',
        signal: AbortSignal.timeout(config.webhooks.requestTimeoutMs),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Tollgate-Webhooks/1',
          'tollgate-signature': signatureHeader(secret, body, t),
        },
        body,
      })
      await res.body?.cancel().catch(() => {})
      const ok = res.status >= 200 && res.status < 300
      return { ok, code: res.status, latencyMs: Date.now() - started, error: ok ? null : `HTTP ${res.status}` }
    } catch (err) {
      return { ok: false, code: null, latencyMs: Date.now() - started, error: describe(err) }
    }
  }
  return { post, close: () => dispatcher.close() }
}

function describe(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string }; detail?: string }
  if (e.cause?.code === 'ESSRF' || /private address/.test(e.cause?.message ?? '')) return 'refused: private address'
  if (e.detail) return e.detail
  if (e.cause?.code) return e.cause.code
  return (e.message ?? 'request failed').slice(0, 200)
}

/** next attempt: base·2^(n-1), at most max */
function backoffMs(attempts: number, base: number, max: number): number {
  return Math.min(max, base * 2 ** Math.min(30, Math.max(0, attempts - 1)))
}

async function claimDue(deps: EventDeps): Promise<Due[]> {
  const lockMs = deps.config.webhooks.requestTimeoutMs * 3
  const r = await sql<Due>`
    with c as (
      select id from webhook_deliveries where status = 'pending' and next_at <= now()
        and (locked_until is null or locked_until < now())
      order by next_at limit ${BATCH} for update skip locked
    ), upd as (
      update webhook_deliveries d set locked_until = now() + ${lockMs} * interval '1 millisecond'
      from c where d.id = c.id returning d.id, d.endpoint_id, d.event_id, d.attempts
    )
    select upd.*, w.url, w.user_id, w.encrypted_secret, w.disabled_at, e.type, e.data, e.created_at as event_created
    from upd join webhook_endpoints w on w.id = upd.endpoint_id join webhook_events e on e.id = upd.event_id`.execute(
    deps.db,
  )
  return r.rows
}

/** Sends every due delivery once; returns how many were attempted. */
export async function deliverDue(deps: EventDeps, poster: ReturnType<typeof createPoster>): Promise<number> {
  const due = await claimDue(deps)
  await Promise.all(due.map((d) => deliverOne(deps, poster, d)))
  return due.length
}

async function deliverOne(deps: EventDeps, poster: ReturnType<typeof createPoster>, d: Due): Promise<void> {
  if (d.disabled_at) {
    await deps.db
      .updateTable('webhook_deliveries')
      .set({ status: 'failed', last_error: 'endpoint disabled', locked_until: null, updated_at: sql`now()` })
      .where('id', '=', d.id)
      .execute()
    return
  }
  const secret = decryptSecret([requireMasterKey(deps.config)], d.encrypted_secret, secretAad(d.endpoint_id))
  const body = eventBody({ id: d.event_id, type: d.type, created: d.event_created, data: d.data })
  const a = await poster.post(d.url, secret, body)
  await recordAttempt(deps, d, a)
}

async function recordAttempt(deps: EventDeps, d: Due, a: Attempt): Promise<void> {
  const { retryBaseMs, retryMaxMs, giveUpMs } = deps.config.webhooks
  const attempts = d.attempts + 1
  const result = { attempts, response_code: a.code, latency_ms: a.latencyMs, last_error: a.error, locked_until: null }
  if (a.ok) {
    await deps.db
      .updateTable('webhook_deliveries')
      .set({ ...result, status: 'delivered', updated_at: sql`now()` })
      .where('id', '=', d.id)
      .execute()
    return
  }
  const wait = backoffMs(attempts, retryBaseMs, retryMaxMs)
  const givingUp = Date.now() + wait - d.event_created.getTime() > giveUpMs
  await deps.db.transaction().execute(async (trx) => {
    await trx
      .updateTable('webhook_deliveries')
      .set({
        ...result,
        status: givingUp ? 'failed' : 'pending',
        next_at: sql`now() + ${wait} * interval '1 millisecond'`,
        updated_at: sql`now()`,
      })
      .where('id', '=', d.id)
      .execute()
    if (!givingUp) return
    const disabled = await trx
      .updateTable('webhook_endpoints')
      .set({ disabled_at: sql`now()`, disabled_reason: `deliveries failing since ${d.event_created.toISOString()}` })
      .where('id', '=', d.endpoint_id)
      .where('disabled_at', 'is', null)
      .returning('id')
      .executeTakeFirst()
    if (disabled)
      await emitEvent(trx, {
        userId: d.user_id,
        type: 'webhook.disabled',
        data: { endpoint_id: d.endpoint_id, url: d.url, last_error: a.error, failing_since: d.event_created },
      })
  })
}
