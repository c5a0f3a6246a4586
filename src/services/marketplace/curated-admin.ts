import { randomUUID } from 'node:crypto'
import type { CoreDeps as Deps } from '../../core-deps.js'
import { appError } from '../../errors.js'
import { lockCurated, writeEntry } from './curated-store.js'
import { announceMarketplaceChange } from './marketplace.js'
import { listCurated, type OperatorEntry } from './curated-list.js'
import { validateListing, type ListingMode } from './validate-listing.js'

type AdminDeps = Pick<Deps, 'db' | 'redis' | 'key'>

function parse(body: unknown, mode: ListingMode) {
  const r = validateListing(body, mode)
  if (!r.ok) {
    const first = r.problems[0]
    throw appError(
      'invalid_submission',
      {
        detail: `${first.field} ${first.reason}${r.problems.length > 1 ? ` (and ${r.problems.length - 1} more)` : ''}`,
      },
      { details: { problems: r.problems } },
    )
  }
  return r.value
}

/**
 * Operator and submitter operations on curated entries. Every change is announced, so every
 * process drops its marketplace snapshot.
 */
export function createCuratedAdmin(deps: AdminDeps) {
  const changed = (what: Record<string, unknown>) => announceMarketplaceChange(deps, what)

  async function find(id: string) {
    const row = await deps.db
      .selectFrom('curated_agents')
      .select(['id', 'source', 'status', 'managed_by', 'enabled'])
      .where('id', '=', id)
      .executeTakeFirst()
    if (!row) throw appError('not_found', { what: 'marketplace entry' })
    return row
  }

  return {
    /** Community submission: stored as a pending bazaar entry, invisible until approved. */
    async submit(body: unknown, submitterIp: string): Promise<{ id: string; status: 'pending' }> {
      const input = parse(body, 'bazaar')
      const id = randomUUID()
      await deps.db
        .transaction()
        .execute((trx) =>
          writeEntry(trx, { id, source: 'bazaar', status: 'pending', managedBy: 'submitter', submitterIp }, input),
        )
      return { id, status: 'pending' }
    },

    list: (filter: { source?: string; status?: string } = {}): Promise<OperatorEntry[]> => listCurated(deps, filter),

    /** Create an operator-managed catalog entry; 409 when the id is taken. */
    async createCatalog(body: unknown): Promise<{ id: string }> {
      const input = parse(body, 'catalog')
      const id = input.id ?? randomUUID()
      await deps.db.transaction().execute(async (trx) => {
        await lockCurated(trx)
        const exists = await trx.selectFrom('curated_agents').select('id').where('id', '=', id).executeTakeFirst()
        if (exists) throw appError('conflict', { detail: `marketplace entry ${id} already exists` })
        await writeEntry(trx, { id, source: 'catalog', status: 'approved', managedBy: 'operator' }, input)
      })
      await changed({ id, op: 'create' })
      return { id }
    },

    /** Replace an operator-managed catalog entry; entries from catalog.json are edited in the file. */
    async replaceCatalog(id: string, body: unknown): Promise<{ id: string }> {
      const input = parse(body, 'catalog')
      await deps.db.transaction().execute(async (trx) => {
        await lockCurated(trx)
        const row = await trx
          .selectFrom('curated_agents')
          .select(['source', 'managed_by'])
          .where('id', '=', id)
          .executeTakeFirst()
        if (!row || row.source !== 'catalog') throw appError('not_found', { what: 'catalog entry' })
        if (row.managed_by === 'file')
          throw appError('conflict', { detail: `catalog entry ${id} comes from catalog/catalog.json; change it there` })
        await writeEntry(trx, { id, source: 'catalog', status: 'approved', managedBy: 'operator' }, { ...input, id })
      })
      await changed({ id, op: 'replace' })
      return { id }
    },

    async remove(id: string): Promise<void> {
      const row = await find(id)
      if (row.managed_by === 'file')
        throw appError('conflict', {
          detail: `catalog entry ${id} comes from catalog/catalog.json; remove it there or disable it`,
        })
      await deps.db.deleteFrom('curated_agents').where('id', '=', id).execute()
      await changed({ id, op: 'delete' })
    },

    async setEnabled(id: string, enabled: boolean): Promise<void> {
      await find(id)
      await deps.db
        .updateTable('curated_agents')
        .set({ enabled, updated_at: new Date() })
        .where('id', '=', id)
        .execute()
      await changed({ id, op: enabled ? 'enable' : 'disable' })
    },

    /** Review a bazaar submission: approve lists it, reject keeps it out for good. */
    async review(id: string, decision: 'approved' | 'rejected', note: string | null): Promise<void> {
      const row = await find(id)
      if (row.source !== 'bazaar')
        throw appError('conflict', { detail: `${id} is a ${row.source} entry; only bazaar submissions are reviewed` })
      if (row.status === 'rejected' && decision === 'approved')
        throw appError('conflict', { detail: `${id} was rejected; it cannot be approved` })
      await deps.db
        .updateTable('curated_agents')
        .set({ status: decision, review_note: note, reviewed_at: new Date(), updated_at: new Date() })
        .where('id', '=', id)
        .execute()
      await changed({ id, op: decision })
    },
  }
}
