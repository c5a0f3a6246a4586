import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { userWithKey } from '../../helpers/accounts.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { until } from '../../helpers/until.js'
import { terminal } from '../cli/cli-io.js'

t.test('CLI: fetch waits for the approval, tollgate approvals decides; mcp install and uninstall', async (t) => {
  const p = await startBuyerPlatform(t)
  const owner = await userWithKey(p.deps)
  const agent = await p.agent({ user: owner.userId, fund: 1_000_000n })
  const set = await p.web.inject({
    method: 'PUT',
    url: `/v1/agents/${agent.address}/approval-policy`,
    headers: owner.auth,
    payload: { above: '999' },
  })
  t.equal(set.statusCode, 200, set.body)
  const term = terminal({
    TOLLGATE_API_URL: p.webUrl,
    TOLLGATE_API_KEY: owner.apiKey,
    TOLLGATE_AGENT_KEY: agent.key,
  })
  const url = `${p.proxyUrl}/tollgate/toolbox/echo?msg=cli`
  const pending = () =>
    p.deps.db
      .selectFrom('approvals')
      .select('id')
      .where('agent_id', '=', agent.id)
      .where('status', '=', 'pending')
      .executeTakeFirst()

  // approve: the waiting fetch pays once the owner decides
  const fetching = term.run(['fetch', '--approval-timeout', '60', url])
  const held = await until('the approval asked for', pending)
  const list = await term.run(['approvals', 'list'])
  t.equal(list.code, 0, list.err)
  t.match(list.out, new RegExp(`${held.id}  pending  .*0\\.001 USDC  GET ${url.replace(/[?.]/g, '\\$&')}`))
  // `tollgate fetch` pays the platform's endpoint batch-settlement by default: the first voucher's deposit is shown
  t.match(list.out, /\+ 0\.1 USDC deposit into the channel, refundable\)/)
  const ok = await term.run(['approvals', 'approve', held.id])
  t.equal(ok.code, 0, ok.err)
  t.match(ok.out, /approved: the agent retries/)
  const paid = await fetching
  t.equal(paid.code, 0, paid.err)
  t.match(paid.out, /cli/, 'the body of the paid call')
  t.match(paid.err, /payment held: waiting for the owner to approve/, 'a progress line while it waited')
  t.match(
    (await p.deps.db.selectFrom('approvals').select('status').where('id', '=', held.id).executeTakeFirstOrThrow())
      .status,
    'used',
  )

  // deny: a clear refusal, nothing paid
  const refused = term.run(['fetch', '--approval-timeout', '60', `${url}2`])
  const second = await until('the second approval', pending)
  t.equal((await term.run(['approvals', 'deny', second.id])).code, 0)
  const r = await refused
  t.equal(r.code, 2, 'exit 2: payment refused')
  t.match(r.err, /denied/)

  // no waiting: refused at once, saying it waits
  const now = await term.run(['fetch', '--approval-timeout', '0', `${url}3`])
  t.equal(now.code, 2)
  t.match(now.err, /waits for the owner's approval/)
  t.equal((await term.run(['approvals', 'list', '--status', 'nope'])).code, 1)

  t.test('mcp install / uninstall on a fixture config', async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-cli-'))
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
    const file = path.join(dir, 'mcp.json')
    fs.writeFileSync(file, JSON.stringify({ mcpServers: { other: { command: 'x' } } }))
    const inst = await term.run(['mcp', 'install', '--client', 'cursor', '--agent', agent.address, '--config', file])
    t.equal(inst.code, 0, inst.err)
    const cfg = JSON.parse(fs.readFileSync(file, 'utf8'))
    t.same(Object.keys(cfg.mcpServers), ['other', 'tollgate'])
    const key = cfg.mcpServers.tollgate.env.TOLLGATE_AGENT_KEY as string
    t.match(key, /^ak_test_/, 'a new agent key in the entry')
    t.equal(cfg.mcpServers.tollgate.env.TOLLGATE_API_URL, p.webUrl)
    t.same(cfg.mcpServers.tollgate.args.slice(-1), ['mcp'])
    const status = await p.web.inject({ method: 'GET', url: '/v1/agent', headers: { authorization: `Bearer ${key}` } })
    t.equal(status.statusCode, 200, 'the key works')
    t.equal((await term.run(['mcp', 'install', '--client', 'cursor', '--config', file])).code, 1, 'twice: refused')

    const un = await term.run(['mcp', 'uninstall', '--client', 'cursor', '--config', file])
    t.equal(un.code, 0, un.err)
    t.same(JSON.parse(fs.readFileSync(file, 'utf8')), { mcpServers: { other: { command: 'x' } } })
    await until('the key revoked', async () => {
      const r = await p.web.inject({ method: 'GET', url: '/v1/agent', headers: { authorization: `Bearer ${key}` } })
      return r.statusCode === 401
    })
    t.equal((await term.run(['mcp', 'uninstall', '--client', 'cursor', '--config', file])).code, 1, 'nothing left')
    fs.writeFileSync(file, '{ broken')
    const bad = await term.run(['mcp', 'install', '--client', 'claude', '--agent', agent.address, '--config', file])
    t.equal(bad.code, 1)
    t.match(bad.err + bad.out, /is not valid JSON/)
  })
})
