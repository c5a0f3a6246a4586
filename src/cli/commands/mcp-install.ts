/**
 * `tollgate mcp install|uninstall --client claude|cursor|vscode`: adds `tollgate mcp` to an agent
 * host's MCP configuration (mcp/host-config.ts) with a new agent key made for it, and takes out
 * exactly that again. What was added (file, server name, entry, key) is recorded in
 * ~/.config/tollgate/mcp-installs.json, so uninstall removes that entry only (unchanged since) and
 * revokes that key only.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { resolveAgent } from '../agent-ref.js'
import { parseOptions, type Command } from '../command.js'
import { UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import {
  addServer,
  HOST_CLIENTS,
  hostConfigPath,
  removeServer,
  type HostClient,
  type ServerEntry,
} from '../mcp/host-config.js'

const HELP = `usage: tollgate mcp install --client claude|cursor|vscode [--agent NAME] [--name N] [--config PATH] [--workspace]
       tollgate mcp uninstall --client claude|cursor|vscode [--config PATH] [--workspace]

install    adds "tollgate mcp" to the host's MCP configuration, merged into what is there (no other
           server is touched; a name already taken is refused), a backup of the file kept beside
           it, with a new agent key for the agent (default: the context's) in the entry's env
uninstall  removes exactly the entry install added (if unchanged since) and revokes its key

files (HOME decides where "~" is):
  claude   Claude Desktop: ~/Library/Application Support/Claude/claude_desktop_config.json (macOS),
           %APPDATA%\\Claude\\claude_desktop_config.json (Windows), ~/.config/Claude/… (Linux)
  cursor   ~/.cursor/mcp.json
  vscode   the user profile's mcp.json (~/Library/Application Support/Code/User/mcp.json, …);
           --workspace: .vscode/mcp.json in this directory (it holds an agent key: keep it out of git)
options:
  --config PATH   another configuration file of that host's format
  --name N        the server's name in the file (default "tollgate")
`

interface InstallRecord {
  client: HostClient
  name: string
  entry: ServerEntry
  created: boolean
  agent: string
  key_id: string
  installed_at: string
}

function recordsPath(home: string): string {
  return path.join(home, '.config', 'tollgate', 'mcp-installs.json')
}

function readRecords(home: string): Record<string, InstallRecord> {
  try {
    return JSON.parse(fs.readFileSync(recordsPath(home), 'utf8')) as Record<string, InstallRecord>
  } catch {
    return {}
  }
}

function writeRecords(home: string, r: Record<string, InstallRecord>): void {
  fs.mkdirSync(path.dirname(recordsPath(home)), { recursive: true })
  fs.writeFileSync(recordsPath(home), JSON.stringify(r, null, 2) + '\n', { mode: 0o600 })
}

/** How the host starts this CLI: this Node and this very script. */
function serverCommand(): { command: string; args: string[] } {
  const script = process.argv[1] ? fs.realpathSync(process.argv[1]) : 'tollgate'
  return { command: process.execPath, args: [script, 'mcp'] }
}

export async function mcpInstallCommand(sub: 'install' | 'uninstall', args: string[], cmd: Command): Promise<number> {
  const { values: v } = parseOptions(
    args,
    {
      client: { type: 'string' },
      agent: { type: 'string' },
      name: { type: 'string' },
      config: { type: 'string' },
      workspace: { type: 'boolean' },
    },
    HELP,
  )
  if (v.help) {
    cmd.io.stdout(HELP)
    return EXIT.ok
  }
  const client = v.client as HostClient
  if (!HOST_CLIENTS.includes(client)) throw new UsageError(`--client is one of ${HOST_CLIENTS.join(', ')}\n\n${HELP}`)
  const home = cmd.io.home ?? cmd.io.env.HOME ?? os.homedir()
  const file = path.resolve(
    v.config ??
      hostConfigPath(client, {
        home,
        platform: process.platform,
        appData: cmd.io.env.APPDATA,
        cwd: process.cwd(),
        workspace: v.workspace === true,
      }),
  )
  const records = readRecords(home)
  if (sub === 'uninstall') return uninstall(cmd, { client, file, home, records })
  const name = v.name ?? 'tollgate'
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name))
    throw new UsageError(`--name: letters, digits, . _ - (got "${name}")`)
  if (records[file])
    throw new UsageError(`tollgate is already installed in ${file}: tollgate mcp uninstall --client ${client} first`)
  const api = cmd.api()
  const settings = cmd.settings()
  const agent = await resolveAgent(api, settings, v.agent)
  const key = await api.user<{ id: string; secret: string }>('POST', `/v1/agents/${agent.address}/keys`, {
    body: { name: `mcp ${client}` },
  })
  const entry: ServerEntry = {
    ...serverCommand(),
    env: { TOLLGATE_API_URL: settings.apiUrl, TOLLGATE_AGENT_KEY: key.secret },
  }
  let added
  try {
    added = addServer(client, file, name, entry)
  } catch (err) {
    // nothing written: the key made for it goes again
    await api.user('DELETE', `/v1/agents/${agent.address}/keys/${key.id}`).catch(() => {})
    throw err
  }
  records[file] = {
    client,
    name,
    entry,
    created: added.created,
    agent: agent.address,
    key_id: key.id,
    installed_at: new Date().toISOString(),
  }
  writeRecords(home, records)
  cmd.out.result(
    { object: 'mcp_install', client, file, name, agent: agent.address, key_id: key.id, backup: added.backup ?? null },
    [
      `added MCP server "${name}" to ${file} (agent ${agent.name}, a new agent key ${key.id})`,
      ...(added.backup ? [`backup: ${added.backup}`] : []),
      `restart the host to load it; tollgate mcp uninstall --client ${client} takes it out`,
    ],
  )
  return EXIT.ok
}

async function uninstall(
  cmd: Command,
  o: { client: HostClient; file: string; home: string; records: Record<string, InstallRecord> },
): Promise<number> {
  const r = o.records[o.file]
  if (!r || r.client !== o.client)
    throw new UsageError(`tollgate did not install an MCP server in ${o.file} (nothing recorded): nothing to remove`)
  const done = removeServer(o.client, o.file, r.name, r.entry, { created: r.created })
  let revoked = true
  await cmd
    .api()
    .user('DELETE', `/v1/agents/${r.agent}/keys/${r.key_id}`)
    .catch(() => (revoked = false))
  delete o.records[o.file]
  writeRecords(o.home, o.records)
  cmd.out.result(
    {
      object: 'mcp_uninstall',
      client: o.client,
      file: o.file,
      name: r.name,
      removed: done.removed,
      key_revoked: revoked,
    },
    [
      done.removed === 'absent'
        ? `the "${r.name}" server was no longer in ${o.file}`
        : `removed MCP server "${r.name}" from ${o.file}${done.removed === 'file' ? ' (and the file tollgate had created)' : ''}`,
      revoked
        ? `revoked its agent key ${r.key_id}`
        : `could not revoke its agent key ${r.key_id}: tollgate keys revoke ${r.key_id} --agent ${r.agent}`,
    ],
  )
  return EXIT.ok
}
