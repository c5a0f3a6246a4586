// An agent's top-ups as the API shows them (GET /v1/agents/{address}/top-ups, the payments list):
// the view of one row, and keyset pages of an agent's top-ups.
import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import type { Topup } from '../../db/topups-tables.js'
import { invalid } from '../accounts/validate.js'

export interface TopupView {
  object: 'top_up'
  id: string
  agent: string
  need: number
  status: Topup['status']
  amount: string
  funding_wallet: string | null
  tx_hash: string | null
  attempts: number
  error: string | null
  created_at: string
  updated_at: string
}

export function topupView(r: Topup): TopupView {
  return {
    object: 'top_up',
    id: r.id,
    agent: r.agent_address,
    need: r.need_seq,
    status: r.status,
    amount: r.amount,
    funding_wallet: r.funding_address,
    tx_hash: r.tx_hash,
    attempts: r.attempts,
    error: r.error,
    created_at: new Date(r.created_at).toISOString(),
    updated_at: new Date(r.updated_at).toISOString(),
  }
}

/** The largest page of top-ups, and the default (so a client that ignores paging sees what it did before paging existed). */
export const TOPUPS_PAGE_MAX = 100

export interface TopupsPage {
  object: 'list'
  data: TopupView[]
  has_more: boolean
  next_cursor: string | null
}

/**
 * One page of an agent's top-ups, newest need first, and the cursor of the next page
 * (GET /v1/agents/{address}/top-ups). Keyset paging on (agent_id, need_seq), the unique key, so a
 * top-up opened between two pages never shifts the later pages.
 *
 * @example
 *   const first = await topupsPage(db, agent.id, { limit: 50 })
 *   const second = first.next_cursor ? await topupsPage(db, agent.id, { limit: 50, cursor: first.next_cursor }) : undefined
 */
export async function topupsPage(
  db: Kysely<Database>,
  agentId: string,
  opts: { limit?: number; cursor?: string } = {},
): Promise<TopupsPage> {
  const limit = opts.limit ?? TOPUPS_PAGE_MAX
  if (!Number.isInteger(limit) || limit < 1 || limit > TOPUPS_PAGE_MAX)
    throw invalid('limit', `expected an integer from 1 to ${TOPUPS_PAGE_MAX}`)
  const before = opts.cursor === undefined ? undefined : decodeTopupsCursor(opts.cursor)
  let query = db.selectFrom('topups').selectAll().where('agent_id', '=', agentId)
  if (before !== undefined) query = query.where('need_seq', '<', before)
  const rows = await query
    .orderBy('need_seq', 'desc')
    .limit(limit + 1)
    .execute()
  const hasMore = rows.length > limit
  const data = rows.slice(0, limit).map(topupView)
  const last = data.at(-1)
  return {
    object: 'list',
    data,
    has_more: hasMore,
    next_cursor: hasMore && last ? encodeTopupsCursor(last.need) : null,
  }
}

/** Top-ups of one agent, newest need first: the first `limit` of them. */
export async function listTopups(db: Kysely<Database>, agentId: string, limit = TOPUPS_PAGE_MAX): Promise<TopupView[]> {
  return (await topupsPage(db, agentId, { limit })).data
}

// a cursor is the need_seq of the last top-up of the page, opaque to clients (as the history cursors)
function encodeTopupsCursor(needSeq: number): string {
  return Buffer.from(JSON.stringify(['need', needSeq])).toString('base64url')
}

function decodeTopupsCursor(c: string): number {
  try {
    const parts = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as unknown
    if (
      Array.isArray(parts) &&
      parts.length === 2 &&
      parts[0] === 'need' &&
      Number.isSafeInteger(parts[1]) &&
      (parts[1] as number) >= 0
    )
      return parts[1] as number
  } catch {
    // not JSON: refused below
  }
  throw invalid('cursor', 'not a cursor returned by this list')
}
