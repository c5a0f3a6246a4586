/**
 * `tollgate keys rotate-master`: re-encrypts every stored secret (custodial wallet keys, forwarded
 * upstream header values, signing secrets) from the old master key to the new one. The keys come
 * from the environment only (never the command line, which lands in shell history and `ps`):
 * TOLLGATE_MASTER_KEY_OLD (one key, or several comma-separated) and TOLLGATE_MASTER_KEY_NEW, each
 * 32 bytes as 64 hex characters or base64. The database comes from the usual DATABASE_URL /
 * DATABASE_SCHEMA. Safe to rerun; refuses without writing anything if the old key is wrong.
 */
import { parseArgs } from 'node:util'
import { loadConfig, type Config } from '../../config.js'
import { createDb } from '../../db/create-db.js'
import { MasterKeyRotationError, rotateMasterKey } from '../../services/wallets/rotate-master-key.js'
import { masterKeyId } from '../../secrets/wallet-crypto.js'
import type { CliIo } from './users.js'

export const KEYS_USAGE = `usage: tollgate keys rotate-master [--dry-run]

Re-encrypts every stored secret (agent and funding wallet keys, forwarded upstream header values,
endpoint signing secrets) under a new master key. Reads from the environment:
  TOLLGATE_MASTER_KEY_OLD   the current key (or several, comma-separated)
  TOLLGATE_MASTER_KEY_NEW   the new key (32 bytes: 64 hex characters or base64)
  DATABASE_URL, DATABASE_SCHEMA   as for every role
Rows already under the new key are skipped, so a rerun is safe. If any secret does not decrypt
with the given keys, nothing is changed and the exit code is 1.

options:
  --dry-run   check that every secret decrypts and count what would be rewritten; write nothing
  -h, --help  this help

Procedure: stop the web, proxy and worker roles; run this; start them with
TOLLGATE_MASTER_KEY set to the new key. See docs/api.md, "Secrets at rest".
`

/** Parses a master key as the config does (64 hex characters, optional 0x, or base64 of 32 bytes). */
export function parseMasterKey(value: string): Buffer | undefined {
  const v = value.trim()
  const buf = /^(0x)?[0-9a-fA-F]{64}$/.test(v) ? Buffer.from(v.replace(/^0x/, ''), 'hex') : Buffer.from(v, 'base64')
  return buf.length === 32 ? buf : undefined
}

/** Runs `keys <subcommand>`; returns the exit code (0 done, 1 refused or failed, 2 usage). */
export async function keysCli(argv: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = argv
  if (sub === '--help' || sub === '-h' || rest.includes('--help') || rest.includes('-h')) {
    io.out(KEYS_USAGE)
    return 0
  }
  if (sub !== 'rotate-master') {
    io.err(KEYS_USAGE)
    return 2
  }
  let dryRun: boolean | undefined
  try {
    ;({
      values: { 'dry-run': dryRun },
    } = parseArgs({ args: rest, options: { 'dry-run': { type: 'boolean' } }, strict: true, allowPositionals: false }))
  } catch (err) {
    io.err(`${(err as Error).message}\n${KEYS_USAGE}`)
    return 2
  }
  const problems: string[] = []
  const oldRaw = io.env.TOLLGATE_MASTER_KEY_OLD
  const newRaw = io.env.TOLLGATE_MASTER_KEY_NEW
  const oldKeys = (oldRaw ?? '')
    .split(',')
    .filter((s) => s.trim() !== '')
    .map((s) => parseMasterKey(s))
  const newKey = newRaw === undefined ? undefined : parseMasterKey(newRaw)
  if (oldKeys.length === 0) problems.push('TOLLGATE_MASTER_KEY_OLD is not set')
  else if (oldKeys.some((k) => k === undefined))
    problems.push('TOLLGATE_MASTER_KEY_OLD: expected 32-byte keys as 64 hex characters or base64, comma-separated')
  if (newRaw === undefined) problems.push('TOLLGATE_MASTER_KEY_NEW is not set')
  else if (!newKey) problems.push('TOLLGATE_MASTER_KEY_NEW: expected 32 bytes as 64 hex characters or base64')
  if (problems.length) {
    io.err(`${problems.join('\n')}\n\n${KEYS_USAGE}`)
    return 2
  }
  let config: Readonly<Config>
  try {
    config = io.config ?? loadConfig(io.env)
  } catch (err) {
    io.err((err as Error).message)
    return 1
  }
  const db = createDb({ databaseUrl: config.databaseUrl, schema: config.databaseSchema, max: 1 })
  try {
    const r = await rotateMasterKey(db, oldKeys as Buffer[], newKey!, { dryRun })
    const what = `${r.agents} agent wallet key(s), ${r.funding_wallets} funding wallet key(s), ${r.endpoints} endpoint(s) with upstream secrets, ${r.platform_keys} platform key(s)`
    const id = masterKeyId(newKey!)
    io.out(
      dryRun
        ? `dry run: every secret decrypts; would re-encrypt ${what} under master key id ${id}`
        : `re-encrypted ${what} under master key id ${id}`,
    )
    return 0
  } catch (err) {
    io.err(err instanceof MasterKeyRotationError ? err.message : `rotation failed: ${(err as Error).message}`)
    return 1
  } finally {
    await db.destroy()
  }
}
