/**
 * The rough edges of issue 37, each as a person meets it at the terminal against a real platform
 * (web API, proxy, devnet, workers): signing up and logging in from a script, funding agents,
 * one payment id, readable payment tables and exports, a revoked key and a taken agent name.
 */
import { readFileSync, mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t, { type Test } from 'tap'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { startWorkers } from '../../../workers/index.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { terminal } from './cli-io.js'

const quiet = { info: () => {}, warn: () => {}, error: () => {} }
const PASSWORD = 'correct horse battery'

const p = await startBuyerPlatform(t)
const workers = await startWorkers(p.deps, { everyMs: { 'topup-check': 500, 'settlement-tick': 200 }, log: quiet })
t.teardown(() => workers.close())
const users = createUsers({ db: p.deps.db })
const balanceOf = (a: string) =>
  p.deps.chain.readContract({
    address: p.deps.config.chain.usdc.address,
    abi: usdcAbi,
    functionName: 'balanceOf',
    args: [a as `0x${string}`],
  })

/** A user logged in (their API key stored) with an agent "cli" holding 0.5 USDC and its key. */
async function readyUser(t: Test) {
  const email = `f${Date.now()}${Math.random().toString(36).slice(2, 6)}@example.com`
  await users.create(email, PASSWORD)
  const u = terminal()
  const login = await u.run(['login', '--api-url', p.webUrl, '--email', email], {
    env: { TOLLGATE_PASSWORD: PASSWORD },
  })
  t.equal(login.code, 0, login.err)
  const setup = await u.run(['--json', 'setup', '--fund', '0.5'])
  t.equal(setup.code, 0, setup.err)
  return { u, email, agent: setup.json().agent.address as string }
}

t.test('login --password-stdin: the password piped in, never on the command line', async (t) => {
  const email = `stdin${Date.now()}@example.com`
  await users.create(email, PASSWORD)
  const u = terminal()
  const r = await u.run(['login', '--api-url', p.webUrl, '--email', email, '--password-stdin'], {
    stdin: `${PASSWORD}\n`,
  })
  t.equal(r.code, 0, r.err)
  t.match(r.out, `logged in to ${p.webUrl} (sandbox) as ${email}`)
  const wrong = await u.run(['login', '--api-url', p.webUrl, '--email', email, '--password-stdin'], {
    stdin: 'not it\n',
  })
  t.equal(wrong.code, 3, 'a wrong password piped in is refused by the API')
  const empty = await u.run(['login', '--api-url', p.webUrl, '--email', email, '--password-stdin'], { stdin: '' })
  t.equal(empty.code, 1)
  t.match(empty.err, /standard input was empty/)
  const both = await u.run(['login', '--email', email, '--password', 'x', '--password-stdin'], { stdin: PASSWORD })
  t.equal(both.code, 1)
  t.match(both.err, /either --password or --password-stdin/)
})

t.test('signup: a new sandbox account from the terminal, its API key stored, ready for setup', async (t) => {
  const email = `signup${Date.now()}@example.com`
  const u = terminal()
  const r = await u.run(['signup', '--api-url', p.webUrl, '--email', email, '--password-stdin'], {
    stdin: `${PASSWORD}\n`,
  })
  t.equal(r.code, 0, r.err)
  t.match(r.out, `signed up to ${p.webUrl} (sandbox) as ${email}`)
  t.match(r.out, /next: tollgate setup/)
  t.ok(await users.authenticate(email, PASSWORD), 'the account exists')
  const agents = await u.run(['agents', 'list', '--json'])
  t.equal(agents.code, 0, 'the stored API key works')
  const again = await u.run(['signup', '--api-url', p.webUrl, '--email', email, '--password-stdin'], {
    stdin: `${PASSWORD}\n`,
  })
  t.equal(again.code, 3, 'the same email again is refused by the API')
  t.match(again.err, /POST \/v1\/signup: HTTP 409/)
})

t.test('fund and funding: the funding wallet, its balance, top-up settings, and USDC to an agent', async (t) => {
  const { u, agent } = await readyUser(t)
  const before = await balanceOf(agent)
  const f = await u.run(['fund', 'cli', '0.3'])
  t.equal(f.code, 0, f.err)
  t.match(f.out, /withdrawal [0-9a-f-]{36}: 0\.3 USDC to 0x[0-9a-fA-F]{40}: confirmed/)
  t.equal((await balanceOf(agent)) - before, 300_000n, '0.3 USDC arrived at the agent')

  const w = await u.run(['funding'])
  t.equal(w.code, 0, w.err)
  t.match(w.out, /^funding wallet 0x[0-9a-fA-F]{40}\n {2}balance [\d.]+ USDC, [\d.]+ ETH\n/)
  t.match(w.out, /AGENT\s+ADDRESS\s+TOP-UP\s+BELOW USDC\s+AMOUNT USDC\n/)
  t.match(w.out, new RegExp(`cli\\s+${agent}\\s+o(n|ff)\\s`))
  const set = await u.run(['funding', 'top-up', 'cli', '--below', '0.1', '--amount', '0.25'])
  t.equal(set.code, 0, set.err)
  t.match(set.out, /topped up with 0\.25 USDC from the funding wallet whenever its balance falls below 0\.1 USDC/)
  const j = await u.run(['funding', '--json'])
  t.match(j.json(), {
    object: 'funding',
    wallet: { address: /^0x/, balance: { usdc: /^\d+$/ } },
    top_ups: [{ agent: 'cli', address: agent, enabled: true, threshold: '100000', amount: '250000' }],
  })
  const off = await u.run(['funding', 'top-up', 'cli', '--off'])
  t.match(off.out, /top-ups off/)
  const bad = await u.run(['fund', 'cli', '0.0000001'])
  t.equal(bad.code, 1)
  t.match(bad.err, /USDC has 6 decimals/)
})

t.test('one payment id; payments list as a table; status readable; export as CSV and NDJSON', async (t) => {
  const { u, agent } = await readyUser(t)
  const paid = await u.run(['--json', 'fetch', `${p.proxyUrl}/tollgate/toolbox/echo?msg=one`])
  t.equal(paid.code, 0, paid.err)
  const receipt = JSON.parse(paid.err.trim().split('\n').pop()!)
  const agentPaymentId = receipt.payment_id as string

  const list = await u.run(['payments', 'list'])
  t.equal(list.code, 0, list.err)
  const lines = list.out.trimEnd().split('\n')
  t.match(lines[0], /^TIME \(UTC\)\s+ID\s+STATUS\s+USDC\s+FROM\s+TO\s+FOR$/, 'a header')
  t.notMatch(list.out, /null/, 'no null anywhere')
  t.notMatch(list.out, /0x[0-9a-fA-F]{40}/, 'addresses shortened')
  t.match(list.out, /0x[0-9a-fA-F]{4}…[0-9a-fA-F]{4}/)
  t.match(list.out, /0\.001\s+0x\w{4}…\w{4}\s+0x\w{4}…\w{4}\s+GET \/tollgate\/toolbox\/echo\n/)
  t.ok(
    lines.every((l) => l.length <= 140),
    'lines a terminal can hold',
  )
  const ledgerId = (await u.run(['payments', 'list', '--json'])).json().data[0].id as string
  t.not(ledgerId, agentPaymentId, 'two records of one payment')

  for (const [what, args] of [
    ['the ledger id, agent key', ['payments', 'status', ledgerId]],
    ['the agent payment id, agent key', ['payments', 'status', agentPaymentId]],
    ['the ledger id, API key with --agent', ['payments', 'status', ledgerId, '--agent', 'cli']],
    ['the agent payment id, --agent by address', ['payments', 'status', agentPaymentId, '--agent', agent]],
  ] as const) {
    const st = await u.run([...args])
    t.equal(st.code, 0, `${what}: ${st.err}`)
    t.match(st.out, new RegExp(`^payment ${ledgerId}\\n  GET ${p.proxyUrl}/tollgate/toolbox/echo\\?msg=one\\n`), what)
    // the hosted endpoint offers batch-settlement: paid by default through a channel
    t.match(st.out, / {2}0\.001 USDC from 0x[0-9a-fA-F]{40} to 0x[0-9a-fA-F]{40} \(batch-settlement, /, `${what}: USDC`)
    t.notMatch(st.out, /^\{/, `${what}: text, not JSON`)
    const j = await u.run([...args, '--json'])
    t.match(j.json(), {
      object: 'agent_payment',
      id: agentPaymentId,
      amount: '1000',
      settlement: { payment_id: ledgerId },
    })
  }
  const missing = await u.run(['payments', 'status', '00000000-0000-4000-8000-000000000000'])
  t.equal(missing.code, 3)

  const csv = await u.run(['payments', 'export', '--format', 'csv'])
  t.equal(csv.code, 0, csv.err)
  const rows = csv.out.trimEnd().split('\n')
  t.match(rows[0], /^id,created_at,/, 'a CSV header')
  t.ok(
    rows.some((r) => r.startsWith(`${ledgerId},`)),
    'the payment, by its ledger id',
  )
  const nd = await u.run(['payments', 'export', '--format', 'ndjson', '--role', 'buyer'])
  t.equal(nd.code, 0, nd.err)
  const docs = nd.out
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l))
  t.match(docs, [{ id: ledgerId, value: '1000' }])
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'tg-export-')), 'h.csv')
  const toFile = await u.run(['payments', 'export', '--format', 'csv', '--output', file])
  t.equal(toFile.code, 0, toFile.err)
  t.equal(toFile.out, `1 row written to ${file} (csv)\n`)
  t.equal(readFileSync(file, 'utf8'), csv.out, 'the same export in the file')
  const noFormat = await u.run(['payments', 'export', '--format', 'xml'])
  t.equal(noFormat.code, 1)
  t.match(noFormat.err, /--format: expected csv or ndjson, got "xml"/)
})

t.test('a revoked agent key is refused as revoked_agent_key, with what to do', async (t) => {
  const { u } = await readyUser(t)
  const keys = await u.run(['keys', 'list', '--agent', 'cli', '--json'])
  const id = keys.json().data[0].id as string
  t.equal((await u.run(['keys', 'revoke', id, '--agent', 'cli'])).code, 0)
  const b = await u.run(['budget', '--json'])
  t.equal(b.code, 3)
  t.match(b.json().error, { code: 'revoked_agent_key', status: 401, to_fix: /tollgate keys create --agent/ })
})

t.test('agent names are unique per user: a second "cli" is 409 with the first one’s address', async (t) => {
  const { u, agent } = await readyUser(t)
  const again = await u.run(['agents', 'create', 'CLI', '--json'])
  t.equal(again.code, 3)
  t.match(again.json().error, { code: 'agent_name_taken', status: 409, details: { address: agent } })
  t.match(again.json().error.message, `you already have an agent named "CLI" (${agent})`)
  const other = await u.run(['agents', 'create', 'second'])
  t.equal(other.code, 0, other.err)
  const rename = await u.run(['--json', 'agents', 'list'])
  const second = rename.json().data.find((a: { name: string }) => a.name === 'second').address
  const res = await p.web.inject({
    method: 'PATCH',
    url: `/v1/agents/${second}`,
    headers: {
      authorization: `Bearer ${JSON.parse(readFileSync(path.join(u.home, '.config', 'tollgate', 'config.json'), 'utf8')).contexts.sandbox.api_key}`,
    },
    payload: { name: 'cli' },
  })
  t.equal(res.statusCode, 409, 'a rename onto a taken name too')
  t.equal(res.json().address, agent)
})

t.test('revenue with no endpoints says how to make one; its numbers are in publish.test.ts', async (t) => {
  const { u } = await readyUser(t)
  const empty = await u.run(['revenue'])
  t.equal(empty.code, 0, empty.err)
  t.match(empty.out, /no endpoints yet: tollgate publish/)
  const j = await u.run(['revenue', '--json'])
  t.match(j.json(), { object: 'revenue', endpoints: [], total: { calls: 0, revenue: '0', uncollected: '0' } })
  const bad = await u.run(['revenue', '--since', 'last week'])
  t.equal(bad.code, 1)
  t.match(bad.err, /--since: expected a date or time/)
})
