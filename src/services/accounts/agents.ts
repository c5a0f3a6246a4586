import { sql, type Kysely, type Selectable } from 'kysely'
import type { AgentsTable, Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { createCustodialWallet } from '../wallets/custodial-wallet.js'
import { isUuid } from './api-keys.js'
import { address as parseAddress, atomicAmount, invalid, name as parseName } from './validate.js'

export interface SpendCaps {
  /** atomic USDC units as decimal strings; null = no cap */
  per_transaction: string | null
  daily: string | null
  monthly: string | null
  /** batch-settlement: the most deposited into a channel at a time; null = 100 x the price */
  channel_deposit: string | null
}

export interface TopUpSettings {
  enabled: boolean
  threshold: string
  amount: string
  funding_source: 'funding_wallet'
}

/** When a payment waits for the owner's approval (services/approvals); null = never. */
interface ApprovalPolicy {
  /** atomic USDC: a payment above this waits */
  above: string | null
  /** more calls a minute than this to a seller first paid less than a day ago wait */
  new_seller_calls_per_minute: number | null
}

export interface AgentView {
  object: 'agent'
  address: string
  name: string
  spend_caps: SpendCaps
  approval_policy: ApprovalPolicy
  top_up: TopUpSettings
  created_at: string
  updated_at: string
}

type AgentRow = Omit<Selectable<AgentsTable>, 'encrypted_key'>
const COLUMNS = [
  'id',
  'user_id',
  'name',
  'address',
  'cap_per_transaction',
  'cap_daily',
  'cap_monthly',
  'cap_channel_deposit',
  'approval_above',
  'approval_new_seller_per_minute',
  'top_up_enabled',
  'top_up_threshold',
  'top_up_amount',
  'top_up_source',
  'created_at',
  'updated_at',
] as const

export function agentView(r: AgentRow): AgentView {
  return {
    object: 'agent',
    address: r.address,
    name: r.name,
    spend_caps: {
      per_transaction: r.cap_per_transaction,
      daily: r.cap_daily,
      monthly: r.cap_monthly,
      channel_deposit: r.cap_channel_deposit,
    },
    approval_policy: { above: r.approval_above, new_seller_calls_per_minute: r.approval_new_seller_per_minute },
    top_up: {
      enabled: r.top_up_enabled,
      threshold: r.top_up_threshold,
      amount: r.top_up_amount,
      funding_source: r.top_up_source,
    },
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  }
}

type CapColumn = 'cap_per_transaction' | 'cap_daily' | 'cap_monthly' | 'cap_channel_deposit'

/** Validates a partial spend-caps object into column updates. */
export function parseCaps(v: unknown): Partial<Record<CapColumn, string | null>> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw invalid('spend_caps', 'expected an object')
  const o = v as Record<string, unknown>
  const out: Partial<Record<CapColumn, string | null>> = {}
  for (const k of Object.keys(o))
    if (!['per_transaction', 'daily', 'monthly', 'channel_deposit'].includes(k))
      throw invalid(`spend_caps.${k}`, 'unknown field')
  if ('per_transaction' in o)
    out.cap_per_transaction = atomicAmount('spend_caps.per_transaction', o.per_transaction, { allowNull: true })
  if ('daily' in o) out.cap_daily = atomicAmount('spend_caps.daily', o.daily, { allowNull: true })
  if ('monthly' in o) out.cap_monthly = atomicAmount('spend_caps.monthly', o.monthly, { allowNull: true })
  if ('channel_deposit' in o)
    out.cap_channel_deposit = atomicAmount('spend_caps.channel_deposit', o.channel_deposit, { allowNull: true })
  return out
}

/** Validates a partial approval policy into column updates. */
function parseApprovalPolicy(
  v: unknown,
): Partial<{ approval_above: string | null; approval_new_seller_per_minute: number | null }> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw invalid('approval_policy', 'expected an object')
  const o = v as Record<string, unknown>
  const out: Partial<{ approval_above: string | null; approval_new_seller_per_minute: number | null }> = {}
  for (const k of Object.keys(o))
    if (!['above', 'new_seller_calls_per_minute'].includes(k)) throw invalid(`approval_policy.${k}`, 'unknown field')
  if ('above' in o) out.approval_above = atomicAmount('approval_policy.above', o.above, { allowNull: true })
  if ('new_seller_calls_per_minute' in o) {
    const n = o.new_seller_calls_per_minute
    if (n !== null && (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 100_000))
      throw invalid('approval_policy.new_seller_calls_per_minute', 'expected an integer from 0 to 100000, or null')
    out.approval_new_seller_per_minute = n
  }
  return out
}

export function parseTopUp(
  v: unknown,
): Partial<{ top_up_enabled: boolean; top_up_threshold: string; top_up_amount: string }> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw invalid('top_up', 'expected an object')
  const o = v as Record<string, unknown>
  const out: Partial<{ top_up_enabled: boolean; top_up_threshold: string; top_up_amount: string }> = {}
  for (const k of Object.keys(o))
    if (!['enabled', 'threshold', 'amount', 'funding_source'].includes(k)) throw invalid(`top_up.${k}`, 'unknown field')
  if ('enabled' in o) {
    if (typeof o.enabled !== 'boolean') throw invalid('top_up.enabled', 'expected true or false')
    out.top_up_enabled = o.enabled
  }
  if ('threshold' in o) out.top_up_threshold = atomicAmount('top_up.threshold', o.threshold)!
  if ('amount' in o) out.top_up_amount = atomicAmount('top_up.amount', o.amount)!
  if ('funding_source' in o && o.funding_source !== 'funding_wallet')
    throw invalid('top_up.funding_source', 'the only funding source is "funding_wallet" (the user\'s funding wallet)')
  return out
}

/** 409 `agent_name_taken` when another of the user's agents (not `except`) has `name`, in any case. */
async function refuseTakenName(db: Kysely<Database>, userId: string, name: string, except?: string): Promise<void> {
  let q = db
    .selectFrom('agents')
    .select('address')
    .where('user_id', '=', userId)
    .where(sql`lower(name)`, '=', name.toLowerCase())
  if (except) q = q.where('id', '!=', except)
  const taken = await q.executeTakeFirst()
  if (taken)
    throw appError('agent_name_taken', { name, address: taken.address }, { details: { address: taken.address } })
}

/** Two requests naming agents alike at once: the unique index refuses the second, answered as the check would. */
async function nameRace(db: Kysely<Database>, err: unknown, userId: string, name: string): Promise<never> {
  if ((err as { constraint?: string }).constraint === 'agents_user_name_unique') await refuseTakenName(db, userId, name)
  throw err
}

/** Agents of a user, each with a custodial wallet. Another user's agent is "not found", never "forbidden". */
export function createAgents({ db, masterKey }: { db: Kysely<Database>; masterKey: () => Buffer }) {
  async function find(userId: string, address: string): Promise<AgentRow> {
    let a: string
    try {
      a = parseAddress('address', address)
    } catch {
      throw appError('not_found', { what: 'agent' })
    }
    const row = await db
      .selectFrom('agents')
      .select(COLUMNS)
      .where('address', '=', a)
      .where('user_id', '=', userId)
      .executeTakeFirst()
    if (!row) throw appError('not_found', { what: 'agent' })
    return row
  }

  return {
    find,
    async create(
      userId: string,
      body: { name?: unknown; spend_caps?: unknown; top_up?: unknown; approval_policy?: unknown },
    ): Promise<AgentView> {
      const agentName = parseName('name', body.name)
      const caps = {
        ...(body.spend_caps === undefined ? {} : parseCaps(body.spend_caps)),
        ...(body.approval_policy === undefined ? {} : parseApprovalPolicy(body.approval_policy)),
      }
      const topUp = body.top_up === undefined ? {} : parseTopUp(body.top_up)
      checkTopUp(topUp)
      await refuseTakenName(db, userId, agentName)
      const wallet = createCustodialWallet(masterKey(), 'agent')
      const row = await db
        .insertInto('agents')
        .values({
          user_id: userId,
          name: agentName,
          address: wallet.address,
          encrypted_key: wallet.encryptedKey,
          ...caps,
          ...topUp,
        })
        .returning(COLUMNS)
        .executeTakeFirstOrThrow()
        .catch((err) => nameRace(db, err, userId, agentName))
      return agentView(row)
    },

    async list(userId: string): Promise<AgentView[]> {
      const rows = await db
        .selectFrom('agents')
        .select(COLUMNS)
        .where('user_id', '=', userId)
        .orderBy('created_at')
        .orderBy('id')
        .execute()
      return rows.map(agentView)
    },

    async get(userId: string, address: string): Promise<AgentView> {
      return agentView(await find(userId, address))
    },

    /** Partial update of name, spend_caps and top_up (each field of the nested objects optional). */
    async update(
      userId: string,
      address: string,
      body: { name?: unknown; spend_caps?: unknown; top_up?: unknown; approval_policy?: unknown },
    ): Promise<AgentView> {
      const agent = await find(userId, address)
      for (const k of Object.keys(body))
        if (!['name', 'spend_caps', 'top_up', 'approval_policy'].includes(k)) throw invalid(k, 'unknown field')
      const set = {
        ...(body.name !== undefined ? { name: parseName('name', body.name) } : {}),
        ...(body.spend_caps !== undefined ? parseCaps(body.spend_caps) : {}),
        ...(body.top_up !== undefined ? parseTopUp(body.top_up) : {}),
        ...(body.approval_policy !== undefined ? parseApprovalPolicy(body.approval_policy) : {}),
      }
      checkTopUp({
        top_up_enabled: 'top_up_enabled' in set ? set.top_up_enabled : agent.top_up_enabled,
        top_up_amount: 'top_up_amount' in set ? set.top_up_amount : agent.top_up_amount,
      })
      if (set.name !== undefined) await refuseTakenName(db, userId, set.name, agent.id)
      const row = await db
        .updateTable('agents')
        .set({ ...set, updated_at: sql`now()` })
        .where('id', '=', agent.id)
        .returning(COLUMNS)
        .executeTakeFirstOrThrow()
        .catch((err) => nameRace(db, err, userId, set.name ?? agent.name))
      return agentView(row)
    },
  }
}

function checkTopUp(t: { top_up_enabled?: boolean; top_up_amount?: string }): void {
  if (t.top_up_enabled && (t.top_up_amount === undefined || t.top_up_amount === '0'))
    throw invalid('top_up.amount', 'must be greater than 0 when top-ups are enabled')
}

export type AgentsService = ReturnType<typeof createAgents>
export { isUuid }
