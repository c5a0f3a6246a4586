import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import t from 'tap'
import { DASHBOARD_CSP, DASHBOARD_DIR, DASHBOARD_MODULES } from '../../src/http/routes/dashboard/index.js'
import { dashboardServer, logIn, nextDialog, openBrowser } from './browser.js'

t.test('the files: content types, security headers, revalidation, an allow-list, not in OpenAPI', async (t) => {
  const { app } = await dashboardServer(t)
  for (const [url, type] of [
    ['/dashboard', 'text/html; charset=utf-8'],
    ['/dashboard/', 'text/html; charset=utf-8'],
    ['/dashboard/app.css', 'text/css; charset=utf-8'],
    ...DASHBOARD_MODULES.map((m) => [`/dashboard/${m}`, 'text/javascript; charset=utf-8']),
  ]) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 200, url)
    t.equal(res.headers['content-type'], type, url)
    t.equal(res.headers['cache-control'], 'no-cache', url)
    t.equal(res.headers['content-security-policy'], DASHBOARD_CSP, url)
    t.equal(res.headers['x-content-type-options'], 'nosniff', url)
    t.equal(res.headers['x-frame-options'], 'DENY', url)
    t.ok(res.body.length > 100, `${url} has its content`)
    const again = await app.inject({ method: 'GET', url, headers: { 'if-none-match': String(res.headers.etag) } })
    t.equal(again.statusCode, 304, `${url} revalidates by ETag`)
  }
  t.match(DASHBOARD_CSP, /default-src 'self'/)
  t.notMatch(DASHBOARD_CSP, /unsafe-inline|unsafe-eval/)
  const html = (await app.inject({ method: 'GET', url: '/dashboard' })).body
  t.notMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/, 'no inline script in the page')
  t.match(html, /<script type="module" src="\/dashboard\/app.js"><\/script>/)
  // every module in the folder is served, and every import names a served module
  const onDisk = readdirSync(DASHBOARD_DIR)
    .filter((f) => f.endsWith('.js'))
    .sort()
  t.same(onDisk, [...DASHBOARD_MODULES].sort(), 'the allow-list names every module in src/http/dashboard/')
  for (const m of DASHBOARD_MODULES) {
    const js = (await app.inject({ method: 'GET', url: `/dashboard/${m}` })).body
    t.equal(js, readFileSync(DASHBOARD_DIR + m, 'utf8'), `${m} is served as it is on disk`)
    t.notMatch(
      js,
      /\.(innerHTML|outerHTML)\b|insertAdjacentHTML|document\.write\(/,
      `${m} never renders through HTML strings`,
    )
    for (const [, spec] of js.matchAll(/^import [^'"]*'([^']+)'/gm))
      t.ok(DASHBOARD_MODULES.includes(spec!.replace(/^\.\//, '') as never), `${m} imports ${spec}, which is served`)
  }
  t.equal((await app.inject({ method: 'GET', url: '/dashboard/nope.js' })).statusCode, 404)
  t.equal((await app.inject({ method: 'GET', url: '/dashboard/index.html' })).statusCode, 404, 'only the listed paths')
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  t.notOk(
    Object.keys(doc.paths).some((p) => p.startsWith('/dashboard')),
    'dashboard routes are not in the OpenAPI document',
  )
})

t.test('in a browser: log in, API keys, agents, transactions, seller, log out', async (t) => {
  const { deps, base, email, password } = await dashboardServer(t)
  const { page, pageErrors, cspViolations, api: apiFromPage } = await openBrowser(t)

  // no session: the first screen is the login form; the page carries the CSP
  const first = await page.goto(`${base}/dashboard`)
  t.equal(first?.status(), 200)
  t.equal(first?.headers()['content-security-policy'], DASHBOARD_CSP)
  await page.getByRole('heading', { name: 'Log in' }).waitFor()
  t.notOk(await page.locator('#nav').isVisible(), 'the menu is hidden before login')

  // wrong password: the API's message, still on the login screen
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill('not the password')
  await page.getByRole('button', { name: 'Log in' }).click()
  const loginError = page.locator('#login-error')
  await loginError.filter({ hasText: 'the email or password is wrong' }).waitFor()
  t.equal(await page.locator('#nav').isVisible(), false)

  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.getByRole('heading', { name: 'Overview', exact: true }).waitFor()
  t.equal(await page.locator('#who').textContent(), email)
  // a reload keeps the session (cookie) and shows who is logged in again
  await page.reload()
  await page.getByRole('heading', { name: 'Overview', exact: true }).waitFor()
  await page.locator('#who').filter({ hasText: email }).waitFor()

  // API Keys: create, the secret once, it authenticates
  await page.getByRole('link', { name: 'API Keys', exact: true }).click()
  await page.getByRole('button', { name: 'Create API key' }).click()
  await page.getByLabel('Key name').fill('ci-deploy')
  await page.getByRole('button', { name: 'Create', exact: true }).click()
  const secretEl = page.locator('#new-secret')
  await secretEl.waitFor()
  const secret = (await secretEl.textContent()) ?? ''
  t.match(secret, /^sk_(test|live)_[0-9A-Za-z]{43}$/, 'the secret is shown')
  t.ok(await page.getByText('you will not see it again').isVisible(), 'with the warning')
  const row = page.locator('tr', { hasText: 'ci-deploy' })
  await row.waitFor()
  t.match(
    await row.textContent(),
    new RegExp(`${secret.slice(0, 12)}…${secret.slice(-4)}`),
    'the list shows prefix…last4',
  )
  t.match(await row.textContent(), /active/)

  const withKey = (s: string) => fetch(`${base}/v1/session`, { headers: { authorization: `Bearer ${s}` } })
  const viaKey = await withKey(secret)
  t.equal(viaKey.status, 200, 'the new key authenticates GET /v1/session')
  t.equal((await viaKey.json()).via, 'api_key')

  // shown once: gone after leaving the screen, and never in the list
  await page.getByRole('link', { name: 'Agents', exact: true }).click()
  await page.getByRole('heading', { name: 'Agents' }).waitFor()
  await page.getByRole('link', { name: 'API Keys', exact: true }).click()
  await row.waitFor()
  t.notOk((await page.content()).includes(secret), 'the secret is not shown again')

  // revoke: confirm, the row says revoked, the key gets 401 at once
  page.once('dialog', (d) => void d.accept())
  await row.getByRole('button', { name: 'Revoke' }).click()
  await row.locator('td.revoked').waitFor()
  t.match(await row.textContent(), /revoked/)
  t.equal(await row.getByRole('button', { name: 'Revoke' }).count(), 0, 'a revoked key has no Revoke button')
  const revoked = await withKey(secret)
  t.equal(revoked.status, 401, 'the revoked key gets 401')
  t.equal((await revoked.json()).code, 'invalid_api_key')
  // a dismissed confirmation revokes nothing
  await page.getByRole('button', { name: 'Create API key' }).click()
  await page.getByLabel('Key name').fill('kept')
  await page.getByRole('button', { name: 'Create', exact: true }).click()
  const kept = (await secretEl.textContent()) ?? ''
  page.once('dialog', (d) => void d.dismiss())
  await page.locator('tr', { hasText: 'kept' }).getByRole('button', { name: 'Revoke' }).click()
  t.equal((await withKey(kept)).status, 200, 'dismissing the confirmation keeps the key')

  // Agents: create, listed, detail with balance (the test chain RPC is down: 503 message) and caps
  await page.getByRole('link', { name: 'Agents', exact: true }).click()
  await page.getByLabel('New agent').fill('research-bot')
  await page.getByRole('button', { name: 'Create agent' }).click()
  const agentLink = page.getByRole('link', { name: 'research-bot' })
  await agentLink.waitFor()
  await page.locator('#notice.ok').filter({ hasText: 'Agent "research-bot" created' }).waitFor()
  const agents = await apiFromPage('GET', '/v1/agents')
  t.equal(agents.body.data.length, 1)
  const address: string = agents.body.data[0].address
  t.match(await page.locator('tr', { hasText: 'research-bot' }).textContent(), address)

  // names are data: rendered as text, never as markup
  await page.getByLabel('New agent').fill('<img src=x id=xss>')
  await page.getByRole('button', { name: 'Create agent' }).click()
  await page.getByRole('link', { name: '<img src=x id=xss>' }).waitFor()
  t.equal(await page.locator('#xss').count(), 0, 'an agent name is not parsed as HTML')

  await agentLink.click()
  await page.getByRole('heading', { name: 'research-bot' }).waitFor()
  await page.locator('#balance.error').filter({ hasText: 'Balance unavailable right now' }).waitFor()
  await page.getByLabel('Daily').fill('5.5')
  await page.getByLabel('Monthly').fill('100')
  await page.getByRole('button', { name: 'Save spend caps' }).click()
  await page.locator('#notice.ok').filter({ hasText: 'Spend caps saved.' }).waitFor()
  const caps = await apiFromPage('GET', `/v1/agents/${address}/spend-caps`)
  t.match(
    caps.body,
    { per_transaction: null, daily: '5500000', monthly: '100000000' },
    'the caps reached the API in atomic units',
  )
  await page.getByLabel('Per transaction').fill('1.1234567')
  await page.getByRole('button', { name: 'Save spend caps' }).click()
  await page.locator('#spend-caps .form-error').filter({ hasText: 'Per transaction: expected a USDC amount' }).waitFor()
  t.equal(await page.getByLabel('Per transaction').getAttribute('aria-invalid'), 'true', 'the field is marked')

  // rename: the API gets the name, the heading follows; a bad name shows the API's message by the field
  await page.getByLabel('Agent name').fill('research-bot-2')
  await page.getByRole('button', { name: 'Rename' }).click()
  await page.locator('#notice.ok').filter({ hasText: 'Agent renamed to "research-bot-2".' }).waitFor()
  await page.getByRole('heading', { name: 'research-bot-2' }).waitFor()
  t.equal(
    (await apiFromPage('GET', `/v1/agents/${address}`)).body.name,
    'research-bot-2',
    'the new name reached the API',
  )
  await page.getByLabel('Agent name').fill('')
  await page.getByRole('button', { name: 'Rename' }).click()
  await page.locator('#agent-rename .form-error').waitFor()
  t.equal((await apiFromPage('GET', `/v1/agents/${address}`)).body.name, 'research-bot-2', 'an empty name is refused')
  await page.getByLabel('Agent name').fill('research-bot')
  await page.getByRole('button', { name: 'Rename' }).click()
  await page.getByRole('heading', { name: 'research-bot', exact: true }).waitFor()

  // an API error is shown with the API's message
  await page.goto(`${base}/dashboard#/agents/0x${'00'.repeat(20)}`)
  await page.locator('#notice.error').filter({ hasText: 'agent' }).waitFor()
  t.match(await page.locator('#notice').textContent(), /not found/i)

  // Transactions: a page (empty here) and export links that download with the session
  await page.getByRole('link', { name: 'Transactions', exact: true }).click()
  await page.getByText('No transactions yet.').waitFor()
  const csvHref = await page.getByRole('link', { name: 'transactions.csv' }).getAttribute('href')
  t.match(csvHref, /^\/v1\/transactions\?format=csv/)
  const csv = await page.context().request.get(`${base}${csvHref}`)
  t.equal(csv.status(), 200)
  t.match(csv.headers()['content-type'], /^text\/csv/)

  // newest first, 20 a page, Older for the rest: 25 payments by research-bot, one a minute (resource …/p00 to …/p24)
  for (let i = 0; i < 25; i++) {
    const n = String(i).padStart(2, '0')
    await deps.db
      .insertInto('payments')
      .values({
        id: randomUUID(),
        resource: `https://proxy/dash/p${n}`,
        method: 'GET',
        x402_version: 2,
        network: 'eip155:84532',
        asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        payer: address,
        pay_to: '0x' + '22'.repeat(20),
        value: '1000',
        valid_after: 0,
        valid_before: 2_000_000_000,
        nonce: '0x' + n.padStart(64, '0'),
        signature: '0xsig',
        status: 'served',
        created_at: new Date(Date.UTC(2026, 10, 1, 0, i)),
      })
      .execute()
  }
  await page.getByRole('button', { name: 'Apply' }).click()
  const txRows = page.locator('tbody tr')
  await txRows.first().filter({ hasText: '/p24' }).waitFor()
  t.equal(await txRows.count(), 20)
  t.match(await txRows.first().textContent(), /2026-11-01 00:24:00 UTC.*\/p24/, 'the newest payment comes first')
  t.match(await txRows.last().textContent(), /\/p05/)
  t.equal(await page.getByRole('button', { name: 'Newest' }).count(), 0, 'no Newest button on the newest page')
  await page.getByRole('button', { name: 'Older' }).click()
  await txRows.first().filter({ hasText: '/p04' }).waitFor()
  t.same(
    await txRows.allTextContents().then((r) => r.map((x) => x.match(/\/p\d\d/)?.[0])),
    ['/p04', '/p03', '/p02', '/p01', '/p00'],
    'Older: the 5 oldest, still newest first',
  )
  t.equal(await page.getByRole('button', { name: 'Older' }).count(), 0, 'no Older button on the oldest page')
  await page.getByRole('button', { name: 'Newest' }).click()
  await txRows.first().filter({ hasText: '/p24' }).waitFor()
  t.match(
    await page.getByRole('link', { name: 'transactions.csv' }).getAttribute('href'),
    /^\/v1\/transactions\?format=csv$/,
    'the export link keeps the API order (no order parameter)',
  )

  // Seller: what the user publishes, read-only
  t.equal(
    (await apiFromPage('POST', '/v1/sellers', { namespace: 'dash-seller', display_name: 'Dash Seller' })).status,
    201,
  )
  t.equal(
    (await apiFromPage('POST', '/v1/sellers/dash-seller/services', { name: 'tools', pay_to: '0x' + '22'.repeat(20) }))
      .status,
    201,
  )
  await page.getByRole('link', { name: 'Seller', exact: true }).click()
  await page.getByRole('heading', { name: 'Dash Seller (namespace dash-seller)' }).waitFor()
  t.ok(await page.getByText('No endpoints published.').isVisible())

  // Log out: the login screen; the session is over, and any screen goes back to login
  await page.getByRole('button', { name: 'Log out' }).click()
  await page.getByRole('heading', { name: 'Log in' }).waitFor()
  t.equal((await apiFromPage('GET', '/v1/api-keys')).status, 401)
  await page.goto(`${base}/dashboard#/agents`)
  await page.getByRole('heading', { name: 'Log in' }).waitFor()

  t.same(pageErrors, [], 'no script errors')
  t.same(cspViolations, [], 'no CSP violations')
})

t.test("in a browser: an agent's keys, allowlist and top-ups; the funding wallet without a chain", async (t) => {
  const server = await dashboardServer(t)
  const { deps, base } = server
  const { page, pageErrors, cspViolations, api } = await openBrowser(t)
  await logIn(page, server)
  const agent = await api('POST', '/v1/agents', { name: 'buyer-bot' })
  t.equal(agent.status, 201)
  const address: string = agent.body.address
  const agentUrl = `${base}/dashboard#/agents/${address}`
  await page.goto(agentUrl)
  await page.getByRole('heading', { name: 'buyer-bot' }).waitFor()

  // agent keys: create, the secret once, it authenticates the agent routes
  const keys = page.locator('#agent-keys')
  await keys.getByText('No agent keys yet.').waitFor()
  await keys.getByLabel('Key name').fill('runner')
  await keys.getByRole('button', { name: 'Create agent key' }).click()
  await page.locator('#new-secret').waitFor()
  const secret = (await page.locator('#new-secret').textContent()) ?? ''
  t.match(secret, /^ak_(test|live)_[0-9A-Za-z]{43}$/, 'the agent key secret is shown')
  t.ok(await keys.getByText('you will not see it again').isVisible(), 'with the warning')
  t.ok(await keys.getByRole('button', { name: 'Copy' }).isVisible(), 'and a Copy button')
  const keyRow = keys.locator('tr', { hasText: 'runner' })
  await keyRow.waitFor()
  t.match(
    await keyRow.textContent(),
    new RegExp(`${secret.slice(0, 12)}…${secret.slice(-4)}.*active`),
    'listed as prefix…last4, active',
  )
  const asAgent = (bearer: string) =>
    fetch(`${base}/v1/agent/payments/${randomUUID()}`, { headers: { authorization: `Bearer ${bearer}` } })
  const authed = await asAgent(secret)
  t.equal(authed.status, 404, 'the new agent key authenticates /v1/agent (the payment id is unknown: 404, not 401)')
  t.equal((await authed.json()).code, 'not_found')
  t.equal(
    (await asAgent(secret.slice(0, -1) + (secret.endsWith('A') ? 'B' : 'A'))).status,
    401,
    'another secret does not',
  )
  const listed = await api('GET', `/v1/agents/${address}/keys`)
  t.match(listed.body.data, [{ name: 'runner', revoked_at: null }])

  // shown once: gone after leaving the page
  await page.getByRole('link', { name: 'Agents', exact: true }).click()
  await page.getByRole('heading', { name: 'Agents' }).waitFor()
  await page.goto(agentUrl)
  await keyRow.waitFor()
  t.notOk((await page.content()).includes(secret), 'the secret is not shown again')

  // revoke: a dismissed confirmation keeps the key; a confirmed one revokes it at once
  nextDialog(page, false)
  await keyRow.getByRole('button', { name: 'Revoke' }).click()
  t.equal((await asAgent(secret)).status, 404, 'dismissed: the key still works')
  nextDialog(page)
  await keyRow.getByRole('button', { name: 'Revoke' }).click()
  await keyRow.locator('td.revoked').waitFor()
  let status = 0
  for (let i = 0; i < 20 && status !== 401; i++) {
    status = (await asAgent(secret)).status
    if (status !== 401) await new Promise((r) => setTimeout(r, 100))
  }
  t.equal(status, 401, 'the revoked agent key gets 401')
  t.notOk((await api('GET', `/v1/agents/${address}/keys`)).body.data[0].revoked_at === null, 'revoked in the API')

  // allowlist: the kinds offered are the ones the API allows (its 400 names them)
  const allow = page.locator('#allowlist')
  await allow.getByText('No entries: this agent may pay every seller.').waitFor()
  const offered = await allow
    .getByLabel('Kind')
    .locator('option')
    .evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))
  const bogus = await api('POST', `/v1/agents/${address}/allowlist`, { kind: 'bogus', value: 'x' })
  t.equal(bogus.status, 400)
  t.same(
    offered,
    /expected one of (.*)$/.exec(bogus.body.message)![1]!.split(', '),
    'the select offers exactly the kinds the API names',
  )
  // the API's validation message, next to the form, on the field it names
  await allow.getByLabel('Kind').selectOption('pay_to')
  await allow.getByLabel('Value').fill('0x12')
  await allow.getByRole('button', { name: 'Add to allowlist' }).click()
  await allow
    .locator('.form-error')
    .filter({ hasText: 'invalid value for value: expected a 0x-prefixed 20-byte hex address' })
    .waitFor()
  t.equal(await allow.getByLabel('Value').getAttribute('aria-invalid'), 'true', 'the value field is marked')
  t.same((await api('GET', `/v1/agents/${address}/allowlist`)).body.data, [], 'nothing was added')
  // mixed case must carry its EIP-55 checksum: a wrong one is refused, the right one is taken
  await allow.getByLabel('Value').fill('0xAbCdEf0123456789aBcDeF0123456789AbCdEf01')
  await allow.getByRole('button', { name: 'Add to allowlist' }).click()
  await allow.locator('.form-error').filter({ hasText: 'checksum' }).waitFor()
  t.same((await api('GET', `/v1/agents/${address}/allowlist`)).body.data, [], 'a wrong checksum adds nothing')
  const payTo = '0xabCDeF0123456789AbcdEf0123456789aBCDEF01'
  await allow.getByLabel('Value').fill(payTo)
  await allow.getByRole('button', { name: 'Add to allowlist' }).click()
  await allow.locator('tr', { hasText: payTo.toLowerCase() }).waitFor()
  t.ok(await allow.locator('.form-error').isHidden(), 'the error is gone')
  await allow.getByLabel('Kind').selectOption('namespace')
  await allow.getByLabel('Value').fill('acme-data')
  await allow.getByRole('button', { name: 'Add to allowlist' }).click()
  await allow.locator('tr', { hasText: 'acme-data' }).waitFor()
  t.match(
    (await api('GET', `/v1/agents/${address}/allowlist`)).body.data,
    [
      { kind: 'pay_to', value: payTo.toLowerCase() },
      { kind: 'namespace', value: 'acme-data' },
    ],
    'both entries are in GET …/allowlist',
  )
  nextDialog(page)
  await allow.locator('tr', { hasText: 'acme-data' }).getByRole('button', { name: 'Remove' }).click()
  await allow.locator('tr', { hasText: 'acme-data' }).waitFor({ state: 'detached' })
  t.match((await api('GET', `/v1/agents/${address}/allowlist`)).body.data, [{ kind: 'pay_to' }], 'removed in the API')
  t.equal((await api('GET', `/v1/agents/${address}/allowlist`)).body.data.length, 1)
  // the last entry: the confirmation says an empty list allows every seller; dismissed, it stays
  const warning = new Promise<string>((resolve) =>
    page.once('dialog', (d) => void d.dismiss().then(() => resolve(d.message()))),
  )
  await allow.locator('tr', { hasText: payTo.toLowerCase() }).getByRole('button', { name: 'Remove' }).click()
  t.match(await warning, /last entry: with an empty allowlist this agent may pay every seller/)
  t.equal((await api('GET', `/v1/agents/${address}/allowlist`)).body.data.length, 1, 'dismissed: still there')

  // top-ups: off; the API's message when enabled with amount 0; then on, in atomic units
  const topUp = page.locator('#top-up')
  t.equal(await page.locator('#top-up-status').textContent(), 'Top-ups are off.')
  await topUp.getByLabel('Enabled').check()
  await topUp.getByLabel('Threshold (USDC)').fill('2.5')
  await topUp.getByLabel('Amount per top-up (USDC)').fill('0')
  await topUp.getByRole('button', { name: 'Save top-up settings' }).click()
  await topUp
    .locator('.form-error')
    .filter({ hasText: 'invalid value for top_up.amount: must be greater than 0 when top-ups are enabled' })
    .waitFor()
  t.equal(await topUp.getByLabel('Amount per top-up (USDC)').getAttribute('aria-invalid'), 'true')
  t.match((await api('GET', `/v1/agents/${address}/top-up`)).body, { enabled: false }, 'nothing was saved')
  await topUp.getByLabel('Amount per top-up (USDC)').fill('10')
  await topUp.getByRole('button', { name: 'Save top-up settings' }).click()
  await page.locator('#notice.ok').filter({ hasText: 'Top-up settings saved' }).waitFor()
  t.match(
    (await api('GET', `/v1/agents/${address}/top-up`)).body,
    { enabled: true, threshold: '2500000', amount: '10000000', funding_source: 'funding_wallet' },
    'the settings reached the API in atomic units',
  )
  t.match(
    await page.locator('#top-up-status').textContent(),
    /on: when the USDC balance falls below 2.5 USDC, 10 USDC is sent/,
  )

  // the funding wallet: address as the API gives it; no chain, so no balance; the agent is listed
  await page.getByRole('link', { name: 'Funding wallet', exact: true }).click()
  await page.getByRole('heading', { name: 'Funding wallet' }).waitFor()
  const wallet = await api('GET', '/v1/funding-wallet')
  t.match(wallet.body, {
    object: 'funding_wallet',
    balance: null,
    balance_error: /chain RPC did not answer/,
    faucet_available: false,
  })
  t.equal(await page.locator('#funding-address').textContent(), wallet.body.address)
  await page
    .locator('#funding-balance.error')
    .filter({ hasText: 'Balance unavailable right now: the chain RPC did not answer' })
    .waitFor()
  t.equal(await page.locator('#faucet').count(), 0, 'no faucet without the dev chain')
  t.notMatch(await page.locator('main').textContent(), /false|null|undefined/, 'no stray value rendered as text')
  t.match(await page.locator('li', { hasText: 'buyer-bot' }).textContent(), /on: below 2.5 USDC, add 10 USDC/)

  // a top-up the worker recorded is listed on the agent page (newest first, with its error)
  const agentId = (
    await deps.db.selectFrom('agents').select('id').where('address', '=', address).executeTakeFirstOrThrow()
  ).id
  await deps.db
    .insertInto('topups')
    .values({
      agent_id: agentId,
      need_seq: 1,
      status: 'failed',
      agent_address: address,
      funding_address: wallet.body.address,
      amount: '10000000',
      threshold: '2500000',
      balance_seen: '0',
      block_seen: 1,
      attempts: 5,
      error: 'funding wallet has 0, needs 10000000',
    })
    .execute()
  await page.goto(agentUrl)
  const topUpRow = page.locator('tr', { hasText: 'funding wallet has 0' })
  await topUpRow.waitFor()
  t.match(await topUpRow.textContent(), /failed.*10 USDC.*5/)
  t.notMatch(await page.locator('main').textContent(), /false|null|undefined/, 'no stray value rendered as text')
  // the form shows the saved settings; Disable turns them off and keeps the amounts
  t.ok(await topUp.getByLabel('Enabled').isChecked())
  t.equal(await topUp.getByLabel('Threshold (USDC)').inputValue(), '2.5')
  await topUp.getByRole('button', { name: 'Disable top-ups' }).click()
  await page.locator('#top-up-status').filter({ hasText: 'Top-ups are off.' }).waitFor()
  t.match((await api('GET', `/v1/agents/${address}/top-up`)).body, {
    enabled: false,
    threshold: '2500000',
    amount: '10000000',
  })
  t.ok(await topUp.getByRole('button', { name: 'Disable top-ups' }).isHidden(), 'no Disable button while off')

  // a session that ended elsewhere: the next action goes to the login screen, then back here
  t.equal((await api('DELETE', '/v1/session')).status, 204)
  await keys.getByRole('button', { name: 'Create agent key' }).click()
  await page.getByRole('heading', { name: 'Log in' }).waitFor()
  await page.getByLabel('Email').fill(server.email)
  await page.getByLabel('Password').fill(server.password)
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.getByRole('heading', { name: 'buyer-bot' }).waitFor()
  t.equal((await api('GET', `/v1/agents/${address}/keys`)).body.data.length, 1, 'no key was created without a session')

  t.same(pageErrors, [], 'no script errors')
  t.same(cspViolations, [], 'no CSP violations')
})
