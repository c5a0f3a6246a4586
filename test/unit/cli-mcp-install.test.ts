import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { addServer, hostConfigPath, removeServer, type HostClient } from '../../src/cli/mcp/host-config.js'

const entry = {
  command: '/usr/bin/node',
  args: ['/opt/tollgate/bin/tollgate.js', 'mcp'],
  env: { TOLLGATE_API_URL: 'http://localhost:4020', TOLLGATE_AGENT_KEY: 'ak_test_x' },
}

function fixtureDir(t: { teardown(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-install-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

t.test("each host's documented path, under HOME", async (t) => {
  const o = { home: '/h', cwd: '/w', platform: 'linux' as const }
  t.equal(hostConfigPath('cursor', o), '/h/.cursor/mcp.json')
  t.equal(hostConfigPath('claude', o), '/h/.config/Claude/claude_desktop_config.json')
  t.equal(
    hostConfigPath('claude', { ...o, platform: 'darwin' }),
    '/h/Library/Application Support/Claude/claude_desktop_config.json',
  )
  t.equal(hostConfigPath('vscode', o), '/h/.config/Code/User/mcp.json')
  t.equal(hostConfigPath('vscode', { ...o, workspace: true }), '/w/.vscode/mcp.json')
})

for (const [client, key, shape] of [
  ['claude', 'mcpServers', { ...entry }],
  ['cursor', 'mcpServers', { ...entry }],
  ['vscode', 'servers', { type: 'stdio', ...entry }],
] as const) {
  t.test(`${client}: merged, backed up, never overwriting, removed exactly`, async (t) => {
    const dir = fixtureDir(t)
    const file = path.join(dir, 'config.json')
    const other = { command: 'npx', args: ['-y', 'other-server'] }
    const original = { theme: 'dark', [key]: { other }, ...(client === 'vscode' ? { inputs: [] } : {}) }
    const originalText = JSON.stringify(original, null, 4)
    fs.writeFileSync(file, originalText)

    const added = addServer(client as HostClient, file, 'tollgate', entry)
    t.equal(added.created, false)
    t.equal(fs.readFileSync(added.backup!, 'utf8'), originalText, 'the backup is the file as it was')
    const after = JSON.parse(fs.readFileSync(file, 'utf8'))
    t.same(after[key], { other, tollgate: shape }, `the entry in ${key}, the other server kept`)
    t.equal(after.theme, 'dark', 'other settings kept')
    t.equal(fs.statSync(file).mode & 0o777, 0o600, 'readable by the user only (it holds a key)')

    t.throws(
      () => addServer(client as HostClient, file, 'other', entry),
      /already has an MCP server named "other"/,
      'another server is never overwritten',
    )
    t.same(JSON.parse(fs.readFileSync(file, 'utf8'))[key].other, other)

    const removed = removeServer(client as HostClient, file, 'tollgate', entry, { created: false })
    t.equal(removed.removed, 'entry')
    t.same(JSON.parse(fs.readFileSync(file, 'utf8')), original, 'the file is as before, but for formatting')
    t.same(removeServer(client as HostClient, file, 'tollgate', entry, { created: false }), { removed: 'absent' })
  })
}

t.test('a file tollgate created goes again; a changed entry stays', async (t) => {
  const dir = fixtureDir(t)
  const file = path.join(dir, 'sub', 'mcp.json')
  const added = addServer('cursor', file, 'tollgate', entry)
  t.same(added, { created: true, backup: undefined })
  t.same(removeServer('cursor', file, 'tollgate', entry, { created: true }), { removed: 'file' })
  t.notOk(fs.existsSync(file))

  addServer('cursor', file, 'tollgate', entry)
  const cfg = JSON.parse(fs.readFileSync(file, 'utf8'))
  cfg.mcpServers.tollgate.args.push('--upto')
  fs.writeFileSync(file, JSON.stringify(cfg))
  t.throws(
    () => removeServer('cursor', file, 'tollgate', entry, { created: true }),
    /was changed since tollgate added it/,
  )
  t.match(fs.readFileSync(file, 'utf8'), /--upto/, 'left as the user made it')
})

t.test('malformed files: a clear error, nothing changed', async (t) => {
  const dir = fixtureDir(t)
  const file = path.join(dir, 'claude_desktop_config.json')
  fs.writeFileSync(file, '{ "mcpServers": { ')
  t.throws(() => addServer('claude', file, 'tollgate', entry), /is not valid JSON .*nothing was changed/)
  t.equal(fs.readFileSync(file, 'utf8'), '{ "mcpServers": { ')
  fs.writeFileSync(file, '{ "mcpServers": [] }')
  t.throws(() => addServer('claude', file, 'tollgate', entry), /"mcpServers" in .* is not an object/)
  fs.writeFileSync(file, '[1]')
  t.throws(() => addServer('claude', file, 'tollgate', entry), /not a JSON object/)
  t.same(
    fs.readdirSync(dir).filter((f) => f.includes('backup')),
    [],
    'no backup: nothing was written',
  )
})
