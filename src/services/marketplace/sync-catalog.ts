import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { CoreDeps as Deps } from '../../core-deps.js'
import { listingHash, lockCurated, writeEntry } from './curated-store.js'
import { announceMarketplaceChange } from './marketplace.js'
import { validateListing, type ListingInput } from './validate-listing.js'

const here = path.dirname(fileURLToPath(import.meta.url))
/** catalog/catalog.json at the repo root (from src/ or dist/src/). */
export const defaultCatalogFile =
  [path.resolve(here, '../../../catalog/catalog.json'), path.resolve(here, '../../../../catalog/catalog.json')].find(
    (f) => existsSync(f),
  ) ?? path.resolve(here, '../../../catalog/catalog.json')

export interface SyncResult {
  inserted: string[]
  updated: string[]
  deleted: string[]
  unchanged: number
  /** ids in the file that an operator-created entry already uses */
  skipped: string[]
}

/** Read and validate the catalog file; throws naming every bad field of every entry. */
export function readCatalogFile(file = defaultCatalogFile): ListingInput[] {
  const doc = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown; entries?: unknown }
  if (doc.version !== 1 || !Array.isArray(doc.entries))
    throw new Error(`${file}: expected {"version": 1, "entries": [...]}`)
  const problems: string[] = []
  const inputs: ListingInput[] = []
  doc.entries.forEach((raw, i) => {
    const r = validateListing(raw, 'catalog')
    if (!r.ok) problems.push(...r.problems.map((p) => `entries[${i}].${p.field}: ${p.reason}`))
    else if (!r.value.id)
      problems.push(`entries[${i}].id: required in the catalog file (it keeps the entry stable across syncs)`)
    else inputs.push(r.value)
  })
  const ids = inputs.map((x) => x.id)
  const dup = ids.find((id, i) => ids.indexOf(id) !== i)
  if (dup) problems.push(`entry id ${dup} appears twice`)
  if (problems.length) throw new Error(`${file} is invalid:\n  ${problems.join('\n  ')}`)
  return inputs
}

/**
 * Bring the stored catalog entries in line with catalog/catalog.json. Idempotent: unchanged entries
 * are not written (their updated_at stays), so the dev start can call it every time. Entries
 * removed from the file are deleted; an operator's enable/disable of a file entry is kept.
 *
 * @example
 *   await syncCatalog(deps) // { inserted: [...], updated: [], deleted: [], unchanged: 0, skipped: [] }
 */
export async function syncCatalog(
  deps: Pick<Deps, 'db' | 'redis' | 'key'>,
  opts: { file?: string } = {},
): Promise<SyncResult> {
  const inputs = readCatalogFile(opts.file)
  const result: SyncResult = { inserted: [], updated: [], deleted: [], unchanged: 0, skipped: [] }
  await deps.db.transaction().execute(async (trx) => {
    await lockCurated(trx)
    const stored = await trx
      .selectFrom('curated_agents')
      .select(['id', 'managed_by', 'content_hash', 'source'])
      .where((eb) =>
        eb.or([
          eb('managed_by', '=', 'file'),
          eb(
            'id',
            'in',
            inputs.map((x) => x.id!),
          ),
        ]),
      )
      .execute()
    const byId = new Map(stored.map((r) => [r.id, r]))
    for (const input of inputs) {
      const id = input.id!
      const row = byId.get(id)
      if (row && (row.managed_by !== 'file' || row.source !== 'catalog')) {
        result.skipped.push(id)
        continue
      }
      if (row && row.content_hash === listingHash(input)) {
        result.unchanged++
        continue
      }
      await writeEntry(trx, { id, source: 'catalog', status: 'approved', managedBy: 'file', keepEnabled: true }, input)
      ;(row ? result.updated : result.inserted).push(id)
    }
    const inFile = new Set(inputs.map((x) => x.id))
    const gone = stored.filter((r) => r.managed_by === 'file' && !inFile.has(r.id)).map((r) => r.id)
    if (gone.length) await trx.deleteFrom('curated_agents').where('id', 'in', gone).execute()
    result.deleted = gone
  })
  if (result.inserted.length + result.updated.length + result.deleted.length > 0)
    await announceMarketplaceChange(deps, { op: 'catalog-sync' })
  return result
}
