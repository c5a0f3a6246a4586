import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import type { Page } from 'playwright-core'
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../../src/chain/devnet.js'
import { usdcAbi } from '../../src/chain/usdc-abi.js'
import { wrapFetch } from '../../src/client.js'
import { DASHBOARD_CSP, DASHBOARD_VENDOR } from '../../src/http/routes/dashboard/index.js'
import { startTestPlatform } from '../helpers/platform.js'
import { until } from '../helpers/until.js'
import { openBrowser, serveDashboard } from './browser.js'

// Issue 26 in a browser: sign-up, an agent's budget, payments and withdrawal, transactions with
// names and attempts, the Insights charts, the marketplace and the seller's per-endpoint numbers.
// Screenshots go to .tap/artifacts/dashboard/ (git-ignored; CI keeps .tap/ as the tests' artefacts).
export const ARTIFACTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../.tap/artifacts/dashboard')
mkdirSync(ARTIFACTS, { recursive: true })
const shot = (page: Page, name: string) =>
  page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true })
const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/handlers')

t.test('the charting library is served from our own origin under the dashboard CSP', async (t) => {
  const platform = await startTestPlatform(t, {
    proxy: { handlersDir: fixtures },
    env: { TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex') },
  })
  const { app } = await serveDashboard(t, platform.deps)
  for (const v of DASHBOARD_VENDOR) {
    const res = await app.inject({ method: 'GET', url: v.path })
    t.equal(res.statusCode, 200, v.path)
    t.equal(res.headers['content-type'], v.type)
    t.equal(res.headers['content-security-policy'], DASHBOARD_CSP)
  }
  t.match(
    (await app.inject({ method: 'GET', url: '/dashboard/vendor/uPlot.esm.js' })).body,
    /export \{ uPlot as default \}|export default/,
  )
})

t.test(
  "in a browser: sign up, an agent's budget and payments, a withdrawal, transactions, insights, marketplace, seller numbers",
  async (t) => {
    const platform = await startTestPlatform(t, {
      proxy: { handlersDir: fixtures },
      env: { TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex') },
    })
    const { deps, proxyUrl } = platform
    const server = await serveDashboard(t, deps)
    const { page, pageErrors, cspViolations, api } = await openBrowser(t)
    await page.setViewportSize({ width: 1200, height: 900 })

    // sign-up: the login screen links to it; the new account is logged in at once
    await page.goto(`${server.base}/dashboard`)
    await page.getByRole('link', { name: 'Sign up' }).click()
    await page.getByRole('heading', { name: 'Sign up' }).waitFor()
    t.equal(await page.evaluate(() => document.activeElement?.id), 'signup-email', 'the email field has the focus')
    await page.getByLabel('Email').fill('newcomer@example.com')
    await page.getByLabel('Password').fill('short')
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.locator('#signup-error').filter({ hasText: 'Use at least 10 characters' }).waitFor()
    t.equal(await page.getByLabel('Password').getAttribute('aria-invalid'), 'true')
    t.equal(
      await page.evaluate(() => document.activeElement?.id),
      'signup-password',
      'the refused field takes the focus',
    )
    await page.getByLabel('Password').fill('a long enough password')
    await shot(page, '01-signup')
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.getByRole('heading', { name: 'Overview', exact: true }).waitFor()
    await page.locator('#who').filter({ hasText: 'newcomer@example.com' }).waitFor()
    const userId = (await api('GET', '/v1/session')).body.user.id as string

    // an agent with a key, funded; it pays the echo endpoint twice through the platform
    const agent = (await api('POST', '/v1/agents', { name: 'research bot' })).body
    const key = (await api('POST', `/v1/agents/${agent.address}/keys`, { name: 'ci' })).body.secret as string
    await mintUsdc(platform.devnet.rpcUrl, agent.address, 2_000_000n)
    // transfers (opted out of the hosted endpoint's batch-settlement): each call a payment in the transactions
    const pay = wrapFetch(fetch, { baseUrl: server.base, agentKey: key, batchSettlement: false })
    for (const msg of ['one', 'two']) t.equal((await pay(`${proxyUrl}/tollgate/toolbox/echo?msg=${msg}`)).status, 200)
    // a voided payment (an attempt that was not served) and an older settled one, for the filters and charts
    const columns = sql`id, resource, method, x402_version, network, asset, payer, pay_to, value, valid_after, valid_before, nonce, signature, status, created_at, settled_at, failure_reason`
    await sql`insert into payments (${columns}) values
    (gen_random_uuid(), 'http://x/voided', 'GET', 2, 'eip155:84532', 'a', ${agent.address.toLowerCase()}, ${'0x' + '22'.repeat(20)}, 3000, 0, 1, 'void-1', 's', 'voided', now() - interval '1 minute', null, 'handler_failed'),
    (gen_random_uuid(), 'http://x/old', 'GET', 2, 'eip155:84532', 'a', ${agent.address.toLowerCase()}, ${'0x' + '22'.repeat(20)}, 4000, 0, 1, 'old-1', 's', 'settled', now() - interval '3 days', now() - interval '3 days' + interval '2 seconds', null)`.execute(
      deps.db,
    )

    // the agent's page: its budget as `tollgate budget` shows it, its payments, and a withdrawal
    await page.goto(`${server.base}/dashboard#/agents/${agent.address}`)
    const budget = page.locator('#agent-budget')
    await budget.getByText('Spent today (UTC)').waitFor()
    t.match(await budget.textContent(), /Spent today \(UTC\)0\.002 USDC/, 'spent today: the two calls')
    t.match(await budget.textContent(), /Spent this month \(UTC\)0\.002 USDC/)
    t.match(await budget.textContent(), /Headroom todayno cap/)
    t.match(
      await budget.textContent(),
      /Signed, not settled yet0\.002 USDC/,
      'unsettled: both calls wait for settlement',
    )
    t.match(await budget.textContent(), /Withdrawable now1\.998 USDC/)
    const payments = page.locator('#agent-payments')
    await payments.locator('tr[data-status="served"]').first().waitFor()
    t.equal(await payments.locator('tr[data-status="voided"]').count(), 0, 'attempts that failed are left out')
    await page.getByLabel('Show failed and expired attempts').check()
    await payments.locator('tr[data-status="voided"]').waitFor()
    t.equal(await payments.locator('tbody tr').count(), 4)
    t.match(await payments.locator('tbody tr').first().textContent(), /research bot/, 'the payer is named')

    const form = page.locator('#agent-withdraw')
    await form.getByLabel('To address').fill('0x1234')
    await form.getByLabel('Amount (USDC)').fill('0.5')
    await form.getByRole('button', { name: 'Withdraw' }).click()
    await form.locator('.form-error').filter({ hasText: 'invalid value for to' }).waitFor()
    t.equal(await form.getByLabel('To address').getAttribute('aria-invalid'), 'true')
    t.equal(
      await page.evaluate(() => document.activeElement?.id),
      'agent-withdraw-to',
      'the refused field takes the focus',
    )
    await form.getByLabel('Amount (USDC)').fill('5')
    const to = privateKeyToAccount(generatePrivateKey()).address
    await form.getByLabel('To address').fill(to)
    await form.getByRole('button', { name: 'Withdraw' }).click()
    await form.locator('.form-error').filter({ hasText: 'can withdraw 1.998 USDC now' }).waitFor()
    await form.getByLabel('Amount (USDC)').fill('0.5')
    await form.getByRole('button', { name: 'Withdraw' }).click()
    await page
      .locator('#agent-withdraw-progress')
      .filter({ hasText: 'Withdrawal of 0.5 USDC confirmed' })
      .waitFor({ timeout: 40_000 })
    const usdcOf = (a: string) =>
      deps.chain.readContract({
        address: deps.config.chain.usdc.address,
        abi: usdcAbi,
        functionName: 'balanceOf',
        args: [a as `0x${string}`],
      })
    t.equal(await usdcOf(to), 500_000n, 'the address received 0.5 USDC')
    await budget.filter({ hasText: 'Withdrawable now1.498 USDC' }).waitFor()
    await payments.locator('tr[data-kind="withdrawal"]').waitFor()
    await shot(page, '02-agent')

    // Transactions: names instead of addresses, the withdrawal, attempts only when asked for
    await page.getByRole('link', { name: 'Transactions', exact: true }).click()
    await page.getByRole('heading', { name: 'Transactions' }).waitFor()
    const rows = page.locator('main tbody tr')
    await rows.first().waitFor()
    t.equal(await page.locator('main tr[data-status="voided"]').count(), 0)
    t.equal(await page.locator('main tr[data-kind="withdrawal"]').count(), 1)
    t.ok(
      (await page.locator('main tbody td:nth-child(4) .party').allTextContents()).every((n) => n === 'research bot'),
      'the agent is named in every row it is in (payees on the platform are named by their seller)',
    )
    await page.getByLabel('Show failed and expired attempts').check()
    await page.getByRole('button', { name: 'Apply' }).click()
    await page.locator('main tr[data-status="voided"]').waitFor()
    await shot(page, '03-transactions')

    // a seller's endpoint with paid calls, for the seller page and the revenue chart
    t.equal((await api('POST', '/v1/sellers', { namespace: 'self-shop', display_name: 'Self Shop' })).status, 201)
    t.equal(
      (
        await api('POST', '/v1/sellers/self-shop/services', {
          name: 'quotes',
          pay_to: '0x' + '22'.repeat(20),
          category: 'Finance',
          tags: ['prices'],
        })
      ).status,
      201,
    )
    const ep = (
      await api('POST', '/v1/sellers/self-shop/services/quotes/endpoints', {
        slug: 'latest',
        price: '2500',
        handler: 'hash-generator',
      })
    ).body
    t.ok(ep.id, 'the endpoint is published')
    await sql`insert into payments (${columns}, endpoint_id)
    select gen_random_uuid(), 'r', 'GET', 2, 'eip155:84532', 'a', '0x' || lpad(to_hex(g), 40, '0'), ${'0x' + '22'.repeat(20)}, 2500, 0, 1, 'sold-' || g, 's', 'settled',
      now() - (g % 5) * interval '1 day', now() - (g % 5) * interval '1 day' + (g * interval '300 milliseconds'), null, ${ep.id}::uuid from generate_series(1, 12) g`.execute(
      deps.db,
    )

    // Insights: four charts drawn by uPlot, each with its numbers in a table
    await page.getByRole('link', { name: 'Insights' }).click()
    await page.getByRole('heading', { name: 'Insights', level: 1 }).waitFor()
    for (const id of ['chart-spend', 'chart-revenue', 'chart-calls', 'chart-delay'])
      await page.locator(`#${id} canvas`).waitFor()
    t.match(await page.locator('#insights-summary').textContent(), /earned 0\.03 USDC/, '12 × 0.0025 USDC')
    await page.locator('#chart-revenue summary').click()
    t.match(await page.locator('#chart-revenue .chart-data table').textContent(), /self-shop\/quotes\/latest/)
    t.equal(await page.locator('#chart-spend canvas').getAttribute('aria-hidden'), null)
    t.equal(
      await page.locator('#chart-spend .chart').getAttribute('aria-hidden'),
      'true',
      'screen readers get the table, not the canvas',
    )
    await shot(page, '04-insights')
    // a range with nothing in it
    await page.getByLabel('From (UTC)').fill('2020-01-01')
    await page.getByLabel('To (UTC)').fill('2020-01-31')
    await page.getByRole('button', { name: 'Show' }).click()
    await page.locator('#chart-spend').getByText('Nothing in this range.').waitFor()
    await page.getByLabel('From (UTC)').fill('2020-01-01')
    await page.getByLabel('To (UTC)').fill('2021-06-30')
    await page.getByRole('button', { name: 'Show' }).click()
    await page.locator('.form-error').filter({ hasText: 'at most 366 days' }).waitFor()

    // Marketplace: the seller's service is listed; filters; its endpoint with price and the CLI line to copy
    await page.getByRole('link', { name: 'Marketplace' }).click()
    await page.getByRole('heading', { name: 'Marketplace' }).waitFor()
    await page.getByLabel('Search').fill('quotes')
    await page.getByRole('button', { name: 'Filter' }).click()
    await page
      .locator('#market-count')
      .filter({ hasText: /^1 entry$/ })
      .waitFor()
    const entry = page.locator('.market-entry').first()
    await entry.getByRole('button', { name: 'Endpoints (1)' }).click()
    t.equal(await entry.getByRole('button', { name: 'Endpoints (1)' }).getAttribute('aria-expanded'), 'true')
    t.match(await entry.locator('tbody tr').textContent(), /0\.0025 USDC/)
    const command = await entry.locator('code.command').textContent()
    t.equal(command, `npx tollgate fetch -X GET '${proxyUrl}/self-shop/quotes/latest'`)
    await shot(page, '05-marketplace')
    await page.getByLabel('Category').selectOption('Finance')
    await page.getByLabel('Search').fill('')
    await page.getByRole('button', { name: 'Filter' }).click()
    await page
      .locator('#market-count')
      .filter({ hasText: /^1 entry$/ })
      .waitFor()

    // Seller: each endpoint's paid calls and revenue over 30 days
    await page.getByRole('link', { name: 'Seller', exact: true }).click()
    const row = page.locator('tr[data-endpoint="latest"]')
    await row.waitFor()
    t.equal(await row.locator('td.calls').textContent(), '12')
    t.equal(await row.locator('td.revenue').textContent(), '0.03 USDC')
    await shot(page, '06-seller')

    // the funding wallet offers USDC and ETH withdrawals
    await page.getByRole('link', { name: 'Funding wallet' }).click()
    await page.locator('#funding-withdraw').waitFor()
    t.same(await page.locator('#funding-withdraw-asset option').allTextContents(), ['USDC', 'ETH'])
    await shot(page, '07-funding')

    // keyboard: the nav and the withdrawal form are reachable with Tab, in order, each with a visible label
    await page.goto(`${server.base}/dashboard#/agents/${agent.address}`)
    await page.locator('#agent-withdraw-to').waitFor()
    await page.locator('#agent-withdraw-to').focus()
    await page.keyboard.press('Tab')
    t.equal(await page.evaluate(() => document.activeElement?.id), 'agent-withdraw-amount')
    await page.keyboard.press('Tab')
    t.equal(await page.evaluate(() => document.activeElement?.textContent), 'Withdraw')

    await until(
      'no pending withdrawal',
      async () =>
        (
          await deps.db
            .selectFrom('withdrawals')
            .select('id')
            .where('status', '=', 'pending')
            .where('user_id', '=', userId)
            .execute()
        ).length === 0,
    )
    t.same(pageErrors, [], 'no script errors')
    t.same(cspViolations, [], 'no CSP violations')
  },
)
