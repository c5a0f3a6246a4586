import { createHash } from 'node:crypto'
import { sql, type Kysely, type Transaction } from 'kysely'
import type { CuratedSource, CuratedStatus, Database } from '../../db/database.js'
import type { ListingInput } from './validate-listing.js'

type Db = Kysely<Database> | Transaction<Database>

export interface EntryMeta {
  id: string
  source: CuratedSource
  status: CuratedStatus
  managedBy: 'file' | 'operator' | 'submitter'
  submitterIp?: string | null
  /** keep the stored `enabled` of an existing row (operators' toggles survive a catalog sync) */
  keepEnabled?: boolean
}

/** A stable hash of a listing, so a sync can skip entries that did not change. */
export function listingHash(input: ListingInput): string {
  return createHash('sha256').update(JSON.stringify(input)).digest('hex')
}

/**
 * Insert or replace one stored entry with its endpoints and skills. Endpoint and skill rows keep
 * their ids (and created_at) when the listing names them, so clients can follow them across edits.
 */
export async function writeEntry(trx: Db, meta: EntryMeta, input: ListingInput): Promise<void> {
  const now = new Date()
  const row = {
    id: meta.id,
    source: meta.source,
    status: meta.status,
    managed_by: meta.managedBy,
    content_hash: listingHash(input),
    name: input.name,
    description: input.description,
    category: input.category,
    tags: input.tags,
    url: input.url,
    logo_url: input.logo_url,
    docs_url: input.docs_url,
    platform_agent_address: input.platform_agent_address,
    enabled: input.enabled,
    contact: input.contact,
    submitter_ip: meta.submitterIp ?? null,
  }
  const { id: _id, enabled, submitter_ip: _ip, ...update } = row
  await trx
    .insertInto('curated_agents')
    .values(row)
    .onConflict((oc) =>
      oc.column('id').doUpdateSet({ ...update, ...(meta.keepEnabled ? {} : { enabled }), updated_at: now }),
    )
    .execute()

  const epIds = input.endpoints.map((e, i) => e.id ?? `${meta.id}.e${i + 1}`)
  await trx
    .deleteFrom('curated_agent_endpoints')
    .where('curated_agent_id', '=', meta.id)
    .where('id', 'not in', epIds.length ? epIds : [''])
    .execute()
  for (const [i, e] of input.endpoints.entries()) {
    const values = {
      curated_agent_id: meta.id,
      position: i,
      url: e.url,
      methods: e.methods,
      x402_enabled: e.x402_enabled,
      x402_protocol_version: e.x402_protocol_version,
      network: e.network,
      description: e.description,
      enabled: e.enabled,
      amount: e.amount,
      currency: e.currency,
      network_caip2_id: e.network_caip2_id,
      asset_address: e.asset_address,
      pay_to: e.pay_to,
      x402_schema: e.x402_schema,
    }
    await trx
      .insertInto('curated_agent_endpoints')
      .values({ id: epIds[i], ...values })
      .onConflict((oc) =>
        oc
          .column('id')
          .doUpdateSet({ ...values, updated_at: now })
          .where('curated_agent_endpoints.curated_agent_id', '=', meta.id),
      )
      .execute()
  }

  const skIds = input.skills.map((s, i) => s.id ?? `${meta.id}.s${i + 1}`)
  await trx
    .deleteFrom('curated_agent_skills')
    .where('curated_agent_id', '=', meta.id)
    .where('id', 'not in', skIds.length ? skIds : [''])
    .execute()
  for (const [i, s] of input.skills.entries()) {
    const values = {
      curated_agent_id: meta.id,
      position: i,
      name: s.name,
      instructions: s.instructions === null || s.instructions === undefined ? null : JSON.stringify(s.instructions),
      docs_url: s.docs_url,
      skillmd_url: s.skillmd_url,
    }
    await trx
      .insertInto('curated_agent_skills')
      .values({ id: skIds[i], ...values })
      .onConflict((oc) =>
        oc
          .column('id')
          .doUpdateSet({ ...values, updated_at: now })
          .where('curated_agent_skills.curated_agent_id', '=', meta.id),
      )
      .execute()
  }
}

/** Serialize writers of curated entries (sync, operator routes) across processes. */
export async function lockCurated(trx: Transaction<Database>): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext('tollgate.marketplace.curated'))`.execute(trx)
}
