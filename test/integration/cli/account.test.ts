/**
 * The account side of the CLI against a real platform (web app, proxy, devnet, worker): a new
 * user's path from login to a paid call, the account commands, contexts with a production API
 * beside the sandbox one, --json output, and withdrawals (once the server has the route).
 */
import { statSync, readFileSync, writeFileSync, mkdirSync, mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { runCli, type Io } from '../../../src/cli/main.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { createApiKeys } from '../../../src/services/accounts/api-keys.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { startWorkers } from '../../../workers/index.js'
import { freePort } from '../../helpers/platform.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'

const quiet = { info: () => {}, warn: () => {}, error: () => {} }

/** One user's terminal: a home of its own, commands run in turn. */
function terminal(
  env: Record<string, string | undefined> = {},
  home = mkdtempSync(path.join(os.tmpdir(), 'tg-cli-acct-')),
) {
  const sent: Array<{ url: string; authorization: string | null }> = []
  const run = async (args: string[], extra: Record<string, string | undefined> = {}) => {
    const out: Buffer[] = []
    const err: string[] = []
    const io: Io = {
      stdout: (c) => out.push(Buffer.from(c)),
      stderr: (l) => err.push(l),
      env: { ...env, ...extra },
      home,
      hostname: 'testbox',
      progressAfterMs: 0,
      // every request the CLI makes, to check which keys went where
      fetch: (input, init) => {
        const r = new Request(input, init)
        sent.push({ url: r.url, authorization: r.headers.get('authorization') })
        return fetch(r)
      },
    }
    const code = await runCli(args, io)
    return { code, out: Buffer.concat(out).toString(), err: err.join('') }
  }
  const config = () => JSON.parse(readFileSync(path.join(home, '.config', 'tollgate', 'config.json'), 'utf8'))
  return { run, home, sent, config }
}

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

t.test('a new user: login, setup, then a paid fetch, with no curl', async (t) => {
  const email = `new${Date.now()}@example.com`
  await users.create(email, 'correct horse battery')
  const u = terminal()

  const login = await u.run(['login', '--api-url', p.webUrl, '--email', email], {
    TOLLGATE_PASSWORD: 'correct horse battery',
  })
  t.equal(login.code, 0, login.err)
  t.match(login.out, `logged in to ${p.webUrl} (sandbox) as ${email}`)
  t.match(login.out, /API key cli@testbox \(sk_test_\w{4}…\) created and stored in context "sandbox"/)
  const file = u.config()
  t.equal(file.current, 'sandbox', 'the first context is the current one')
  t.match(file.contexts.sandbox, { api_url: p.webUrl, deployment: 'sandbox', api_key: /^sk_test_\w{43}$/ })
  t.notMatch(JSON.stringify(file), /correct horse/, 'the password is not stored')
  t.equal(statSync(path.join(u.home, '.config', 'tollgate', 'config.json')).mode & 0o777, 0o600, 'the file is 0600')
  t.equal(statSync(path.join(u.home, '.config', 'tollgate')).mode & 0o777, 0o700, 'its directory 0700')
  const sessions = await p.deps.db
    .selectFrom('user_sessions')
    .select(['revoked_at'])
    .where('user_id', '=', (await users.authenticate(email, 'correct horse battery')).id)
    .execute()
  t.ok(sessions.length === 1 && sessions[0]!.revoked_at !== null, 'the one session, used to make the key, was ended')

  const setup = await u.run(['setup', '--fund', '0.5'])
  t.equal(setup.code, 0, setup.err)
  t.match(setup.err, /faucet: 100 test USDC to your funding wallet 0x[0-9a-fA-F]{40}/)
  t.match(setup.err, /waiting for the top-up \(the worker checks every 30 s\)[^\n]*…\n/, 'progress while waiting')
  t.match(setup.err, /topped up: 0\.5 USDC/)
  t.match(setup.out, /agent\s+"cli" (0x[0-9a-fA-F]{40}) \(created\)/)
  const agent = /agent\s+"cli" (0x[0-9a-fA-F]{40})/.exec(setup.out)![1]!
  t.equal(await balanceOf(agent), 500_000n, 'funded on chain')
  t.match(u.config().contexts.sandbox, { agent_key: /^ak_test_\w{43}$/, agent })

  // setup again: the same agent and key, nothing to fund
  const again = await u.run(['--json', 'setup', '--fund', '0.5'])
  t.equal(again.code, 0, again.err)
  t.match(JSON.parse(again.out), {
    object: 'setup',
    agent: { address: agent, created: false },
    agent_key: { reused: true },
    funding: { status: 'funded' },
  })
  t.equal(again.err, '', '--json: nothing on stderr')

  // exact (--no-batch: not the hosted endpoint's batch-settlement channel), whose transfer settles on its own
  const paid = await u.run(['fetch', `${p.proxyUrl}/tollgate/toolbox/echo?msg=first`, '--no-batch'])
  t.equal(paid.code, 0, paid.err)
  t.same(JSON.parse(paid.out), { echo: { msg: 'first' } })
  t.match(paid.err, /^paid 0\.001 USDC to 0x[0-9a-fA-F]{40} from 0x/i)
  const id = /payment ([0-9a-f-]{36})\n/.exec(paid.err)?.[1]
  t.ok(id, 'one payment id in the receipt')
  t.notMatch(paid.err, /seller payment/)
  // friction 3: the id the receipt prints is the one payments status answers for
  const st = await u.run(['payments', 'status', id ?? '-', '--json'])
  t.equal(st.code, 0, st.err)
  t.match(JSON.parse(st.out), { id, amount: '1000' })
  // waiting for the settlement, with progress (the worker settles every 200 ms here)
  const settled = await u.run(['payments', 'status', id ?? '-', '--wait', '--json'])
  t.equal(settled.code, 0, settled.err)
  t.match(JSON.parse(settled.out), { id, settlement: { status: 'settled' }, transaction: /^0x[0-9a-f]{64}$/ })

  // --json before fetch: the body on stdout as always, the receipt as one JSON line on stderr
  const j = await u.run([
    '--json',
    'fetch',
    '-X',
    'POST',
    `${p.proxyUrl}/tollgate/toolbox/echo`,
    '--json',
    '{"msg":"j"}',
    '--no-batch',
  ])
  t.equal(j.code, 0, j.err)
  t.same(JSON.parse(j.out), { echo: { msg: 'j' } })
  const receipt = JSON.parse(j.err)
  t.match(receipt, {
    object: 'receipt',
    status: 200,
    paid: true,
    amount: '1000',
    amount_usdc: '0.001',
    payment_id: /^[0-9a-f-]{36}$/,
    payment_identifier: /^pay_[0-9a-f]{32}$/,
    network: 'eip155:84532',
  })
  // friction 8: an async settlement has no transaction yet: null and "pending", never ''
  t.ok(
    receipt.transaction === null ? receipt.settlement === 'pending' : /^0x[0-9a-f]{64}$/.test(receipt.transaction),
    JSON.stringify(receipt),
  )
  t.notOk(j.err.split('\n').filter(Boolean).length > 1, 'one line')

  const logout = await u.run(['logout'])
  t.equal(logout.code, 0, logout.err)
  t.match(logout.out, /revoked the API key and removed it from context "sandbox"/)
  t.notOk('api_key' in u.config().contexts.sandbox)
  t.ok(u.config().contexts.sandbox.agent_key, 'the agent key stays: fetch still pays')
  const after = await u.run(['agents', 'list'])
  t.equal(after.code, 1)
  t.match(after.err, /no API key: run tollgate login/)
})

t.test('login: a wrong password, a missing one, and --api-key', async (t) => {
  const email = `pw${Date.now()}@example.com`
  const user = await users.create(email, 'correct horse battery')
  const u = terminal()
  const wrong = await u.run(['login', '--api-url', p.webUrl, '--email', email, '--password', 'nope'])
  t.equal(wrong.code, 3)
  t.match(wrong.err, /HTTP 401 invalid_credentials/)
  const none = await u.run(['login', '--api-url', p.webUrl, '--email', email])
  t.equal(none.code, 1, 'no terminal to ask on and no TOLLGATE_PASSWORD')
  t.match(none.err, /give --email and a password/)
  const key = await createApiKeys({ db: p.deps.db, deployment: 'sandbox' }).create(user.id, 'mine')
  const ok = await u.run(['--json', 'login', '--api-url', p.webUrl, '--api-key', key.secret])
  t.equal(ok.code, 0, ok.out)
  t.match(JSON.parse(ok.out), { object: 'login', context: 'sandbox', deployment: 'sandbox', user: { email } })
  t.notOk(ok.out.includes(key.secret), 'the key is not echoed')
  const agentKey = await u.run(['login', '--api-url', p.webUrl, '--api-key', 'ak_test_' + 'x'.repeat(43)])
  t.equal(agentKey.code, 1)
  t.match(agentKey.err, /that is an agent key: tollgate setup stores agent keys/)
  t.notMatch(agentKey.err, /x{43}/)
})

t.test('account commands: agents, caps in USDC, agent keys, allowlist, payments list; --json everywhere', async (t) => {
  const email = `acct${Date.now()}@example.com`
  await users.create(email, 'correct horse battery')
  const u = terminal({ TOLLGATE_PASSWORD: 'correct horse battery' })
  t.equal((await u.run(['login', '--api-url', p.webUrl, '--email', email])).code, 0)

  const created = await u.run([
    '--json',
    'agents',
    'create',
    'research bot',
    '--daily',
    '2',
    '--per-transaction',
    '0.01',
  ])
  t.equal(created.code, 0, created.out)
  const a = JSON.parse(created.out)
  t.match(a, {
    object: 'agent',
    name: 'research bot',
    spend_caps: { daily: '2000000', per_transaction: '10000', monthly: null },
  })
  const list = await u.run(['agents', 'list', '--json'])
  t.match(JSON.parse(list.out), { object: 'list', data: [{ address: a.address }] })
  const show = await u.run(['agents', 'show', 'research bot'])
  t.equal(show.code, 0, show.err)
  t.match(show.out, new RegExp(`address\\s+${a.address}`))
  t.match(show.out, /balance\s+0 USDC, 0 ETH/)
  t.match(show.out, /daily \(UTC\)\s+2 USDC/)

  // friction 5: caps typed in USDC reach the API in atomic units
  const caps = await u.run([
    'caps',
    'set',
    '--agent',
    'research bot',
    '--daily',
    '0.002',
    '--monthly',
    'none',
    '--json',
  ])
  t.equal(caps.code, 0, caps.out)
  t.match(JSON.parse(caps.out), { object: 'spend_caps', daily: '2000', monthly: null, per_transaction: '10000' })
  const row = await p.deps.db
    .selectFrom('agents')
    .select(['cap_daily', 'cap_monthly'])
    .where('address', '=', a.address)
    .executeTakeFirstOrThrow()
  t.same(row, { cap_daily: '2000', cap_monthly: null }, 'stored as 2000 atomic units')
  for (const [bad, why] of [
    ['0.0000001', /USDC has 6 decimals, "0\.0000001" has 7/],
    ['two', /expected an amount of USDC such as 0\.5/],
    ['-1', /expected an amount of USDC/],
  ] as const) {
    const r = await u.run(['caps', 'set', '--agent', a.address, `--daily=${bad}`])
    t.equal(r.code, 1, bad)
    t.match(r.err, why, bad)
  }
  const nothing = await u.run(['caps', 'set', '--agent', a.address])
  t.equal(nothing.code, 1)
  const shown = await u.run(['caps', 'show', '--agent', a.address])
  t.match(shown.out, /daily \(UTC\)\s+0\.002 USDC/)

  // agent keys: create and save, list, revoke
  const k = await u.run(['keys', 'create', '--agent', 'research bot', '--save'])
  t.equal(k.code, 0, k.err)
  t.match(k.out, /^ak_test_\w{43}\n$/, 'the secret alone on stdout')
  t.match(k.err, /shown only once; stored in context "sandbox"/)
  t.match(u.config().contexts.sandbox, { agent_key: k.out.trim(), agent: a.address })
  const budget = await u.run(['budget', '--json'])
  t.match(JSON.parse(budget.out), { object: 'agent_status', address: a.address })
  const keys = await u.run(['keys', 'list', '--json'])
  const [key] = JSON.parse(keys.out).data
  t.match(key, { name: 'cli@testbox', revoked_at: null })
  t.notOk(keys.out.includes(k.out.trim()), 'list never shows a secret')
  const revoked = await u.run(['keys', 'revoke', key.id])
  t.equal(revoked.code, 0, revoked.err)
  const refused = await u.run(['budget'])
  t.equal(refused.code, 3, 'the revoked key is refused')
  t.match(
    refused.err,
    /HTTP 401 revoked_agent_key[^]*to fix: the agent key in "agent_key" of context "sandbox" .* was revoked: tollgate keys create --agent <name> --save/,
  )

  // allowlist
  const add = await u.run(['allowlist', 'add', '--namespace', 'tollgate', '--json'])
  const entry = JSON.parse(add.out)
  t.match(entry, { object: 'allowlist_entry', kind: 'namespace', value: 'tollgate' })
  const al = await u.run(['allowlist', 'list'])
  t.match(al.out, new RegExp(`${entry.id}\\s+namespace\\s+tollgate`))
  t.equal(
    (await u.run(['allowlist', 'add', '--host', 'a.example', '--pay-to', a.address])).code,
    1,
    'one kind at a time',
  )
  const rm = await u.run(['allowlist', 'remove', '--namespace', 'tollgate'])
  t.equal(rm.code, 0, rm.err)
  t.match((await u.run(['allowlist', 'list'])).out, /may pay any seller/)

  // payments list: a funded agent of this user pays twice, one call fails
  const payer = await p.agent({ user: (await users.authenticate(email, 'correct horse battery')).id, fund: 1_000_000n })
  const env = { TOLLGATE_AGENT_KEY: payer.key }
  t.equal((await u.run(['fetch', `${p.proxyUrl}/tollgate/toolbox/echo?msg=1`], env)).code, 0)
  t.equal((await u.run(['fetch', `${p.proxyUrl}/tollgate/toolbox/echo?msg=2`], env)).code, 0)
  const all = await u.run(['payments', 'list', '--agent', payer.address, '--since', '1h', '--json'])
  t.equal(all.code, 0, all.out)
  const page = JSON.parse(all.out)
  t.equal(page.data.length, 2)
  t.ok(page.data.every((r: { payer: string }) => r.payer === payer.address.toLowerCase()))
  t.ok(page.data[0].created_at >= page.data[1].created_at, 'newest first')
  const one = await u.run(['payments', 'list', '--agent', payer.address, '--limit', '1'])
  t.equal(one.out.trim().split('\n').length, 2, 'the header and one payment')
  t.match(one.err, /more payments match/)
  const none = await u.run(['payments', 'list', '--agent', payer.address, '--status', 'failed,voided', '--json'])
  t.same(JSON.parse(none.out).data, [], 'the status filter')
  const open = await u.run(['payments', 'list', '--agent', payer.address, '--status', 'pending,settled', '--json'])
  t.equal(JSON.parse(open.out).data.length, 2)
  const future = await u.run(['payments', 'list', '--since', '2999-01-01', '--json'])
  t.same(JSON.parse(future.out).data, [])
  t.equal((await u.run(['payments', 'list', '--status', 'paid'])).code, 1)
  t.equal((await u.run(['payments', 'list', '--since', 'yesterday'])).code, 1)

  // --json errors: one JSON document on stdout, the exit code of the failure
  const missing = await u.run(['agents', 'show', 'nobody', '--json'])
  t.equal(missing.code, 1)
  t.match(JSON.parse(missing.out), { error: { code: 'usage', message: /no agent named "nobody"/, exit_code: 1 } })
  t.equal(missing.err, '')
  const http = await u.run(['--json', 'agents', 'show', '0x' + '1'.repeat(40)])
  t.equal(http.code, 3)
  t.match(JSON.parse(http.out), { error: { code: 'not_found', status: 404, exit_code: 3 } })
  for (const cmd of [
    ['agents', 'list'],
    ['keys', 'list', '--agent', a.address],
    ['allowlist', 'list', '--agent', a.address],
    ['caps', 'show', '--agent', a.address],
    ['config', 'list'],
    ['config', 'show'],
    ['marketplace', 'list'],
    ['payments', 'list'],
    ['funding'],
    ['revenue'],
  ]) {
    const r = await u.run([...cmd, '--json'])
    t.equal(r.code, 0, `${cmd.join(' ')}: ${r.out}`)
    t.doesNotThrow(() => JSON.parse(r.out), `${cmd.join(' ')} --json is JSON`)
    t.equal(r.err, '', `${cmd.join(' ')} --json: stderr quiet`)
  }
})

t.test(
  'contexts: sandbox and production side by side; a production context never stores or sends a sandbox key',
  async (t) => {
    // a web app of the production deployment on the same database (its keys are sk_live_ / ak_live_)
    const prodDeps = {
      ...p.deps,
      config: Object.freeze({ ...p.deps.config, deployment: 'production' as const, apiKeyPrefix: 'sk_live_' }),
    }
    const prod = await buildWebApp(prodDeps, { logger: false })
    t.teardown(() => prod.close())
    const port = await freePort()
    await prod.listen({ host: '127.0.0.1', port })
    const prodUrl = `http://127.0.0.1:${port}`
    const email = `ctx${Date.now()}@example.com`
    const user = await users.create(email, 'correct horse battery')
    const testKey = (await createApiKeys({ db: p.deps.db, deployment: 'sandbox' }).create(user.id, 'sandbox')).secret
    const liveKey = (await createApiKeys({ db: p.deps.db, deployment: 'production' }).create(user.id, 'production'))
      .secret
    const u = terminal()

    t.equal((await u.run(['login', '--api-url', p.webUrl, '--api-key', testKey])).code, 0)
    const wrong = await u.run(['login', '--context', 'production', '--api-url', prodUrl, '--api-key', testKey])
    t.equal(wrong.code, 1)
    t.match(
      wrong.err,
      /--api-key is a sandbox key \(sk_test_…\) and http:\/\/127\.0\.0\.1:\d+ is production: a production API never gets a sandbox key/,
    )
    t.notOk(
      u.sent.some((r) => r.url.startsWith(prodUrl) && r.authorization === `Bearer ${testKey}`),
      'the sandbox key never reached the production API',
    )
    t.notOk('production' in u.config().contexts, 'nothing stored')

    const ok = await u.run(['login', '--context', 'production', '--api-url', prodUrl, '--api-key', liveKey])
    t.equal(ok.code, 0, ok.err)
    t.match(ok.out, /context "production" is not the current one: tollgate config use production/)
    t.match(u.config(), {
      current: 'sandbox',
      contexts: {
        sandbox: { deployment: 'sandbox' },
        production: { deployment: 'production', api_url: prodUrl, api_key: liveKey },
      },
    })
    // a production context cannot be pointed at the sandbox API
    const mixed = await u.run(['login', '--context', 'production', '--api-url', p.webUrl, '--api-key', testKey])
    t.equal(mixed.code, 1)
    t.match(mixed.err, /context "production" is production and http:\/\/127\.0\.0\.1:\d+ is sandbox/)

    // setup in each: a live agent key in production, a test one in sandbox
    t.equal((await u.run(['--context', 'production', 'setup', '--agent', 'prod bot', '--no-fund'])).code, 0)
    t.equal((await u.run(['setup', '--agent', 'test bot', '--no-fund'])).code, 0)
    t.match(u.config().contexts, { production: { agent_key: /^ak_live_/ }, sandbox: { agent_key: /^ak_test_/ } })
    const prodBudget = await u.run(['budget', '--context=production', '--json'])
    t.equal(prodBudget.code, 0, prodBudget.out)
    const sandboxBudget = await u.run(['budget', '--json'])
    t.not(
      JSON.parse(prodBudget.out).address,
      JSON.parse(sandboxBudget.out).address,
      'each context pays from its own agent',
    )

    // config use switches; TOLLGATE_CONTEXT and --context pick per command
    t.equal((await u.run(['config', 'use', 'production'])).code, 0)
    const listed = JSON.parse((await u.run(['config', 'list', '--json'])).out)
    t.match(listed, {
      current: 'production',
      data: [
        { name: 'sandbox', current: false },
        { name: 'production', current: true, deployment: 'production', api_key: /^sk_live_\w{4}…$/ },
      ],
    })
    t.notOk(JSON.stringify(listed).includes(liveKey), 'keys are shortened')
    t.equal(
      JSON.parse((await u.run(['config', 'show', '--json'], { TOLLGATE_CONTEXT: 'sandbox' })).out).name,
      'sandbox',
    )
    const unknown = await u.run(['config', 'use', 'staging'])
    t.equal(unknown.code, 1)
    t.match(unknown.err, /no context "staging" .*\(there: sandbox, production\)/)
    t.equal((await u.run(['--context', 'staging', 'budget'])).code, 1)

    // an environment key of the other deployment is refused for the context's API, unsent
    const sentBefore = u.sent.length
    const envKey = await u.run(['agents', 'list'], { TOLLGATE_API_KEY: testKey })
    t.equal(envKey.code, 1)
    t.match(envKey.err, /the API key in TOLLGATE_API_KEY is a sandbox key/)
    t.equal(u.sent.length, sentBefore, 'no request')
    // (with TOLLGATE_API_URL as well, the context's deployment no longer describes the address: the server judges)
    const elsewhere = await u.run(['agents', 'list'], { TOLLGATE_API_KEY: testKey, TOLLGATE_API_URL: p.webUrl })
    t.equal(elsewhere.code, 0, elsewhere.err)

    // a key pasted into the wrong context by hand is refused before anything is sent
    const cfg = u.config()
    cfg.contexts.production.agent_key = cfg.contexts.sandbox.agent_key
    writeFileSync(path.join(u.home, '.config', 'tollgate', 'config.json'), JSON.stringify(cfg))
    const before = u.sent.length
    const pasted = await u.run(['budget'])
    t.equal(pasted.code, 1)
    t.match(
      pasted.err,
      /the agent key in "agent_key" of context "production" .* is a sandbox key \(ak_test_…\) and context "production" \([^)]+\) is production/,
    )
    t.match(pasted.err, /to fix: keep sandbox keys in a sandbox context/)
    t.equal(u.sent.length, before, 'no request at all')
  },
)

t.test('the flat config file of earlier releases still works and becomes the "default" context', async (t) => {
  const payer = await p.agent({ fund: 1_000_000n })
  const home = mkdtempSync(path.join(os.tmpdir(), 'tg-cli-acct-'))
  mkdirSync(path.join(home, '.config', 'tollgate'), { recursive: true })
  writeFileSync(
    path.join(home, '.config', 'tollgate', 'config.json'),
    JSON.stringify({ agent_key: payer.key, api_url: p.webUrl }),
  )
  const u = terminal({}, home)
  const b = await u.run(['budget', '--json'])
  t.equal(b.code, 0, b.out)
  t.equal(JSON.parse(b.out).address, payer.address)
  t.match(JSON.parse((await u.run(['config', 'show', '--json'])).out), {
    name: 'default',
    api_url: p.webUrl,
    agent_key: /^ak_test_/,
  })
  const email = `flat${Date.now()}@example.com`
  await users.create(email, 'correct horse battery')
  t.equal((await u.run(['login', '--email', email], { TOLLGATE_PASSWORD: 'correct horse battery' })).code, 0)
  t.match(
    u.config(),
    {
      current: 'default',
      contexts: { default: { agent_key: payer.key, api_url: p.webUrl, api_key: /^sk_test_/, deployment: 'sandbox' } },
    },
    'rewritten with contexts, nothing lost',
  )
})

t.test('withdraw: an agent wallet and the funding wallet, waited for until confirmed', async (t) => {
  const email = `wd${Date.now()}@example.com`
  await users.create(email, 'correct horse battery')
  const u = terminal({ TOLLGATE_PASSWORD: 'correct horse battery' })
  t.equal((await u.run(['login', '--api-url', p.webUrl, '--email', email])).code, 0)
  t.equal((await u.run(['setup', '--fund', '0.5'])).code, 0)
  const to = '0x' + 'ab'.repeat(20)

  // what needs no server route
  for (const [args, why] of [
    [['withdraw', '--to', to, '--amount', '1'], /give --agent <name\|address> or --funding-wallet/],
    [['withdraw', '--agent', 'cli', '--to', 'nowhere', '--amount', '1'], /--to: expected an address/],
    [['withdraw', '--agent', 'cli', '--to', to, '--amount', '0.0000001'], /USDC has 6 decimals/],
    [
      ['withdraw', '--agent', 'cli', '--to', to, '--amount', '1', '--asset', 'ETH'],
      /only the funding wallet withdraws ETH/,
    ],
  ] as const) {
    const r = await u.run([...args])
    t.equal(r.code, 1, args.join(' '))
    t.match(r.err, why, args.join(' '))
  }

  const r = await u.run(['withdraw', '--agent', 'cli', '--to', to, '--amount', '0.2', '--json'])
  if (r.code === 3 && JSON.parse(r.out).error?.code === 'route_not_found') {
    t.pass('withdrawing and waiting for the confirmation', {
      skip: 'the server has no POST /v1/agents/{address}/withdrawals yet (another branch adds it): this part runs once it exists',
    })
    return
  }
  t.equal(r.code, 0, r.out)
  const w = JSON.parse(r.out)
  t.match(w, {
    status: 'confirmed',
    to: new RegExp(to, 'i'),
    amount: '200000',
    tx_hash: /^0x[0-9a-f]{64}$/,
    idempotency_key: /^[0-9a-f-]{36}$/,
  })
  t.equal(await balanceOf(to), 200_000n, 'the USDC arrived')
  const st = await u.run(['withdraw', 'status', w.id, '--json'])
  t.match(JSON.parse(st.out), { id: w.id, status: 'confirmed' })
  // the same Idempotency-Key again: the same withdrawal, no second transfer
  const replay = await u.run([
    'withdraw',
    '--agent',
    'cli',
    '--to',
    to,
    '--amount',
    '0.2',
    '--idempotency-key',
    w.idempotency_key,
    '--json',
  ])
  t.equal(JSON.parse(replay.out).id, w.id)
  t.equal(await balanceOf(to), 200_000n)
  const human = await u.run(['withdraw', '--funding-wallet', '--to', to, '--amount', '1', '--no-wait'])
  t.equal(human.code, 0, human.err)
  t.match(
    human.err,
    /withdrawing 1 USDC from the funding wallet 0x[0-9a-fA-F]{40} to .* \(Idempotency-Key [0-9a-f-]{36}\)/,
  )
  t.match(human.out, /withdrawal [^:]+: 1 USDC to 0x/)
})
