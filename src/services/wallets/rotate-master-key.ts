import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { rotateUpstreamSecrets } from '../publishing/upstream-config.js'
import { walletAad } from './custodial-wallet.js'
import { platformKeyAad } from './platform-key.js'
import { envelopeKeyId, masterKeyId, reencryptSecret } from '../../secrets/wallet-crypto.js'

/** Rows rewritten under the new key, per kind of secret. */
export interface RotationReport {
  agents: number
  funding_wallets: number
  endpoints: number
  /** keys the platform holds for a purpose (the batch-settlement receiverAuthorizer) */
  platform_keys: number
}

/** The given keys do not open every stored secret; nothing was changed. */
export class MasterKeyRotationError extends Error {
  constructor(
    readonly undecryptable: number,
    readonly keyIds: string[],
  ) {
    super(
      `${undecryptable} stored secret(s) cannot be decrypted with the given keys (they are under master key id(s) ${keyIds.join(', ') || 'unknown'}); ` +
        'nothing was changed — check the old key',
    )
    this.name = 'MasterKeyRotationError'
  }
}

const WALLET_TABLES = [
  ['agents', 'agent'],
  ['funding_wallets', 'funding'],
] as const

/**
 * Custodial wallet keys stored under a master key other than `current` (and not one of `old`):
 * they cannot be opened by a process started with these keys. `npm start` warns with this when its
 * `.tollgate/dev.json` (and so its dev master key) is not the one the database was used with.
 */
export async function walletsUnderOtherKeys(
  db: Kysely<Database>,
  current: Buffer,
  old: readonly Buffer[] = [],
): Promise<{ agents: number; funding_wallets: number }> {
  const ids = [current, ...old].map(masterKeyId)
  const count = async (table: 'agents' | 'funding_wallets') =>
    Number(
      (
        await sql<{
          n: string
        }>`select count(*) as n from ${sql.table(table)} where split_part(encrypted_key, '.', 2) <> all(${ids}::text[])`.execute(
          db,
        )
      ).rows[0]!.n,
    )
  return { agents: await count('agents'), funding_wallets: await count('funding_wallets') }
}

/**
 * Re-encrypts every stored secret (agent and funding wallet keys, forwarded upstream header values
 * and signing secrets) under `newKey`. It first decrypts everything not yet under `newKey` with
 * `oldKeys` (or `newKey`) and refuses, changing nothing, if any secret does not open. Rows already
 * under the new key are skipped, so a rerun is a no-op and also picks up rows written under an
 * old key meanwhile. Each row is rewritten only if it still holds the value that was read.
 *
 * @example
 *   await rotateMasterKey(db, [oldKey], newKey) // { agents: 12, funding_wallets: 3, endpoints: 4 }
 */
export async function rotateMasterKey(
  db: Kysely<Database>,
  oldKeys: readonly Buffer[],
  newKey: Buffer,
  opts: {
    pageSize?: number
    /** check only; the report counts the rows a real run would rewrite */ dryRun?: boolean
  } = {},
): Promise<RotationReport> {
  const pageSize = opts.pageSize ?? 500
  const newId = masterKeyId(newKey)

  // 1. check: every secret must open, or nothing is written
  let bad = 0
  const badIds = new Set<string>()
  const pending: RotationReport = { agents: 0, funding_wallets: 0, endpoints: 0, platform_keys: 0 }
  const attempt = (box: string, fn: () => unknown) => {
    try {
      fn()
    } catch {
      bad++
      badIds.add(envelopeKeyId(box) ?? 'unknown')
    }
  }
  for (const [table, kind] of WALLET_TABLES) {
    for await (const r of walletRows(db, table, newId, pageSize)) {
      pending[table]++
      attempt(r.encrypted_key, () => reencryptSecret(oldKeys, newKey, r.encrypted_key, walletAad(kind, r.address)))
    }
  }
  for (const r of await platformKeyRows(db, newId)) {
    pending.platform_keys++
    attempt(r.encrypted_key, () =>
      reencryptSecret(oldKeys, newKey, r.encrypted_key, platformKeyAad(r.purpose, r.address)),
    )
  }
  for await (const e of endpointRows(db, pageSize)) {
    try {
      if (rotateUpstreamSecrets(e.upstream_config, e.id, oldKeys, newKey)) pending.endpoints++
    } catch {
      bad++
      for (const box of upstreamBoxes(e.upstream_config))
        if (envelopeKeyId(box) !== newId) badIds.add(envelopeKeyId(box) ?? 'unknown')
    }
  }
  if (bad > 0) throw new MasterKeyRotationError(bad, [...badIds].sort())
  if (opts.dryRun) return pending

  // 2. rewrite, each row guarded by the value read (a concurrent change is read again)
  const report: RotationReport = { agents: 0, funding_wallets: 0, endpoints: 0, platform_keys: 0 }
  report.platform_keys = await rewritePlatformKeys(db, oldKeys, newKey, newId)
  for (const [table, kind] of WALLET_TABLES) {
    for await (const r of walletRows(db, table, newId, pageSize)) {
      const next = reencryptSecret(oldKeys, newKey, r.encrypted_key, walletAad(kind, r.address))
      const u = await db
        .updateTable(table)
        .set({ encrypted_key: next })
        .where('address', '=', r.address)
        .where('encrypted_key', '=', r.encrypted_key)
        .executeTakeFirst()
      report[table] += Number(u.numUpdatedRows)
    }
  }
  for await (const first of endpointRows(db, pageSize)) {
    let e: { id: string; upstream_config: unknown } | undefined = first
    for (let tries = 0; e && tries < 5; tries++) {
      const next = rotateUpstreamSecrets(e.upstream_config, e.id, oldKeys, newKey)
      if (!next) break
      const u = await db
        .updateTable('endpoints')
        .set({ upstream_config: JSON.stringify(next) })
        .where('id', '=', e.id)
        .where(sql<boolean>`upstream_config = ${JSON.stringify(e.upstream_config)}::jsonb`)
        .executeTakeFirst()
      if (u.numUpdatedRows > 0n) {
        report.endpoints++
        break
      }
      e = await db.selectFrom('endpoints').select(['id', 'upstream_config']).where('id', '=', e.id).executeTakeFirst()
    }
  }
  return report
}

async function* walletRows(db: Kysely<Database>, table: 'agents' | 'funding_wallets', newId: string, pageSize: number) {
  let after = ''
  for (;;) {
    const rows = await db
      .selectFrom(table)
      .select(['address', 'encrypted_key'])
      .where('encrypted_key', 'not like', `v1.${newId}.%`)
      .where('address', '>', after)
      .orderBy('address')
      .limit(pageSize)
      .execute()
    yield* rows
    if (rows.length < pageSize) return
    after = rows[rows.length - 1]!.address
  }
}

async function platformKeyRows(db: Kysely<Database>, newId: string) {
  return db
    .selectFrom('platform_keys')
    .select(['purpose', 'address', 'encrypted_key'])
    .where('encrypted_key', 'not like', `v1.${newId}.%`)
    .execute()
}

/** Platform keys re-encrypted under `newKey` (a handful of rows), each guarded by the value read. */
async function rewritePlatformKeys(
  db: Kysely<Database>,
  oldKeys: readonly Buffer[],
  newKey: Buffer,
  newId: string,
): Promise<number> {
  let n = 0
  for (const r of await platformKeyRows(db, newId)) {
    const next = reencryptSecret(oldKeys, newKey, r.encrypted_key, platformKeyAad(r.purpose, r.address))
    const u = await db
      .updateTable('platform_keys')
      .set({ encrypted_key: next })
      .where('purpose', '=', r.purpose)
      .where('encrypted_key', '=', r.encrypted_key)
      .executeTakeFirst()
    n += Number(u.numUpdatedRows)
  }
  return n
}

async function* endpointRows(db: Kysely<Database>, pageSize: number) {
  let after = '00000000-0000-0000-0000-000000000000'
  for (;;) {
    const rows = await db
      .selectFrom('endpoints')
      .select(['id', 'upstream_config'])
      .where('upstream_config', 'is not', null)
      .where('id', '>', after)
      .orderBy('id')
      .limit(pageSize)
      .execute()
    yield* rows
    if (rows.length < pageSize) return
    after = rows[rows.length - 1]!.id
  }
}

function upstreamBoxes(stored: unknown): string[] {
  const c = stored as { forward_headers?: Array<{ value?: unknown }>; signing_secret?: unknown } | null
  const out = (c?.forward_headers ?? []).map((h) => h.value)
  out.push(c?.signing_secret)
  return out.filter((x): x is string => typeof x === 'string')
}
