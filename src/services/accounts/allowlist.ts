import type { Kysely } from 'kysely'
import type { AllowlistKind, Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { isUuid } from './api-keys.js'
import { address, hostname, invalid, slug } from './validate.js'

export interface AllowlistEntryView {
  object: 'allowlist_entry'
  id: string
  agent: string
  kind: AllowlistKind
  value: string
  created_at: string
}

/** Normalises an entry so that matching at payment time is a plain equality (pay_to lower-case hex). */
export function parseAllowlistEntry(body: { kind?: unknown; value?: unknown }): { kind: AllowlistKind; value: string } {
  switch (body.kind) {
    case 'pay_to':
      return { kind: 'pay_to', value: address('value', body.value).toLowerCase() }
    case 'namespace':
      return {
        kind: 'namespace',
        value: slug('value', typeof body.value === 'string' ? body.value.toLowerCase() : body.value),
      }
    case 'host':
      return { kind: 'host', value: hostname('value', body.value) }
    default:
      throw invalid('kind', 'expected one of pay_to | namespace | host')
  }
}

/**
 * The sellers an agent may pay. An empty list allows every seller; the buyer-side payer enforces
 * it. Adding an entry that exists returns the existing one (no duplicates).
 */
export function createAllowlist({ db }: { db: Kysely<Database> }) {
  const view = (
    agent: string,
    r: { id: string; kind: AllowlistKind; value: string; created_at: Date },
  ): AllowlistEntryView => ({
    object: 'allowlist_entry',
    id: r.id,
    agent,
    kind: r.kind,
    value: r.value,
    created_at: r.created_at.toISOString(),
  })
  return {
    async add(
      agent: { id: string; address: string },
      body: { kind?: unknown; value?: unknown },
    ): Promise<AllowlistEntryView> {
      const e = parseAllowlistEntry(body)
      const row =
        (await db
          .insertInto('agent_allowlist')
          .values({ agent_id: agent.id, ...e })
          .onConflict((oc) => oc.columns(['agent_id', 'kind', 'value']).doNothing())
          .returning(['id', 'kind', 'value', 'created_at'])
          .executeTakeFirst()) ??
        (await db
          .selectFrom('agent_allowlist')
          .select(['id', 'kind', 'value', 'created_at'])
          .where('agent_id', '=', agent.id)
          .where('kind', '=', e.kind)
          .where('value', '=', e.value)
          .executeTakeFirstOrThrow())
      return view(agent.address, row)
    },
    async list(agent: { id: string; address: string }): Promise<AllowlistEntryView[]> {
      const rows = await db
        .selectFrom('agent_allowlist')
        .select(['id', 'kind', 'value', 'created_at'])
        .where('agent_id', '=', agent.id)
        .orderBy('created_at')
        .orderBy('id')
        .execute()
      return rows.map((r) => view(agent.address, r))
    },
    async remove(agent: { id: string; address: string }, id: string): Promise<void> {
      if (!isUuid(id)) throw appError('not_found', { what: 'allowlist entry' })
      const r = await db
        .deleteFrom('agent_allowlist')
        .where('id', '=', id)
        .where('agent_id', '=', agent.id)
        .executeTakeFirst()
      if (r.numDeletedRows === 0n) throw appError('not_found', { what: 'allowlist entry' })
    },
  }
}
