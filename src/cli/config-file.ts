/**
 * `~/.config/tollgate/config.json`: named contexts, each an API address with its credentials, and
 * the current one. The file of earlier releases, flat `{"agent_key", "api_url"}`, is read as one
 * context named "default" and rewritten in the new shape the first time a command stores something.
 *
 *   {
 *     "current": "sandbox",
 *     "contexts": {
 *       "sandbox":    { "api_url": "http://localhost:4020", "deployment": "sandbox", "api_key": "sk_test_…",
 *                       "agent_key": "ak_test_…", "agent": "0x…" },
 *       "production": { "api_url": "https://api.tollgate.dev", "deployment": "production", … }
 *     }
 *   }
 *
 * The file holds secrets: it is written with mode 0600 (its directory 0700), through a temporary
 * file renamed over it, so a crash never leaves half a file.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { UsageError } from './errors.js'
import type { Io } from './io.js'

export type Deployment = 'sandbox' | 'production'

export interface Context {
  api_url?: string
  /** what the server at api_url said it is, when the context was made (tollgate login) */
  deployment?: Deployment
  /** user API key (sk_…), for agents, keys, caps, payments list, publish, withdraw */
  api_key?: string
  /** agent key (ak_…), for fetch, budget, payments status */
  agent_key?: string
  /** the agent the agent key belongs to (its address): the default --agent */
  agent?: string
  /** the id of the API key that tollgate login created, so logout can revoke it */
  api_key_id?: string
}

export interface ConfigFile {
  current?: string
  contexts: Record<string, Context>
}

const CONTEXT_FIELDS = ['api_url', 'deployment', 'api_key', 'agent_key', 'agent', 'api_key_id'] as const
export const CONTEXT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$/
/** The name a flat file's settings get. */
export const LEGACY_CONTEXT = 'default'

export function configPath(io: Io): string {
  return path.join(io.home ?? os.homedir(), '.config', 'tollgate', 'config.json')
}

/** The file as contexts (empty when there is none). A file that is not JSON, or not of this shape, is a usage error naming it. */
export function readConfigFile(io: Io): ConfigFile {
  const p = configPath(io)
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(p, 'utf8'))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { contexts: {} }
    throw new UsageError(`cannot read ${p}: ${(err as Error).message}`)
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new UsageError(`${p} is not a JSON object`)
  const o = raw as Record<string, unknown>
  if (o.contexts === undefined) {
    // the flat file of earlier releases
    const ctx = pickContext(o)
    return Object.keys(ctx).length ? { current: LEGACY_CONTEXT, contexts: { [LEGACY_CONTEXT]: ctx } } : { contexts: {} }
  }
  if (typeof o.contexts !== 'object' || o.contexts === null || Array.isArray(o.contexts))
    throw new UsageError(`"contexts" in ${p} is not an object`)
  const contexts: Record<string, Context> = {}
  for (const [name, c] of Object.entries(o.contexts as Record<string, unknown>)) {
    if (typeof c !== 'object' || c === null || Array.isArray(c))
      throw new UsageError(`context "${name}" in ${p} is not an object`)
    contexts[name] = pickContext(c as Record<string, unknown>)
  }
  return { current: typeof o.current === 'string' ? o.current : undefined, contexts }
}

function pickContext(o: Record<string, unknown>): Context {
  const c: Context = {}
  for (const k of CONTEXT_FIELDS) {
    const v = o[k]
    if (typeof v !== 'string' || v === '') continue
    if (k === 'deployment') {
      if (v === 'sandbox' || v === 'production') c.deployment = v
    } else c[k] = v
  }
  return c
}

/** Writes the whole file, mode 0600, atomically. */
export function writeConfigFile(io: Io, file: ConfigFile): string {
  const p = configPath(io)
  mkdirSync(path.dirname(p), { recursive: true, mode: 0o700 })
  const tmp = `${p}.${process.pid}.tmp`
  const ordered: ConfigFile = {
    ...(file.current !== undefined ? { current: file.current } : {}),
    contexts: file.contexts,
  }
  writeFileSync(tmp, JSON.stringify(ordered, null, 2) + '\n', { mode: 0o600 })
  chmodSync(tmp, 0o600) // the umask may have taken bits away, never added: this makes it exact
  renameSync(tmp, p)
  return p
}

/** Reads the file, applies `change` to it and writes it back. */
export function updateConfigFile(io: Io, change: (file: ConfigFile) => void): string {
  const file = readConfigFile(io)
  change(file)
  return writeConfigFile(io, file)
}
