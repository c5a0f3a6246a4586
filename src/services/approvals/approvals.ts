import { sql, type Kysely, type Selectable, type Transaction } from 'kysely'
import { emitEvent } from '../events/outbox.js'
import type { Config } from '../../config.js'
import type { ApprovalReason, ApprovalsTable, ApprovalStatus, ApprovalVia } from '../../db/approvals-table.js'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { decryptSecret, encryptSecret, requireMasterKey } from '../../secrets/wallet-crypto.js'
import type { AgentRow } from '../accounts/agent-auth.js'
import { isUuid } from '../accounts/api-keys.js'
import { approvalLink, linkKey, verifyLinkToken } from './approval-links.js'

type Row = Selectable<ApprovalsTable>

/** What a held payment would pay: the terms an approval is given for (a retry must match them). */
export interface ApprovalTerms {
  /** the URL as the payment path normalised it (`URL.href`) */
  url: string
  method: string
  payTo: string
  amount: bigint
  /** batch-settlement: what it would deposit into the agent's channel beside the price (shown to the owner, not matched on the retry) */
  deposit?: bigint
  scheme: string
  network: string
}

/** Who decides, and from where (the audit). */
export interface DecidedFrom {
  userId: string
  via: ApprovalVia
  ip: string | null
  userAgent: string | null
}

/** The 202 answer of a held payment. */
export interface ApprovalPending {
  object: 'approval'
  approval_id: string
  status: ApprovalStatus
  reason: ApprovalReason
  expires_at: string
  url: string
  pay_to: string
  amount: string
  /** batch-settlement: what the payment would also deposit into the agent's channel (refundable), when it needs one */
  deposit?: string
  scheme: string
  /** where the agent polls for the decision (agent key) */
  poll: string
  message: string
}

export interface ApprovalsDeps {
  db: Kysely<Database>
  config: Pick<Readonly<Config>, 'masterKey' | 'baseUrl'>
  now?: () => Date
}

/** How long the owner has to decide, and the agent then has to use an approval. */
const DECISION_MINUTES = 10
/** A seller the agent first paid less than this long ago is "new" for the calls-a-minute rule. */
const NEW_SELLER_HOURS = 24

/**
 * The `approval.requested` event (webhooks, alerts), written in the transaction that creates the
 * approval so the outbox never misses one; `data` carries the signed decision link. One event per
 * approval (its id is the source key).
 */
async function onApprovalRequested(
  trx: Transaction<Database>,
  approval: Row,
  data: Record<string, unknown>,
): Promise<void> {
  await emitEvent(trx, {
    userId: approval.user_id,
    type: 'approval.requested',
    data,
    sourceKey: `approval:${approval.id}`,
  })
}

function pendingAnswer(row: Row): ApprovalPending {
  return {
    object: 'approval',
    approval_id: row.id,
    status: row.status,
    reason: row.reason,
    expires_at: new Date(row.expires_at).toISOString(),
    url: row.url,
    pay_to: row.pay_to,
    amount: row.amount,
    ...(row.deposit ? { deposit: row.deposit } : {}),
    scheme: row.scheme,
    poll: `/v1/agent/approvals/${row.id}`,
    message:
      row.status === 'approved'
        ? 'approved: retry the same payment with approval_id to have it signed'
        : `this payment waits for the owner's approval (${row.reason === 'amount' ? 'above the approval amount' : 'many calls to a new seller'}); poll ${`/v1/agent/approvals/${row.id}`}, then retry with approval_id`,
  }
}

/** The owner's view of an approval, with the audit of its decision. */
function ownerView(row: Row & { agent_address?: string; agent_name?: string }) {
  return {
    object: 'approval' as const,
    id: row.id,
    status: row.status,
    reason: row.reason,
    agent: row.agent_address ? { address: row.agent_address, name: row.agent_name } : undefined,
    url: row.url,
    method: row.method,
    pay_to: row.pay_to,
    amount: row.amount,
    deposit: row.deposit,
    scheme: row.scheme,
    network: row.network,
    expires_at: new Date(row.expires_at).toISOString(),
    created_at: new Date(row.created_at).toISOString(),
    decision: row.decided_at
      ? {
          by: row.decided_by,
          via: row.decided_via,
          at: row.decided_at.toISOString(),
          ip: row.decided_ip,
          user_agent: row.decided_user_agent,
        }
      : null,
    used_at: row.used_at?.toISOString() ?? null,
    agent_payment_id: row.agent_payment_id,
  }
}

const ownerQuery = (db: Kysely<Database>) =>
  db
    .selectFrom('approvals as p')
    .innerJoin('agents as a', 'a.id', 'p.agent_id')
    .selectAll('p')
    .select(['a.address as agent_address', 'a.name as agent_name'])

/** The shared part: the store, the clock, expiry, the policy, the owner's decision. */
function approvalCore(deps: ApprovalsDeps) {
  const { db, config } = deps
  const now = deps.now ?? (() => new Date())
  const key = () => linkKey(requireMasterKey(config))
  /** Marks what passed its deadline undecided or unused as `expired` (of one user, agent or row). */
  async function expire(where: { userId?: string; agentId?: string; id?: string }): Promise<void> {
    let q = db
      .updateTable('approvals')
      .set({ status: 'expired' })
      .where('status', 'in', ['pending', 'approved'])
      .where('expires_at', '<=', now())
    if (where.userId) q = q.where('user_id', '=', where.userId)
    if (where.agentId) q = q.where('agent_id', '=', where.agentId)
    if (where.id) q = q.where('id', '=', where.id)
    await q.execute()
  }

  /** Why the agent's policy holds this payment, or null when it may be signed now. */
  async function policyReason(agent: AgentRow, t: ApprovalTerms): Promise<ApprovalReason | null> {
    if (agent.approval_above != null && t.amount > BigInt(agent.approval_above)) return 'amount'
    const n = agent.approval_new_seller_per_minute
    if (n == null) return null
    const at = now()
    const r = await db
      .selectFrom('agent_payments')
      .select([
        sql<Date | null>`min(created_at)`.as('first'),
        sql<string>`count(*) filter (where created_at > ${new Date(at.getTime() - 60_000)})`.as('recent'),
      ])
      .where('agent_id', '=', agent.id)
      .where('pay_to', '=', t.payTo.toLowerCase())
      .executeTakeFirst()
    const isNew = !r?.first || new Date(r.first).getTime() > at.getTime() - NEW_SELLER_HOURS * 3600_000
    return isNew && Number(r?.recent ?? 0) >= n ? 'new_seller_rate' : null
  }

  async function ownerRow(userId: string, id: string) {
    if (!isUuid(id)) throw appError('not_found', { what: 'approval' })
    await expire({ id })
    const row = await ownerQuery(db).where('p.id', '=', id).where('p.user_id', '=', userId).executeTakeFirst()
    if (!row) throw appError('not_found', { what: 'approval' })
    return row
  }

  /** Records the decision on a pending approval still in time; a repeated same decision answers the row. */
  async function decide(id: string, userId: string, decision: 'approve' | 'deny', from: DecidedFrom) {
    const before = await ownerRow(userId, id)
    const target: ApprovalStatus = decision === 'approve' ? 'approved' : 'denied'
    const at = now()
    const updated = await db
      .updateTable('approvals')
      .set({
        status: target,
        decided_by: from.userId,
        decided_via: from.via,
        decided_at: at,
        decided_ip: from.ip?.slice(0, 100) ?? null,
        decided_user_agent: from.userAgent?.slice(0, 300) ?? null,
        // an approval leaves the agent the same time again to use it
        ...(target === 'approved' ? { expires_at: new Date(at.getTime() + DECISION_MINUTES * 60_000) } : {}),
      })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('expires_at', '>', at)
      .returningAll()
      .executeTakeFirst()
    if (updated) return ownerView({ ...updated, agent_address: before.agent_address, agent_name: before.agent_name })
    const row = await ownerRow(userId, id)
    if (row.status === target || (target === 'approved' && row.status === 'used')) return ownerView(row)
    if (row.status === 'expired') throw appError('approval_expired', { id, detail: 'the owner did not decide in time' })
    throw appError('approval_decided', { id, status: row.status })
  }
  return { db, config, now, key, expire, policyReason, ownerRow, decide }
}

type Core = ReturnType<typeof approvalCore>

/** The agent side: holding a payment for its owner. */
function agentSide(c: Core) {
  const { db, config, now, key, expire, policyReason } = c
  return {
    /**
     * Holds the payment when the agent's policy says so: answers the pending approval (an open one
     * for the same terms is answered again, never doubled), or undefined when it may be signed.
     */
    async hold(agent: AgentRow, t: ApprovalTerms): Promise<ApprovalPending | undefined> {
      const reason = await policyReason(agent, t)
      if (!reason) return undefined
      await expire({ agentId: agent.id })
      const open = await db
        .selectFrom('approvals')
        .selectAll()
        .where('agent_id', '=', agent.id)
        .where('pay_to', '=', t.payTo.toLowerCase())
        .where('url', '=', t.url)
        .where('amount', '=', t.amount.toString())
        .where('status', 'in', ['pending', 'approved'])
        .orderBy('created_at', 'desc')
        .executeTakeFirst()
      if (open) return pendingAnswer(open)
      const row = await db.transaction().execute(async (trx) => {
        const r = await trx
          .insertInto('approvals')
          .values({
            agent_id: agent.id,
            user_id: agent.user_id,
            url: t.url,
            method: t.method,
            pay_to: t.payTo.toLowerCase(),
            amount: t.amount.toString(),
            deposit: t.deposit ?? null,
            scheme: t.scheme,
            network: t.network,
            reason,
            expires_at: new Date(now().getTime() + DECISION_MINUTES * 60_000),
          })
          .returningAll()
          .executeTakeFirstOrThrow()
        await onApprovalRequested(trx, r, {
          ...ownerView({ ...r, agent_address: agent.address }),
          decide_url: approvalLink(key(), config.baseUrl, r.id, new Date(r.expires_at)),
        })
        return r
      })
      return pendingAnswer(row)
    },
  }
}

/** The agent side: signing a payment once approved. */
function usingApproved(c: Core) {
  const { db, config, now, expire } = c
  return {
    /**
     * Signs the approved payment once: the row is locked while `sign` runs (caps and balance still
     * apply there), and the answer is kept, so a second retry returns the very same signature.
     * Refuses what is pending, denied, expired, or asked for other terms.
     */
    async useApproved<T extends { payment_id: string }>(
      agent: AgentRow,
      approvalId: unknown,
      t: ApprovalTerms,
      sign: () => Promise<T>,
    ): Promise<T> {
      if (typeof approvalId !== 'string' || !isUuid(approvalId))
        throw appError(
          'invalid_parameter',
          { param: 'approval_id', detail: 'expected the approval id of the 202 answer' },
          { details: { param: 'approval_id' } },
        )
      const id = approvalId
      await expire({ id })
      return db.transaction().execute(async (trx) => {
        const row = await trx
          .selectFrom('approvals')
          .selectAll()
          .where('id', '=', id)
          .where('agent_id', '=', agent.id)
          .forUpdate()
          .executeTakeFirst()
        if (!row) throw appError('not_found', { what: 'approval' })
        const diff = [
          row.url !== t.url && `url ${t.url} is not the approved ${row.url}`,
          row.pay_to !== t.payTo.toLowerCase() && `payTo ${t.payTo} is not the approved ${row.pay_to}`,
          row.amount !== t.amount.toString() && `amount ${t.amount} is not the approved ${row.amount}`,
        ].filter(Boolean)
        if (diff.length > 0)
          throw appError('approval_mismatch', { id, detail: diff.join('; ') }, { details: { approval_id: id } })
        const details = { details: { approval_id: id, status: row.status } }
        if (row.status === 'used')
          return JSON.parse(decryptSecret([requireMasterKey(config)], row.signed_payment!, `approval:${id}`)) as T
        if (row.status === 'pending') throw appError('approval_pending', { id }, details)
        if (row.status === 'denied') throw appError('approval_denied', { id }, details)
        if (row.status === 'expired')
          throw appError(
            'approval_expired',
            { id, detail: row.decided_at ? 'it was not used in time' : 'the owner did not decide in time' },
            details,
          )
        const signed = await sign()
        await trx
          .updateTable('approvals')
          .set({
            status: 'used',
            used_at: now(),
            agent_payment_id: signed.payment_id,
            signed_payment: encryptSecret(requireMasterKey(config), JSON.stringify(signed), `approval:${id}`),
          })
          .where('id', '=', id)
          .execute()
        return signed
      })
    },
  }
}

/** The owner side (and the agent's polling): list, read, decide, the signed link. */
function ownerSide(c: Core) {
  const { db, config, now, key, expire, ownerRow, decide } = c
  return {
    /** The agent's own view: the status it waits for (never the owner's address or browser). */
    async forAgent(agentId: string, id: string) {
      if (!isUuid(id)) throw appError('not_found', { what: 'approval' })
      await expire({ id })
      const row = await db
        .selectFrom('approvals')
        .selectAll()
        .where('id', '=', id)
        .where('agent_id', '=', agentId)
        .executeTakeFirst()
      if (!row) throw appError('not_found', { what: 'approval' })
      return { ...pendingAnswer(row), decided_at: row.decided_at?.toISOString() ?? null }
    },

    /** The user's approvals, newest first (optionally of one status). */
    async list(userId: string, q: { status?: unknown; limit?: unknown }) {
      const statuses = ['pending', 'approved', 'denied', 'expired', 'used']
      if (q.status !== undefined && !statuses.includes(q.status as string))
        throw appError(
          'invalid_parameter',
          { param: 'status', detail: `expected one of ${statuses.join(', ')}` },
          { details: { param: 'status' } },
        )
      const limit = q.limit === undefined ? 50 : Number(q.limit)
      if (!Number.isInteger(limit) || limit < 1 || limit > 200)
        throw appError(
          'invalid_parameter',
          { param: 'limit', detail: 'expected an integer from 1 to 200' },
          { details: { param: 'limit' } },
        )
      await expire({ userId })
      let query = ownerQuery(db).where('p.user_id', '=', userId)
      if (q.status !== undefined) query = query.where('p.status', '=', q.status as ApprovalStatus)
      const rows = await query.orderBy('p.created_at', 'desc').orderBy('p.id').limit(limit).execute()
      return { object: 'list' as const, data: rows.map(ownerView) }
    },

    async get(userId: string, id: string) {
      return ownerView(await ownerRow(userId, id))
    },

    decide,

    /** The approval a signed link names, for its confirm page; undefined when the token is not valid. */
    async byLink(id: string, token: unknown) {
      if (!isUuid(id) || !verifyLinkToken(key(), id, token, now().getTime())) return undefined
      await expire({ id })
      const row = await ownerQuery(db).where('p.id', '=', id).executeTakeFirst()
      return row ? ownerView(row) : undefined
    },

    /** A decision through the signed link: on the owner's behalf, audited as `link`. */
    async decideByLink(
      id: string,
      token: unknown,
      decision: 'approve' | 'deny',
      from: { ip: string | null; userAgent: string | null },
    ) {
      if (!isUuid(id) || !verifyLinkToken(key(), id, token, now().getTime())) throw appError('approval_link_invalid')
      const row = await db.selectFrom('approvals').select('user_id').where('id', '=', id).executeTakeFirst()
      if (!row) throw appError('approval_link_invalid')
      return decide(id, row.user_id, decision, { ...from, userId: row.user_id, via: 'link' })
    },

    /** The signed decision link of an approval (what the webhook carries). */
    link: (id: string, expiresAt: Date) => approvalLink(key(), config.baseUrl, id, expiresAt),
  }
}

/**
 * Human approval of agent payments (issue 38): the agent's policy (`approval_above`,
 * `approval_new_seller_per_minute` on agents) holds a payment as a pending approval instead of
 * signing it; the owner approves or denies (API, dashboard, CLI, or the signed link of the
 * webhook); the agent retries with `approval_id` and the payment is signed once, its answer kept
 * (encrypted) so a second retry gets the same signature. Decisions are audited (who, via what,
 * from which address and user agent, when). Expiry is applied when rows are read.
 */
export function createApprovals(deps: ApprovalsDeps) {
  const c = approvalCore(deps)
  return { ...agentSide(c), ...usingApproved(c), ...ownerSide(c) }
}

export type ApprovalsService = ReturnType<typeof createApprovals>
