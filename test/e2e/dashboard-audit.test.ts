import { randomUUID } from 'node:crypto'
import t from 'tap'
import { dashboardServer, logIn, openBrowser } from './browser.js'

// What a user auditing the dashboard ran into, one test each (no chain: balances are 503).

t.test('a session that ends while the user works: the login screen says so, a first visit does not', async (t) => {
  const server = await dashboardServer(t)
  const { page, pageErrors, cspViolations, api } = await openBrowser(t)

  // a first visit: the login screen, no "session ended" message
  await page.goto(`${server.base}/dashboard#/agents`)
  await page.getByRole('heading', { name: 'Log in' }).waitFor()
  t.ok(await page.locator('#login-error').isHidden(), 'no message before anyone logged in')

  await logIn(page, server)
  await page.getByRole('link', { name: 'Agents', exact: true }).click()
  await page.getByRole('heading', { name: 'Agents' }).waitFor()
  t.equal((await api('DELETE', '/v1/session')).status, 204, 'the session ends elsewhere (another tab, expiry)')
  await page.getByLabel('New agent').fill('lost-bot')
  await page.getByRole('button', { name: 'Create agent' }).click()
  await page.getByRole('heading', { name: 'Log in' }).waitFor()
  await page.locator('#login-error').filter({ hasText: 'Your session has ended' }).waitFor()
  t.match(await page.locator('#login-error').textContent(), /log in again/i, 'it says what to do')
  t.equal((await api('GET', '/v1/agents')).status, 401, 'nothing was created')

  // logging in clears it and returns to the screen the 401 interrupted
  await page.getByLabel('Email').fill(server.email)
  await page.getByLabel('Password').fill(server.password)
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.getByRole('heading', { name: 'Agents' }).waitFor()
  // an explicit log out is not a session that "ended": no message
  await page.getByRole('button', { name: 'Log out' }).click()
  await page.getByRole('heading', { name: 'Log in' }).waitFor()
  t.ok(await page.locator('#login-error').isHidden(), 'no "session ended" message after Log out')
  t.same(pageErrors, [], 'no script errors')
  t.same(cspViolations, [], 'no CSP violations')
})

t.test('an agent\'s top-up history pages through every top-up (it said "the 10 newest of 100" for 120)', async (t) => {
  const server = await dashboardServer(t)
  const { deps, base } = server
  const { page, pageErrors, cspViolations, api } = await openBrowser(t)
  await logIn(page, server)
  const address: string = (await api('POST', '/v1/agents', { name: 'busy-bot' })).body.address
  const funding: string = (await api('GET', '/v1/funding-wallet')).body.address
  const agentId = (
    await deps.db.selectFrom('agents').select('id').where('address', '=', address).executeTakeFirstOrThrow()
  ).id
  // 120 failed top-ups, need 1 (oldest) to 120 (newest): more than the API's default page of 100
  await deps.db
    .insertInto('topups')
    .values(
      Array.from({ length: 120 }, (_, i) => ({
        agent_id: agentId,
        need_seq: i + 1,
        status: 'failed',
        agent_address: address,
        funding_address: funding,
        amount: '1000',
        threshold: '2500000',
        balance_seen: '0',
        block_seen: 1,
        attempts: 1,
        error: `need ${i + 1} failed`,
      })),
    )
    .execute()

  await page.goto(`${base}/dashboard#/agents/${address}`)
  const history = page.locator('#top-up-history')
  const needs = async () =>
    (await history.locator('tbody tr').allTextContents()).map((r) => Number(/need (\d+) failed/.exec(r)?.[1]))
  await history.locator('tr', { hasText: 'need 120 failed' }).waitFor()
  t.same(await needs(), [120, 119, 118, 117, 116, 115, 114, 113, 112, 111], 'the 10 newest first')
  t.match(await history.locator('tbody tr').first().textContent(), /0\.001 USDC/, '1000 atomic units are 0.001 USDC')
  t.notMatch(await history.textContent(), /of 100\b/, 'no count the API did not give')
  t.equal(await history.getByRole('button', { name: 'Newest' }).count(), 0, 'no Newest button on the newest page')
  // Older follows next_cursor down to the first top-up
  let pages = 1
  while ((await history.getByRole('button', { name: 'Older' }).count()) > 0 && pages < 20) {
    const last = (await needs()).at(-1)!
    await history.getByRole('button', { name: 'Older' }).click()
    await history
      .locator('tbody tr')
      .first()
      .filter({ hasText: `need ${last - 1} failed` })
      .waitFor()
    pages++
  }
  t.equal(pages, 12, '12 pages of 10')
  t.same(await needs(), [10, 9, 8, 7, 6, 5, 4, 3, 2, 1], 'the last page ends with the first top-up')
  await history.getByRole('button', { name: 'Newest' }).click()
  await history.locator('tbody tr').first().filter({ hasText: 'need 120 failed' }).waitFor()
  t.same(pageErrors, [], 'no script errors')
  t.same(cspViolations, [], 'no CSP violations')
})

t.test(
  'clicking a form button keeps the keyboard focus there (it fell to <body> while the button was disabled)',
  async (t) => {
    const server = await dashboardServer(t)
    const { page, pageErrors, cspViolations, api } = await openBrowser(t)
    await logIn(page, server)
    const focused = () =>
      page.evaluate(() =>
        document.activeElement === document.body
          ? 'body'
          : (document.activeElement?.textContent ?? document.activeElement?.tagName),
      )
    t.equal((await api('POST', '/v1/sellers', { namespace: 'taken-ns' })).status, 201)

    // an API error that names no field (409: the namespace is taken): the message, and focus stays on the button
    await page.getByRole('link', { name: 'Seller', exact: true }).click()
    const claim = page.locator('#claim')
    await claim.getByLabel('New namespace').fill('taken-ns')
    await claim.getByRole('button', { name: 'Claim namespace' }).click()
    await claim.locator('.form-error').filter({ hasText: 'is taken' }).waitFor()
    t.equal(await focused(), 'Claim namespace', 'after the error, focus is on the button clicked')

    // a success that keeps the form: focus back on its button, ready for the next one
    await page.getByRole('link', { name: 'Agents', exact: true }).click()
    await page.getByLabel('New agent').fill('focus-bot')
    await page.getByRole('button', { name: 'Create agent' }).click()
    await page.locator('#notice.ok').filter({ hasText: 'Agent "focus-bot" created' }).waitFor()
    t.equal(await focused(), 'Create agent', 'after the success, focus is on the button clicked')
    t.same(pageErrors, [], 'no script errors')
    t.same(cspViolations, [], 'no CSP violations')
  },
)

/** A seller with four services of three upstream endpoints each, on a 1280×720 screen: the last service is far below the top. */
async function tallShop(t: Parameters<typeof dashboardServer>[0]) {
  const server = await dashboardServer(t, { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true' })
  const browser = await openBrowser(t)
  const { page, api } = browser
  await page.setViewportSize({ width: 1280, height: 720 })
  await logIn(page, server)
  const created = [(await api('POST', '/v1/sellers', { namespace: 'tall-shop' })).status]
  for (const svc of ['svc-a', 'svc-b', 'svc-c', 'svc-d']) {
    created.push(
      (await api('POST', '/v1/sellers/tall-shop/services', { name: svc, pay_to: '0x' + '22'.repeat(20) })).status,
    )
    // port 9 (discard) refuses the connection: Test fails at once
    for (const slug of ['one', 'two', 'three'])
      created.push(
        (
          await api('POST', `/v1/sellers/tall-shop/services/${svc}/endpoints`, {
            slug,
            methods: ['GET'],
            price: '1000',
            upstream_url: 'http://127.0.0.1:9/x',
          })
        ).status,
      )
  }
  await page.getByRole('link', { name: 'Seller', exact: true }).click()
  await page.locator('#service-tall-shop-svc-d').waitFor()
  const inView = (selector: string) =>
    page.evaluate((s) => {
      const r = document.querySelector(s)!.getBoundingClientRect()
      return r.height > 0 && r.top >= 0 && r.bottom <= innerHeight
    }, selector)
  return { ...browser, created, inView }
}

t.test(
  'publishing an endpoint far down the Seller page brings its signing secret (shown once) on screen, Copy focused',
  async (t) => {
    const { page, pageErrors, cspViolations, api, created, inView } = await tallShop(t)
    t.same(created, Array(17).fill(201), 'the namespace, 4 services and 12 endpoints are created')
    await page.locator('#service-tall-shop-svc-d').getByRole('button', { name: 'Publish an endpoint' }).click()
    const form = page.locator('#publish-tall-shop-svc-d')
    await form.getByLabel('Slug').fill('four')
    await form.getByLabel('Price per call (USDC)').fill('0.001')
    await form.getByRole('textbox', { name: 'Upstream URL' }).fill('http://127.0.0.1:9/four')
    t.ok(await page.evaluate(() => scrollY > 720), 'the form is more than a screen down')
    await form.getByRole('button', { name: 'Publish endpoint' }).click()
    await page.locator('#new-secret').waitFor()
    t.ok(await inView('#new-secret'), 'the signing secret, shown this once, is on the screen')
    t.equal(await page.evaluate(() => document.activeElement?.textContent), 'Copy', 'and its Copy button has the focus')
    t.equal(
      (await api('GET', '/v1/sellers/tall-shop/services/svc-d/endpoints/four')).body.price,
      '1000',
      '0.001 USDC went out as 1000',
    )
    t.same(pageErrors, [], 'no script errors')
    t.same(cspViolations, [], 'no CSP violations')
  },
)

t.test(
  "a row action far down the Seller page: its notice is on screen (an upstream's failed Test said nothing visible)",
  async (t) => {
    const { page, pageErrors, cspViolations, created, inView } = await tallShop(t)
    t.same(created, Array(17).fill(201), 'the namespace, 4 services and 12 endpoints are created')
    const row = page.locator('#service-tall-shop-svc-d tr[data-endpoint="three"]')
    await row.scrollIntoViewIfNeeded()
    t.ok(await page.evaluate(() => scrollY > 720), 'the row is more than a screen down')
    await row.getByRole('button', { name: 'Test' }).click()
    await page.locator('#notice.error').filter({ hasText: 'Upstream of three failed the test' }).waitFor()
    t.ok(await inView('#notice'), 'the notice is on the screen')
    t.same(pageErrors, [], 'no script errors')
    t.same(cspViolations, [], 'no CSP violations')
  },
)

t.test('Back after logging in does not show the login form to a logged-in user', async (t) => {
  const server = await dashboardServer(t)
  const { page, pageErrors, cspViolations, api } = await openBrowser(t)
  await logIn(page, server)
  await page.getByRole('link', { name: 'Agents', exact: true }).click()
  await page.getByRole('heading', { name: 'Agents' }).waitFor()
  await page.goBack()
  await page.getByRole('heading', { name: 'Overview', exact: true }).waitFor()
  // the login screen was a redirect, not a page the user chose: Back leaves the dashboard instead
  await page.goBack()
  await page.waitForTimeout(300)
  t.notMatch(page.url(), /#\/login$/, 'Back does not land on the login screen')
  t.equal(await page.getByRole('heading', { name: 'Log in' }).count(), 0, 'no login form while logged in')
  // forward again: the dashboard, still logged in
  await page.goForward()
  await page.getByRole('heading', { name: 'Overview', exact: true }).waitFor()
  t.equal((await api('GET', '/v1/session')).status, 200, 'the session is still on')
  t.same(pageErrors, [], 'no script errors')
  t.same(cspViolations, [], 'no CSP violations')
})

t.test('Transactions: Older continues the list on screen, not a filter changed but not applied', async (t) => {
  const server = await dashboardServer(t)
  const { deps, base } = server
  const { page, pageErrors, cspViolations, api } = await openBrowser(t)
  await logIn(page, server)
  const address: string = (await api('POST', '/v1/agents', { name: 'payer-bot' })).body.address
  // 25 payments by the user's agent (role buyer), one a minute: p00 (oldest) to p24
  await deps.db
    .insertInto('payments')
    .values(
      Array.from({ length: 25 }, (_, i) => {
        const n = String(i).padStart(2, '0')
        return {
          id: randomUUID(),
          resource: `https://proxy/audit/p${n}`,
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
        }
      }),
    )
    .execute()
  await page.goto(`${base}/dashboard#/transactions`)
  const rows = page.locator('tbody tr')
  await rows.first().filter({ hasText: '/p24' }).waitFor()
  t.match(await rows.first().textContent(), /0\.001 USDC/, '1000 atomic units are 0.001 USDC')
  // the user picks another role but does not press Apply, then asks for older rows of the list on screen
  await page.getByLabel('Role').selectOption('seller')
  await page.getByRole('button', { name: 'Older' }).click()
  await page.getByRole('button', { name: 'Newest' }).waitFor()
  t.same(
    await rows.allTextContents().then((r) => r.map((x) => x.match(/\/p\d\d/)?.[0])),
    ['/p04', '/p03', '/p02', '/p01', '/p00'],
    'the 5 oldest of the list on screen',
  )
  t.match(
    await page.getByRole('link', { name: 'transactions.csv' }).getAttribute('href'),
    /^\/v1\/transactions\?format=csv$/,
    'the export links still name the list on screen',
  )
  // Apply: the chosen role from the first page (none of these are the seller's)
  await page.getByRole('button', { name: 'Apply' }).click()
  // a filtered list that is empty says nothing matches, with what to change
  await page.getByText('No transaction matches this search.').waitFor()
  t.match(
    await page.getByRole('link', { name: 'transactions.csv' }).getAttribute('href'),
    /role=seller/,
    'the export links follow the applied role',
  )
  t.same(pageErrors, [], 'no script errors')
  t.same(cspViolations, [], 'no CSP violations')
})

t.test('Seller page after the session ended: the login screen, and no unhandled script error', async (t) => {
  const server = await dashboardServer(t)
  const { page, pageErrors, cspViolations, api } = await openBrowser(t)
  await logIn(page, server)
  t.equal((await api('DELETE', '/v1/session')).status, 204)
  // no namespace yet: nothing waits for the page's list of agents, whose 401 went unhandled
  await page.getByRole('link', { name: 'Seller', exact: true }).click()
  await page.locator('#login-error').filter({ hasText: 'Your session has ended' }).waitFor()
  await page.waitForTimeout(300)
  t.same(pageErrors, [], 'no script errors')
  t.same(cspViolations, [], 'no CSP violations')
})
