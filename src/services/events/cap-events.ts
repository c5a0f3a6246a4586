import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import type { ReserveResult, Windows } from '../agent-payments/spend-windows.js'
import { emitEvent } from './outbox.js'

/** The share of a cap at which an alert (email, dashboard) goes out, whatever the endpoints ask. */
const ALERT_CAP_PERCENT = 80

export interface CapAgent {
  id: string
  user_id: string
  address: string
  cap_daily: string | null
  cap_monthly: string | null
}

/**
 * agent.cap_near and agent.cap_reached, from the spend counters' answer. The caps are counted in
 * Redis (one Lua call per payment, no Postgres transaction to share), so these events are written
 * just after the reservation, off the payment's path (not awaited), and only when a payment
 * crosses a whole percent of a cap or is refused by one; each is idempotent per agent, window and
 * threshold, so a window sends each at most once. cap_near goes to the endpoints whose
 * cap_near_percent is the threshold crossed.
 */
export function createCapEvents(db: Kysely<Database>, onError: (err: unknown) => void = () => {}) {
  async function thresholds(userId: string): Promise<number[]> {
    const rows = await db
      .selectFrom('webhook_endpoints')
      .select('cap_near_percent')
      .where('user_id', '=', userId)
      .where('disabled_at', 'is', null)
      .where((eb) => eb(eb.val('agent.cap_near'), '=', eb.fn.any('events')))
      .execute()
    return [...new Set([ALERT_CAP_PERCENT, ...rows.map((r) => r.cap_near_percent)])]
  }

  async function reached(agent: CapAgent, window: 'daily' | 'monthly', key: string, cap: string, spent: bigint) {
    await emitEvent(db, {
      userId: agent.user_id,
      type: 'agent.cap_reached',
      data: { agent: agent.address, agent_id: agent.id, window, period: key, cap, spent: spent.toString() },
      sourceKey: `cap_reached:${agent.id}:${window}:${key}`,
    })
  }

  async function crossed(
    agent: CapAgent,
    window: 'daily' | 'monthly',
    key: string,
    cap: string,
    used: bigint,
    amount: bigint,
  ) {
    const c = BigInt(cap)
    if (c <= 0n) return
    const before = Number(((used - amount) * 100n) / c)
    const after = Number((used * 100n) / c)
    if (after <= before) return
    if (after >= 100) await reached(agent, window, key, cap, used)
    for (const t of await thresholds(agent.user_id))
      if (before < t && t <= after && t < 100)
        await emitEvent(db, {
          userId: agent.user_id,
          type: 'agent.cap_near',
          data: {
            agent: agent.address,
            agent_id: agent.id,
            window,
            period: key,
            percent: t,
            cap,
            spent: used.toString(),
          },
          sourceKey: `cap_near:${agent.id}:${window}:${key}:${t}`,
          notify: t === ALERT_CAP_PERCENT,
        })
  }

  async function handle(agent: CapAgent, w: Windows, amount: bigint, r: ReserveResult) {
    if (r.kind === 'over') {
      const cap = r.cap === 'daily' ? agent.cap_daily : agent.cap_monthly
      await reached(agent, r.cap, r.cap === 'daily' ? w.day : w.month, cap ?? '0', r.cap === 'daily' ? r.day : r.month)
      return
    }
    if (r.kind !== 'ok' || amount <= 0n) return
    if (agent.cap_daily !== null) await crossed(agent, 'daily', w.day, agent.cap_daily, r.day, amount)
    if (agent.cap_monthly !== null) await crossed(agent, 'monthly', w.month, agent.cap_monthly, r.month, amount)
  }

  return {
    /** Looks at one reservation's answer; never throws, never delays the payment. */
    observe(agent: CapAgent, w: Windows, amount: bigint, r: ReserveResult): void {
      if (r.kind !== 'over' && (r.kind !== 'ok' || amount <= 0n)) return
      void handle(agent, w, amount, r).catch(onError)
    },
  }
}
