// The operators' list of curated entries (catalog and bazaar), review state and endpoint count included.
import type { CoreDeps as Deps } from '../../core-deps.js'

/** A stored entry as operators see it: review state included. */
export interface OperatorEntry {
  id: string
  source: 'catalog' | 'bazaar'
  status: 'pending' | 'approved' | 'rejected'
  managed_by: string
  enabled: boolean
  name: string
  category: string
  contact: string | null
  review_note: string | null
  submitter_ip: string | null
  endpoint_count: number
  created_at: number
  updated_at: number
}

/** The newest 1000 curated entries, optionally of one source and review status. */
export async function listCurated(
  { db }: Pick<Deps, 'db'>,
  filter: { source?: string; status?: string } = {},
): Promise<OperatorEntry[]> {
  let q = db
    .selectFrom('curated_agents as a')
    .select([
      'a.id',
      'a.source',
      'a.status',
      'a.managed_by',
      'a.enabled',
      'a.name',
      'a.category',
      'a.contact',
      'a.review_note',
      'a.submitter_ip',
      'a.created_at',
      'a.updated_at',
    ])
    .select((eb) =>
      eb
        .selectFrom('curated_agent_endpoints as e')
        .whereRef('e.curated_agent_id', '=', 'a.id')
        .select(eb.fn.countAll<string>().as('n'))
        .as('endpoint_count'),
    )
    .orderBy('a.created_at', 'desc')
    .limit(1000)
  if (filter.source === 'catalog' || filter.source === 'bazaar') q = q.where('a.source', '=', filter.source)
  if (filter.status === 'pending' || filter.status === 'approved' || filter.status === 'rejected')
    q = q.where('a.status', '=', filter.status)
  const rows = await q.execute()
  return rows.map((r) => ({
    ...r,
    endpoint_count: Number(r.endpoint_count ?? 0),
    created_at: r.created_at.getTime(),
    updated_at: r.updated_at.getTime(),
  }))
}
