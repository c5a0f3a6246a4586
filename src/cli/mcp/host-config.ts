/**
 * The MCP configuration files of agent hosts, as each documents them: Claude Desktop's
 * claude_desktop_config.json and Cursor's ~/.cursor/mcp.json keep servers under `mcpServers`
 * ({command, args, env}); VS Code's mcp.json (user profile, or a workspace's .vscode/mcp.json)
 * under `servers` ({type: "stdio", command, args, env}). Edits merge into what is there, never
 * replace another server, keep a backup of the file they change, and write atomically (0600: the
 * entry carries an agent key).
 */
import fs from 'node:fs'
import path from 'node:path'
import { UsageError } from '../errors.js'

export type HostClient = 'claude' | 'cursor' | 'vscode'
export const HOST_CLIENTS: readonly HostClient[] = ['claude', 'cursor', 'vscode']

export interface ServerEntry {
  command: string
  args: string[]
  env: Record<string, string>
}

/** The host's documented configuration path for this platform (`home`: the user's home directory). */
export function hostConfigPath(
  client: HostClient,
  o: { home: string; platform: NodeJS.Platform; appData?: string; cwd: string; workspace?: boolean },
): string {
  const appData = o.appData ?? path.join(o.home, 'AppData', 'Roaming')
  if (client === 'cursor') return path.join(o.home, '.cursor', 'mcp.json')
  if (client === 'claude') {
    if (o.platform === 'darwin')
      return path.join(o.home, 'Library', 'Application Support', 'Claude', 'claude_desktop_config.json')
    if (o.platform === 'win32') return path.join(appData, 'Claude', 'claude_desktop_config.json')
    return path.join(o.home, '.config', 'Claude', 'claude_desktop_config.json')
  }
  if (o.workspace) return path.join(o.cwd, '.vscode', 'mcp.json')
  if (o.platform === 'darwin') return path.join(o.home, 'Library', 'Application Support', 'Code', 'User', 'mcp.json')
  if (o.platform === 'win32') return path.join(appData, 'Code', 'User', 'mcp.json')
  return path.join(o.home, '.config', 'Code', 'User', 'mcp.json')
}

const keyOf = (client: HostClient) => (client === 'vscode' ? 'servers' : 'mcpServers')

/** The entry as this host's format writes it. */
function hostEntry(client: HostClient, e: ServerEntry): Record<string, unknown> {
  return client === 'vscode' ? { type: 'stdio', ...e } : { ...e }
}

/** The file's JSON object; `undefined` when there is no file. Malformed: a UsageError that says nothing changed. */
function readHostConfig(file: string): Record<string, unknown> | undefined {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`)
  }
  if (text.trim() === '') return {}
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch (err) {
    throw new UsageError(
      `${file} is not valid JSON (${(err as Error).message}; comments and trailing commas are not read here): fix it or move it away and run again; nothing was changed`,
    )
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new UsageError(`${file} is not a JSON object: fix it or move it away and run again; nothing was changed`)
  return v as Record<string, unknown>
}

function serversOf(client: HostClient, file: string, cfg: Record<string, unknown>): Record<string, unknown> {
  const k = keyOf(client)
  const s = cfg[k]
  if (s === undefined) return {}
  if (typeof s !== 'object' || s === null || Array.isArray(s))
    throw new UsageError(`"${k}" in ${file} is not an object: fix it and run again; nothing was changed`)
  return s as Record<string, unknown>
}

/** Writes `cfg` to `file` atomically (0600), after copying the file it replaces to a backup; answers the backup's path. */
function writeHostConfig(file: string, cfg: Record<string, unknown>, existed: boolean, now: Date): string | undefined {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  let backup: string | undefined
  if (existed) {
    backup = `${file}.tollgate-backup-${now.toISOString().replace(/[:.]/g, '-')}`
    fs.copyFileSync(file, backup)
  }
  const tmp = `${file}.tollgate-${process.pid}.tmp`
  fs.writeFileSync(tmp, JSON.stringify(cfg, null, 2) + '\n', { mode: 0o600 })
  fs.renameSync(tmp, file)
  return backup
}

/**
 * Adds server `name` to the host's file, keeping everything else; refuses a name already taken
 * (another server is never overwritten). Answers whether the file was created, and the backup.
 */
export function addServer(
  client: HostClient,
  file: string,
  name: string,
  entry: ServerEntry,
  now = new Date(),
): { created: boolean; backup: string | undefined } {
  const cfg = readHostConfig(file)
  const servers = serversOf(client, file, cfg ?? {})
  if (name in servers)
    throw new UsageError(
      `${file} already has an MCP server named "${name}": give another --name, or remove it first (tollgate mcp uninstall --client ${client} if tollgate added it)`,
    )
  const next = { ...(cfg ?? {}), [keyOf(client)]: { ...servers, [name]: hostEntry(client, entry) } }
  return { created: cfg === undefined, backup: writeHostConfig(file, next, cfg !== undefined, now) }
}

/**
 * Removes server `name` when it is still the entry tollgate wrote (`entry`), and the file itself
 * when tollgate created it and nothing else is left. Answers what happened.
 */
export function removeServer(
  client: HostClient,
  file: string,
  name: string,
  entry: ServerEntry,
  o: { created: boolean },
  now = new Date(),
): { removed: 'entry' | 'file' | 'absent'; backup?: string } {
  const cfg = readHostConfig(file)
  if (!cfg) return { removed: 'absent' }
  const servers = serversOf(client, file, cfg)
  if (!(name in servers)) return { removed: 'absent' }
  if (JSON.stringify(servers[name]) !== JSON.stringify(hostEntry(client, entry)))
    throw new UsageError(
      `the "${name}" server in ${file} was changed since tollgate added it: remove it yourself if you want it gone; nothing was changed`,
    )
  const { [name]: _gone, ...rest } = servers
  const next: Record<string, unknown> = { ...cfg, [keyOf(client)]: rest }
  if (Object.keys(rest).length === 0 && o.created && Object.keys(cfg).length === 1) {
    fs.rmSync(file)
    return { removed: 'file' }
  }
  return { removed: 'entry', backup: writeHostConfig(file, next, true, now) }
}
