import { mkdirSync } from 'node:fs'
import type { Page } from 'playwright-core'
import t from 'tap'
import { dashboardServer, logIn, openBrowser } from './browser.js'
import { seedEndpoint, seedPayment, userIdOf } from './seed-payments.js'

const SHOTS = '.tap/artifacts/dashboard'
mkdirSync(SHOTS, { recursive: true })
const shot = (page: Page, name: string) => page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true })

t.test(
  'an empty account lands on the overview: the three steps with their CLI commands, the sandbox banner',
  async (t) => {
    const server = await dashboardServer(t)
    const { page, pageErrors, cspViolations } = await openBrowser(t)
    await page.goto(`${server.base}/dashboard`)
    await page.getByRole('heading', { name: 'Log in' }).waitFor()
    const banner = page.locator('#sandbox-banner')
    await banner.waitFor()
    t.match(
      await banner.textContent(),
      /Sandbox.*not real money|nothing here is real money/i,
      'the login screen says sandbox',
    )

    await logIn(page, server)
    t.match(page.url(), /#\/overview$/, 'the overview is the landing page')
    t.equal(await page.locator('#nav a[href="#/overview"]').getAttribute('aria-current'), 'page')
    const steps = page.locator('#getting-started')
    await steps.waitFor()
    const text = (await steps.textContent()) ?? ''
    t.match(text, `npx tollgate login --api-url ${server.base} --email ${server.email}`)
    t.match(text, 'npx tollgate agents create research-bot --daily 5')
    t.match(text, 'npx tollgate fund research-bot 5')
    t.match(text, 'npx tollgate keys create --agent research-bot --save')
    t.match(
      text,
      /npx tollgate fetch -X GET '.+'|npx tollgate search/,
      'the first call, with a real endpoint when one is listed',
    )
    t.equal(await steps.getByRole('button', { name: 'Copy' }).count(), 5, 'each command has its Copy button')
    await page.locator('#overview-recent').getByText('No payments yet.').waitFor()
    // the alerts list (webhooks' alerts), empty on a new account, saying what will show there
    await page.locator('#overview-alerts').getByText('No alerts').waitFor()
    t.equal(await page.locator('#stat-spent-today .stat-value').textContent(), '0 USDC')
    await shot(page, 'overview-empty')

    // every page of a sandbox deployment carries the banner
    for (const link of ['Agents', 'Transactions', 'Insights', 'Seller']) {
      await page.getByRole('link', { name: link, exact: true }).click()
      await page
        .locator('main h1')
        .filter({ hasText: link === 'Seller' ? /Sell/ : link })
        .waitFor()
      t.ok(await banner.isVisible(), `${link}: the sandbox banner`)
    }
    // the empty lists say what to do next, not only that they are empty
    await page.getByRole('link', { name: 'Agents', exact: true }).click()
    await page.getByText('No agents yet.').waitFor()
    t.match(await page.locator('.empty-state').textContent(), /Create one above/)
    t.same(pageErrors, [], 'no script errors')
    t.same(cspViolations, [], 'no CSP violations')
  },
)

t.test('a deployment that is not a sandbox shows no banner', async (t) => {
  const server = await dashboardServer(t)
  const { page } = await openBrowser(t)
  // the web app of this test is a sandbox; what a production API answers is given to the page
  await page.route('**/v1/signup', (route) =>
    route.fulfill({
      json: { object: 'signup', open: false, min_password_length: 10, deployment: 'production' },
    }),
  )
  await page.goto(`${server.base}/dashboard`)
  await page.getByRole('heading', { name: 'Log in' }).waitFor()
  await page.waitForLoadState('networkidle')
  t.equal(await page.locator('#sandbox-banner').isVisible(), false)
})

t.test('the overview with data: today and this month, the chart, caps nearly reached, recent payments', async (t) => {
  const server = await dashboardServer(t)
  const { deps } = server
  const { page, pageErrors, cspViolations, api } = await openBrowser(t)
  await logIn(page, server)
  const userId = await userIdOf(deps, server.email)
  const bot = (await api('POST', '/v1/agents', { name: 'research-bot' })).body
  const idle = (await api('POST', '/v1/agents', { name: 'idle-bot' })).body
  t.equal((await api('PUT', `/v1/agents/${bot.address}/spend-caps`, { daily: '10000' })).status, 200)
  t.equal((await api('PUT', `/v1/agents/${idle.address}/spend-caps`, { daily: '10000' })).status, 200)
  const botId = (
    await deps.db.selectFrom('agents').select('id').where('address', '=', bot.address).executeTakeFirstOrThrow()
  ).id
  const other = await seedEndpoint(deps, 'acme-data', 'Acme Data', null)
  const mine = await seedEndpoint(deps, 'my-shop', 'My Shop', userId)
  // three paid calls by research-bot today: 0.009 of its 0.01 USDC daily cap
  for (let i = 0; i < 3; i++)
    await seedPayment(deps, {
      payer: bot.address,
      payTo: other.payTo,
      endpointId: other.endpointId,
      resource: other.url,
      value: '3000',
      agentId: botId,
      txHash: `0x${String(i).repeat(64)}`,
    })
  // two calls to my endpoint today (0.01 USDC), and one earlier this month or last
  for (let i = 0; i < 2; i++)
    await seedPayment(deps, {
      payer: `0x${'ab'.repeat(20)}`,
      payTo: mine.payTo,
      endpointId: mine.endpointId,
      resource: mine.url,
      value: '5000',
    })

  await page.reload()
  await page.getByRole('heading', { name: 'Overview', exact: true }).waitFor()
  t.equal(await page.locator('#getting-started').count(), 0, 'no getting-started steps once there are agents')
  t.equal(await page.locator('#stat-spent-today .stat-value').textContent(), '0.009 USDC')
  t.equal(await page.locator('#stat-spent-month .stat-value').textContent(), '0.009 USDC')
  t.equal(await page.locator('#stat-earned-today .stat-value').textContent(), '0.01 USDC')
  t.equal(await page.locator('#stat-earned-month .stat-value').textContent(), '0.01 USDC')
  // the chart is drawn (uPlot canvas) with its numbers in the Data table
  await page.locator('#overview-chart canvas').first().waitFor()
  const lastRow = page.locator('#overview-chart tbody tr').last()
  t.match(await lastRow.textContent(), /0\.009 USDC.*0\.01 USDC/, "the chart's last day has today's spend and revenue")
  // research-bot is at 90 % of its daily cap; idle-bot (same cap, nothing spent) is not listed
  const caps = page.locator('#overview-caps')
  await caps.locator(`tr[data-agent="${bot.address}"]`).waitFor()
  t.match(await caps.textContent(), /research-bot.*0\.009 of 0\.01 USDC \(90 %\)/)
  t.notMatch(await caps.textContent(), /idle-bot/)
  // the funding wallet's balance (no chain in this test: unavailable, with the reason)
  t.match(await page.locator('#overview-funding').textContent(), /Balance unavailable right now/)
  // recent payments: the five, sellers by name, each with its detail page
  const recent = page.locator('#overview-recent tbody tr')
  t.equal(await recent.count(), 5)
  t.match(await page.locator('#overview-recent').textContent(), /Acme Data/)
  t.match(await page.locator('#overview-recent').textContent(), /My Shop/)
  t.equal(
    await page
      .locator('#overview-recent')
      .getByRole('link', { name: /Details/ })
      .count(),
    5,
  )
  await page.setViewportSize({ width: 1280, height: 900 })
  await shot(page, 'overview')
  await page
    .locator('#overview-recent')
    .getByRole('link', { name: /Details/ })
    .first()
    .click()
  await page.getByRole('heading', { name: /Payment of/ }).waitFor()
  t.match(page.url(), /#\/payments\/[0-9a-f-]{36}$/)
  t.same(pageErrors, [], 'no script errors')
  t.same(cspViolations, [], 'no CSP violations')
})
