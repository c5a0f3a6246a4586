import { mkdirSync } from 'node:fs'
import type { Page } from 'playwright-core'
import t from 'tap'
import { dashboardServer, logIn, openBrowser } from './browser.js'
import { seedEndpoint, seedPayment, userIdOf } from './seed-payments.js'

const SHOTS = '.tap/artifacts/dashboard'
mkdirSync(SHOTS, { recursive: true })
const shot = (page: Page, name: string) => page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true })

t.test('payment detail from every list, by either id; transactions searched; top-ups listed', async (t) => {
  const server = await dashboardServer(t)
  const { deps } = server
  const { page, pageErrors, cspViolations, api } = await openBrowser(t)
  await page.setViewportSize({ width: 1280, height: 900 })
  await logIn(page, server)
  const userId = await userIdOf(deps, server.email)
  const bot = (await api('POST', '/v1/agents', { name: 'research-bot' })).body
  const scout = (await api('POST', '/v1/agents', { name: 'scout-bot' })).body
  const agentId = async (address: string) =>
    (await deps.db.selectFrom('agents').select('id').where('address', '=', address).executeTakeFirstOrThrow()).id
  const acme = await seedEndpoint(deps, 'acme-data', 'Acme Data', null)
  const globex = await seedEndpoint(deps, 'globex', 'Globex Weather', null)
  const mine = await seedEndpoint(deps, 'my-shop', 'My Shop', userId)
  const tx = `0x${'ab'.repeat(32)}`
  const settled = await seedPayment(deps, {
    payer: bot.address,
    payTo: acme.payTo,
    endpointId: acme.endpointId,
    resource: acme.url,
    value: '3000',
    agentId: await agentId(bot.address),
    txHash: tx,
    createdAt: new Date(Date.now() - 60_000),
  })
  const voided = await seedPayment(deps, {
    payer: scout.address,
    payTo: globex.payTo,
    endpointId: globex.endpointId,
    resource: globex.url,
    value: '2000',
    status: 'voided',
    failureReason: 'upstream_status_502',
    agentId: await agentId(scout.address),
  })
  const sold = await seedPayment(deps, {
    payer: `0x${'cd'.repeat(20)}`,
    payTo: mine.payTo,
    endpointId: mine.endpointId,
    resource: mine.url,
    value: '5000',
    status: 'served',
  })
  // someone else's payment is not this user's to see
  const foreign = await seedPayment(deps, {
    payer: `0x${'ef'.repeat(20)}`,
    payTo: acme.payTo,
    endpointId: acme.endpointId,
    resource: acme.url,
    value: '1000',
  })
  t.equal((await api('GET', `/v1/payments/${foreign.id}`)).status, 404, "another user's payment is 404")
  t.equal((await api('GET', '/v1/payments/not-an-id')).status, 404)
  // a top-up of research-bot from the funding wallet
  await deps.db
    .insertInto('topups')
    .values({
      agent_id: await agentId(bot.address),
      need_seq: 1,
      status: 'confirmed',
      agent_address: bot.address,
      funding_address: `0x${'99'.repeat(20)}`,
      amount: '5000000',
      threshold: '1000000',
      balance_seen: '0',
      block_seen: 1,
      tx_hash: `0x${'77'.repeat(32)}`,
    })
    .execute()

  // Transactions: sellers by name, every payment with its Details link, the top-up listed
  await page.getByRole('link', { name: 'Transactions', exact: true }).click()
  await page.getByRole('heading', { name: 'Transactions', level: 1 }).waitFor()
  const rows = page.locator('#tx-list tbody tr')
  await rows.first().waitFor()
  t.equal(await rows.count(), 2, 'the voided attempt is left out until asked for')
  t.match(await rows.allTextContents().then((r) => r.join('\n')), /Acme Data[\s\S]*|My Shop/)
  t.match(await page.locator('#main').textContent(), /My Shop/)
  t.match(await page.locator('#main').textContent(), /Acme Data/)
  const topUps = page.locator('#tx-top-ups')
  await topUps.locator('tr[data-kind="top_up"]').waitFor()
  t.match(await topUps.textContent(), /5 USDC.*funding wallet.*research-bot/)

  // search: by seller (any case, part of the name), by endpoint, by agent, by status
  const search = async (fill: Record<string, string>, expected: number) => {
    await page.getByLabel('Seller').fill(fill.seller ?? '')
    await page.getByLabel('Endpoint').fill(fill.endpoint ?? '')
    await page.getByLabel('Agent').selectOption(fill.agent ?? '')
    await page.getByLabel('Status').selectOption(fill.status ?? '')
    await page.getByRole('button', { name: 'Apply' }).click()
    await page.locator('#tx-search button[type="submit"]:not([aria-busy])').waitFor()
    const n = await page.locator('#tx-list tbody tr').count()
    return { n, ok: n === expected }
  }
  let r = await search({ seller: 'acme' }, 1)
  t.ok(r.ok, `seller "acme": 1 row (got ${r.n})`)
  t.match(await rows.first().textContent(), /Acme Data/)
  r = await search({ seller: 'WEATHER', status: 'voided' }, 1)
  t.ok(r.ok, `seller "WEATHER" (display name, any case), voided: 1 row (got ${r.n})`)
  r = await search({ endpoint: '/my-shop/' }, 1)
  t.ok(r.ok, `endpoint "/my-shop/": 1 row (got ${r.n})`)
  r = await search({ agent: scout.address, status: 'voided' }, 1)
  t.ok(r.ok, `agent scout-bot, voided: 1 row (got ${r.n})`)
  r = await search({ seller: 'nobody-sells-this' }, 0)
  t.ok(r.ok)
  await page.getByText('No transaction matches this search.').waitFor()
  r = await search({}, 2)
  t.ok(r.ok, 'cleared: the two again')
  await shot(page, 'transactions-search')

  // Details of the settled payment: its states, its transaction, the endpoint and seller by name, the answer
  await page
    .locator('#tx-list tbody tr')
    .filter({ hasText: 'Acme Data' })
    .getByRole('link', { name: /Details/ })
    .click()
  await page.getByRole('heading', { name: 'Payment of 0.003 USDC' }).waitFor()
  t.match(page.url(), new RegExp(`#/payments/${settled.id}$`))
  const facts = (await page.locator('#payment-facts').textContent()) ?? ''
  t.match(facts, '/acme-data/api/quote')
  t.match(facts, 'Acme Data (acme-data)')
  t.match(facts, 'Acme Data API')
  t.match(facts, 'research-bot')
  t.match(facts, tx)
  t.match(facts, settled.agentPaymentId!)
  t.match(await page.locator('#payment-answer').textContent(), /Served: the endpoint answered with success/)
  const events = page.locator('#payment-events li')
  t.same(
    await events.evaluateAll((els) => els.map((e) => e.getAttribute('data-status'))),
    ['verified', 'served', 'settling', 'settled', 'accepted'],
    'every state, in order, and what the agent reported',
  )
  t.match(await events.nth(1).textContent(), /verified → served/)
  await shot(page, 'payment-detail')

  // the agent-payment id names the same payment
  await page.goto(`${server.base}/dashboard#/payments/${settled.agentPaymentId}`)
  await page.locator('#payment-facts').filter({ hasText: settled.id }).waitFor()
  // a voided call: the upstream's status, nothing charged
  await page.goto(`${server.base}/dashboard#/payments/${voided.id}`)
  await page
    .locator('#payment-answer')
    .filter({ hasText: 'the endpoint answered HTTP 502; nothing was charged' })
    .waitFor()
  t.match(await page.locator('#payment-events').textContent(), /verified → voided \(upstream_status_502\)/)
  // a payment to my endpoint: received, the seller is mine
  await page.goto(`${server.base}/dashboard#/payments/${sold.id}`)
  await page.getByText('Received by one of your endpoints.').waitFor()
  t.match(await page.locator('#payment-facts').textContent(), /My Shop \(my-shop\)/)

  // from the agent page's payments, in its sections with the spend chart
  await page.goto(`${server.base}/dashboard#/agents/${bot.address}`)
  await page.getByRole('heading', { name: 'research-bot', level: 1 }).waitFor()
  for (const section of ['Overview', 'Caps & allowlist', 'Keys', 'Payments'])
    await page.getByRole('heading', { name: section, level: 2, exact: true }).waitFor()
  await page.locator('#agent-spend-chart canvas').first().waitFor()
  t.match(await page.locator('#agent-spend-chart tbody tr').last().textContent(), /0\.003 USDC/)
  await shot(page, 'agent')
  await page.getByRole('button', { name: 'Keys', exact: true }).click()
  await page
    .locator('#agent-payments')
    .getByRole('link', { name: /Details/ })
    .click()
  await page.getByRole('heading', { name: 'Payment of 0.003 USDC' }).waitFor()

  // the Seller page's URL column: whole path segments on a line, not a few characters
  await page.getByRole('link', { name: 'Seller', exact: true }).click()
  const urlCell = page.locator('tr[data-endpoint="quote"] td.url')
  await urlCell.waitFor()
  const box = (await urlCell.boundingBox())!
  t.ok(box.width >= 200, `the URL column is wide enough to read (${box.width}px)`)
  const lineHeight = await urlCell.locator('code').evaluate((c) => parseFloat(getComputedStyle(c).lineHeight))
  const lines = Math.round((await urlCell.locator('code').boundingBox())!.height / lineHeight)
  t.ok(lines <= 2, `the URL takes at most 2 lines (${lines})`)
  await page.locator('#main').screenshot({ path: `${SHOTS}/seller.png` })

  t.same(pageErrors, [], 'no script errors')
  t.same(cspViolations, [], 'no CSP violations')
})

t.test('Insights: the last day labelled, two agents with equal spend both drawn', async (t) => {
  const server = await dashboardServer(t)
  const { deps } = server
  const { page, pageErrors, api } = await openBrowser(t)
  await page.setViewportSize({ width: 1280, height: 900 })
  await logIn(page, server)
  const shop = await seedEndpoint(deps, 'acme-data', 'Acme Data', null)
  for (const name of ['twin-a', 'twin-b']) {
    const a = (await api('POST', '/v1/agents', { name })).body
    await seedPayment(deps, {
      payer: a.address,
      payTo: shop.payTo,
      endpointId: shop.endpointId,
      resource: shop.url,
      value: '4000',
    })
  }
  await page.getByRole('link', { name: 'Insights', exact: true }).click()
  await page.locator('#chart-spend canvas').first().waitFor()
  // the x axis's last label is the last day drawn (today, UTC)
  const today = new Date().toISOString().slice(5, 10)
  const labels = ((await page.locator('#chart-spend').getAttribute('data-x-labels')) ?? '').split(' ')
  t.equal(labels.at(-1), today, `the last x label is today (${labels.join(' ')})`)
  // equal series are told apart: widths and dash patterns differ
  const styles = await page.evaluate(() => {
    const legend = [...document.querySelectorAll('#chart-spend .u-legend .u-series')].slice(1)
    return legend.map((s) => (s.querySelector('.u-marker') as HTMLElement | null)?.style.borderStyle ?? '')
  })
  t.equal(styles.length, 2, 'both agents are in the legend')
  t.not(styles[0], styles[1], 'their lines look different (solid vs dashed)')
  await page.locator('#chart-spend').screenshot({ path: `${SHOTS}/insights-twins.png` })
  t.same(pageErrors, [])
})
