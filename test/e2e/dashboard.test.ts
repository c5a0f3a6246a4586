import { randomBytes, randomUUID } from 'node:crypto'
import t from 'tap'
import { chromium } from 'playwright-core'
import { buildWebApp } from '../../src/http/web-app.js'
import { DASHBOARD_CSP } from '../../src/http/routes/dashboard/index.js'
import { usersService } from '../../src/services/accounts/users.js'
import { testDeps } from '../helpers/test-env.js'

// Debian's chromium (`apt-get install chromium`; .ci/run installs it when this directory has tests)
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

interface T {
  teardown(fn: () => unknown): void
}

/** A web app on a fresh schema, listening on a free port (the browser needs a real socket). */
async function dashboardServer(t: T) {
  const deps = await testDeps(t, { TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex') })
  const app = await buildWebApp(deps, { logger: false })
  t.teardown(() => app.close())
  const base = await app.listen({ host: '127.0.0.1', port: 0 })
  const email = `dash-${randomBytes(4).toString('hex')}@example.com`
  const password = 'correct horse battery'
  await usersService({ db: deps.db }).create(email, password)
  return { deps, app, base, email, password }
}

t.test('the three files: content types, security headers, revalidation, not in OpenAPI', async (t) => {
  const { app } = await dashboardServer(t)
  for (const [url, type] of [
    ['/dashboard', 'text/html; charset=utf-8'],
    ['/dashboard/', 'text/html; charset=utf-8'],
    ['/dashboard/app.js', 'text/javascript; charset=utf-8'],
    ['/dashboard/app.css', 'text/css; charset=utf-8'],
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
  const js = (await app.inject({ method: 'GET', url: '/dashboard/app.js' })).body
  t.notMatch(js, /\.(innerHTML|outerHTML)\b|insertAdjacentHTML|document\.write\(/, 'the app never renders through HTML strings')
  t.equal((await app.inject({ method: 'GET', url: '/dashboard/nope.js' })).statusCode, 404)
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  t.notOk(Object.keys(doc.paths).some((p) => p.startsWith('/dashboard')), 'dashboard routes are not in the OpenAPI document')
})

t.test('in a browser: log in, API keys, agents, transactions, seller, log out', async (t) => {
  const { deps, base, email, password } = await dashboardServer(t)
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] })
  t.teardown(() => browser.close())
  const page = await browser.newPage()
  page.setDefaultTimeout(15_000)
  const pageErrors: string[] = []
  const cspViolations: string[] = []
  page.on('pageerror', (err) => pageErrors.push(err.message))
  page.on('console', (m) => void (/Content Security Policy/i.test(m.text()) && cspViolations.push(m.text())))
  const apiFromPage = (method: string, path: string, body?: unknown) =>
    page.evaluate(
      async ([method, path, body]) => {
        const res = await fetch(path as string, { method: method as string, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined })
        return { status: res.status, body: await res.json().catch(() => null) }
      },
      [method, path, body] as const,
    )

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
  await page.getByRole('heading', { name: 'API Keys' }).waitFor()
  t.equal(await page.locator('#who').textContent(), email)
  // a reload keeps the session (cookie) and shows who is logged in again
  await page.reload()
  await page.getByRole('heading', { name: 'API Keys' }).waitFor()
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
  t.match(await row.textContent(), new RegExp(`${secret.slice(0, 12)}…${secret.slice(-4)}`), 'the list shows prefix…last4')
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
  t.match(caps.body, { per_transaction: null, daily: '5500000', monthly: '100000000' }, 'the caps reached the API in atomic units')
  await page.getByLabel('Per transaction').fill('1.1234567')
  await page.getByRole('button', { name: 'Save spend caps' }).click()
  await page.locator('#notice.error').filter({ hasText: 'Per transaction: expected a USDC amount' }).waitFor()

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
        id: randomUUID(), resource: `https://proxy/dash/p${n}`, method: 'GET', x402_version: 2, network: 'eip155:84532', asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        payer: address, pay_to: '0x' + '22'.repeat(20), value: '1000', valid_after: 0, valid_before: 2_000_000_000, nonce: '0x' + n.padStart(64, '0'),
        signature: '0xsig', status: 'served', created_at: new Date(Date.UTC(2026, 10, 1, 0, i)),
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
  t.same(await txRows.allTextContents().then((r) => r.map((x) => x.match(/\/p\d\d/)?.[0])), ['/p04', '/p03', '/p02', '/p01', '/p00'], 'Older: the 5 oldest, still newest first')
  t.equal(await page.getByRole('button', { name: 'Older' }).count(), 0, 'no Older button on the oldest page')
  await page.getByRole('button', { name: 'Newest' }).click()
  await txRows.first().filter({ hasText: '/p24' }).waitFor()
  t.match(await page.getByRole('link', { name: 'transactions.csv' }).getAttribute('href'), /^\/v1\/transactions\?format=csv$/, 'the export link keeps the API order (no order parameter)')

  // Seller: what the user publishes, read-only
  t.equal((await apiFromPage('POST', '/v1/sellers', { namespace: 'dash-seller', display_name: 'Dash Seller' })).status, 201)
  t.equal((await apiFromPage('POST', '/v1/sellers/dash-seller/services', { name: 'tools', pay_to: '0x' + '22'.repeat(20) })).status, 201)
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
