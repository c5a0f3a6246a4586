import { createHash, createHmac, randomBytes } from 'node:crypto'
import Fastify from 'fastify'
import t from 'tap'
import { decodeRequired } from '../helpers/pay.js'
import { startTestPlatform } from '../helpers/platform.js'
import { logIn, nextDialog, openBrowser, serveDashboard } from './browser.js'

/** Polls the proxy (it reloads its endpoint table from the registry channel) until an answer to `path` passes `done`. */
async function proxyUntil(proxyUrl: string, path: string, done: (res: Response) => boolean, init: RequestInit = {}) {
  let res: Response | undefined
  for (let i = 0; i < 50; i++) {
    res = await fetch(`${proxyUrl}${path}`, init)
    if (done(res)) break
    await new Promise((r) => setTimeout(r, 100))
  }
  return res!
}
const proxyAnswers = (proxyUrl: string, path: string, status: number, init: RequestInit = {}) =>
  proxyUntil(proxyUrl, path, (r) => r.status === status, init)
/** The price a 402 asks (atomic units), from its v2 PAYMENT-REQUIRED header. */
const priceOf = (res: Response) =>
  res.status === 402 ? decodeRequired(res.headers.get('payment-required')).accepts[0].amount : undefined

/** Checks an X-Tollgate-Signature (t=<unix>,v1=<hex>) of a bodiless request against `secret`. */
function signedWith(secret: string, header: unknown, method: string, pathAndQuery: string) {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(header))
  if (!m) return false
  const empty = createHash('sha256').update('').digest('hex')
  return createHmac('sha256', secret).update(`${m[1]}.${method}.${pathAndQuery}.${empty}`).digest('hex') === m[2]
}

t.test(
  'in a browser: publish, change, disable and unpublish endpoints; the proxy follows; agent keys and allowlist pay them; the funding wallet on a chain',
  async (t) => {
    // the seller's origin: records what the proxy (or the test action) forwards
    const origin = Fastify()
    const seen: Array<{ method: string; url: string; headers: Record<string, unknown> }> = []
    origin.all('/api/*', async (req) => {
      seen.push({ method: req.method, url: req.url, headers: req.headers })
      return { ok: true }
    })
    await origin.listen({ host: '127.0.0.1', port: 0 })
    t.teardown(() => origin.close())
    const upstreamUrl = `http://127.0.0.1:${(origin.server.address() as { port: number }).port}/api/echo`

    const platform = await startTestPlatform(t, {
      env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true', TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex') },
    })
    const { proxyUrl } = platform
    const receiver = platform.devnet.accounts.receiver.address
    const server = await serveDashboard(t, platform.deps)
    const { page, pageErrors, cspViolations, api } = await openBrowser(t)
    await logIn(page, server)

    // an agent the namespace can be listed as
    const bot = (await api('POST', '/v1/agents', { name: 'shop bot' })).body

    // claim a namespace: the API's message next to the form, then the namespace
    await page.getByRole('link', { name: 'Seller', exact: true }).click()
    await page.getByText('You have not claimed a seller namespace yet.').waitFor()
    const claim = page.locator('#claim')
    await claim.getByLabel('New namespace').fill('AB')
    await claim.getByRole('button', { name: 'Claim namespace' }).click()
    await claim
      .locator('.form-error')
      .filter({ hasText: 'invalid value for namespace: expected 3-40 characters' })
      .waitFor()
    t.equal(await claim.getByLabel('New namespace').getAttribute('aria-invalid'), 'true')
    await claim.getByLabel('New namespace').fill('dash-shop')
    await claim.getByLabel('Display name').fill('Dash Shop')
    await claim.getByRole('button', { name: 'Claim namespace' }).click()
    await page.getByRole('heading', { name: 'Dash Shop (namespace dash-shop)' }).waitFor()
    t.match((await api('GET', '/v1/sellers')).body.data, [
      { namespace: 'dash-shop', display_name: 'Dash Shop', agent_address: null },
    ])

    // list the namespace as the user's agent in the marketplace, then unlink it
    const link = page.locator('#agent-link-dash-shop')
    await link.getByLabel('Platform agent').selectOption(bot.address)
    await link.getByRole('button', { name: 'Save agent' }).click()
    await page.getByText(`Namespace dash-shop is listed as your agent ${bot.address}.`).waitFor()
    t.equal((await api('GET', '/v1/sellers/dash-shop')).body.agent_address, bot.address)
    t.equal(
      await page.locator('#agent-link-dash-shop').getByLabel('Platform agent').inputValue(),
      bot.address,
      'the form shows the link after the reload',
    )
    await page.locator('#agent-link-dash-shop').getByLabel('Platform agent').selectOption('')
    await page.locator('#agent-link-dash-shop').getByRole('button', { name: 'Save agent' }).click()
    await page.getByText('Namespace dash-shop is no longer linked to an agent.').waitFor()
    t.equal((await api('GET', '/v1/sellers/dash-shop')).body.agent_address, null)

    // a service with its receiver
    await page.getByRole('button', { name: 'Add a service' }).click()
    const addService = page.locator('#add-service-dash-shop')
    await addService.getByLabel('Name', { exact: true }).fill('tools')
    await addService.getByLabel('Receiver (pay_to)').fill('0x12')
    await addService.getByRole('button', { name: 'Create service' }).click()
    await addService.locator('.form-error').filter({ hasText: 'invalid value for pay_to' }).waitFor()
    t.equal(await addService.getByLabel('Receiver (pay_to)').getAttribute('aria-invalid'), 'true')
    await addService.getByLabel('Receiver (pay_to)').fill(receiver)
    await addService.getByLabel('Description').fill('Small tools')
    await addService.getByLabel('Marketplace category').fill('Developer Tools')
    await addService.getByLabel('Tags').fill('hashing, ids,, uuid ')
    await addService.getByLabel('Documentation').fill('javascript:alert(1)')
    await addService.getByRole('button', { name: 'Create service' }).click()
    await addService.locator('.form-error').filter({ hasText: 'invalid value for docs_url' }).waitFor()
    await addService.getByLabel('Documentation').fill('https://dash.example/docs')
    await addService.getByRole('button', { name: 'Create service' }).click()
    const service = page.locator('#service-dash-shop-tools')
    await service.getByText('No endpoints published.').waitFor()
    t.match((await api('GET', '/v1/sellers/dash-shop/services')).body.data, [
      {
        name: 'tools',
        pay_to: receiver,
        description: 'Small tools',
        enabled: true,
        category: 'Developer Tools',
        tags: ['hashing', 'ids', 'uuid'],
        docs_url: 'https://dash.example/docs',
        website_url: null,
      },
    ])
    await service.getByText('Marketplace: Developer Tools · tags hashing, ids, uuid').waitFor()

    // publish an upstream endpoint: validation messages first (the API's and the form's own)
    await service.getByRole('button', { name: 'Publish an endpoint' }).click()
    const publish = page.locator('#publish-dash-shop-tools')
    const publishError = publish.locator('.form-error')
    await publish.getByLabel('Slug').fill('Bad Slug')
    await publish.getByLabel('Price per call (USDC)').fill('0.0025')
    await publish.getByLabel('Upstream URL', { exact: true }).fill(upstreamUrl)
    await publish.getByRole('button', { name: 'Publish endpoint' }).click()
    await publishError.filter({ hasText: 'invalid value for slug: expected 3-40 characters' }).waitFor()
    t.equal(await publish.getByLabel('Slug').getAttribute('aria-invalid'), 'true', 'the slug field is marked')
    await publish.getByLabel('Slug').fill('echo')
    await publish.getByLabel('Price per call (USDC)').fill('0')
    await publish.getByRole('button', { name: 'Publish endpoint' }).click()
    await publishError.filter({ hasText: 'Price: must be more than 0' }).waitFor()
    await publish.getByLabel('Price per call (USDC)').fill('0.0025')
    await publish.getByLabel('Timeout (ms)').fill('50')
    await publish.getByRole('button', { name: 'Publish endpoint' }).click()
    await publishError.filter({ hasText: 'invalid value for upstream.timeout_ms' }).waitFor()
    t.equal(
      await publish.getByLabel('Timeout (ms)').getAttribute('aria-invalid'),
      'true',
      'the timeout field is marked',
    )
    t.same(
      (await api('GET', '/v1/sellers/dash-shop/services/tools/endpoints')).body.data,
      [],
      'nothing was published by the failed attempts',
    )
    await publish.getByLabel('Timeout (ms)').fill('2000')
    await publish.getByLabel('POST').check()
    await publish.getByLabel('Description').fill('echoes')
    await publish.getByLabel('Forwarded headers').fill('X-Seller-Key: seller-secret-value')
    await publish.getByLabel('Required headers').fill('X-City')
    await publish.getByRole('button', { name: 'Publish endpoint' }).click()

    // the signing secret once; the row; the API has atomic units and no header value
    await page.locator('#new-secret').waitFor()
    const signingSecret = (await page.locator('#new-secret').textContent()) ?? ''
    t.match(signingSecret, /^tgs_/, 'the signing secret is shown')
    t.ok(await page.getByText('you will not see it again').isVisible())
    await page.locator('#notice.ok').filter({ hasText: 'Endpoint echo published at' }).waitFor()
    const echoRow = service.locator('tr[data-endpoint="echo"]')
    t.match(
      await echoRow.textContent(),
      new RegExp(
        `${proxyUrl}/dash-shop/tools/echo.*GET, POST.*0\\.0025 USDC.*async.*upstream: ${upstreamUrl}.*enabled`,
      ),
    )
    const [echo] = (await api('GET', '/v1/sellers/dash-shop/services/tools/endpoints')).body.data
    t.match(echo, {
      slug: 'echo',
      methods: ['GET', 'POST'],
      price: '2500',
      description: 'echoes',
      settlement_mode: 'async',
      handler: null,
      upstream_url: upstreamUrl,
      enabled: true,
    })
    t.match(echo.upstream, {
      forward_headers: ['x-seller-key'],
      required_headers: ['x-city'],
      timeout_ms: 2000,
      rate_limit: null,
    })
    t.notOk((await page.content()).includes('seller-secret-value'), 'the forwarded header value is not shown')

    // the proxy answers 402 with the price in atomic units and the service's receiver
    const challenge = await proxyAnswers(proxyUrl, '/dash-shop/tools/echo', 402)
    t.equal(challenge.status, 402, 'the published endpoint answers 402 at the proxy')
    t.match(decodeRequired(challenge.headers.get('payment-required')).accepts[0], { amount: '2500', payTo: receiver })
    const challengeBody = await challenge.json()

    // Test: the origin gets a call signed with the secret that was shown, with the forwarded header
    await echoRow.getByRole('button', { name: 'Test' }).click()
    await page.locator('#notice.ok').filter({ hasText: 'Upstream of echo answered 200 in' }).waitFor()
    const tested = seen.at(-1)!
    t.equal(tested.headers['x-seller-key'], 'seller-secret-value')
    t.ok(
      signedWith(signingSecret, tested.headers['x-tollgate-signature'], 'GET', '/api/echo'),
      'signed with the secret the dashboard showed',
    )

    // a hosted endpoint
    await service.getByRole('button', { name: 'Publish an endpoint' }).click()
    t.equal(await page.locator('#new-secret').count(), 0, 'the signing secret is gone once another form opens')
    await publish.getByLabel('Slug').fill('uuid')
    await publish.getByLabel('Price per call (USDC)').fill('0.001')
    await publish.getByLabel('Run a hosted handler').check()
    t.ok(
      await publish.getByLabel('Upstream URL', { exact: true }).isHidden(),
      'upstream fields hide for a hosted handler',
    )
    await publish.getByLabel('Handler name').fill('uuid-generator')
    await publish.getByLabel('Settlement').selectOption('sync')
    await publish.getByRole('button', { name: 'Publish endpoint' }).click()
    const uuidRow = service.locator('tr[data-endpoint="uuid"]')
    await uuidRow.waitFor()
    t.match(await uuidRow.textContent(), /0\.001 USDC.*sync.*hosted: uuid-generator/)
    t.equal(await page.locator('#new-secret').count(), 0, 'a hosted endpoint has no signing secret')
    t.match((await api('GET', '/v1/sellers/dash-shop/services/tools/endpoints/uuid')).body, {
      price: '1000',
      handler: 'uuid-generator',
      upstream_url: null,
      settlement_mode: 'sync',
      methods: ['GET'],
    })
    const hosted = await proxyAnswers(proxyUrl, '/dash-shop/tools/uuid', 402)
    t.equal(hosted.status, 402)
    t.equal(priceOf(hosted), '1000')

    // edit: reprice and drop POST; the forwarded header and the signing secret are kept
    await echoRow.getByRole('button', { name: 'Edit' }).click()
    const edit = page.locator('#edit-dash-shop-tools-echo')
    t.equal(await edit.getByLabel('Price per call (USDC)').inputValue(), '0.0025', 'the form shows the price in USDC')
    t.equal(await edit.getByLabel('Required headers').inputValue(), 'x-city')
    await edit.getByLabel('Price per call (USDC)').fill('0.004')
    await edit.getByLabel('POST').uncheck()
    await edit.getByRole('button', { name: 'Save endpoint' }).click()
    await page.locator('#notice.ok').filter({ hasText: 'Endpoint echo saved.' }).waitFor()
    t.match(await echoRow.textContent(), /GET.*0\.004 USDC/)
    t.match((await api('GET', '/v1/sellers/dash-shop/services/tools/endpoints/echo')).body, {
      price: '4000',
      methods: ['GET'],
      upstream: { forward_headers: ['x-seller-key'], required_headers: ['x-city'], timeout_ms: 2000 },
    })
    t.equal(
      priceOf(await proxyUntil(proxyUrl, '/dash-shop/tools/echo', (r) => priceOf(r) === '4000')),
      '4000',
      'the proxy charges the new price',
    )
    t.equal(
      (await proxyAnswers(proxyUrl, '/dash-shop/tools/echo', 405, { method: 'POST' })).status,
      405,
      'POST is no longer offered',
    )
    await echoRow.getByRole('button', { name: 'Test' }).click()
    await page.locator('#notice.ok').filter({ hasText: 'Upstream of echo answered 200' }).waitFor()
    t.ok(
      signedWith(signingSecret, seen.at(-1)!.headers['x-tollgate-signature'], 'GET', '/api/echo'),
      'the signing secret did not change',
    )
    t.equal(seen.at(-1)!.headers['x-seller-key'], 'seller-secret-value', 'the forwarded header was kept')

    // disable, enable
    await echoRow.getByRole('button', { name: 'Disable' }).click()
    await page.locator('#notice.ok').filter({ hasText: 'Endpoint echo disabled' }).waitFor()
    t.match(await echoRow.textContent(), /disabled/)
    t.equal((await api('GET', '/v1/sellers/dash-shop/services/tools/endpoints/echo')).body.enabled, false)
    t.equal(
      (await proxyAnswers(proxyUrl, '/dash-shop/tools/echo', 404)).status,
      404,
      'a disabled endpoint is not served',
    )
    await echoRow.getByRole('button', { name: 'Enable' }).click()
    await page.locator('#notice.ok').filter({ hasText: 'Endpoint echo enabled.' }).waitFor()
    t.equal((await api('GET', '/v1/sellers/dash-shop/services/tools/endpoints/echo')).body.enabled, true)
    t.equal((await proxyAnswers(proxyUrl, '/dash-shop/tools/echo', 402)).status, 402, 'served again')

    // unpublish (confirmed)
    nextDialog(page)
    await uuidRow.getByRole('button', { name: 'Unpublish' }).click()
    await uuidRow.waitFor({ state: 'detached' })
    t.equal((await api('GET', '/v1/sellers/dash-shop/services/tools/endpoints/uuid')).status, 404)
    t.equal((await proxyAnswers(proxyUrl, '/dash-shop/tools/uuid', 404)).status, 404, 'unpublished at the proxy')

    // the service: edit its name and description (the receiver stays), disable it and enable it again
    await service.getByRole('button', { name: 'Edit service' }).click()
    const editService = page.locator('#edit-service-dash-shop-tools')
    t.equal(await editService.getByLabel('Receiver (pay_to)').inputValue(), receiver)
    t.equal(await editService.getByLabel('Tags').inputValue(), 'hashing, ids, uuid', 'the form shows the tags')
    await editService.getByLabel('Display name').fill('Dash Tools')
    await editService.getByLabel('Description').fill('')
    await editService.getByLabel('Tags').fill('')
    await editService.getByLabel('Website').fill('https://dash.example')
    await editService.getByLabel('Documentation').fill('')
    await editService.getByRole('button', { name: 'Save service' }).click()
    await page.getByRole('heading', { name: 'Dash Tools (tools)' }).waitFor()
    t.match((await api('GET', '/v1/sellers/dash-shop/services/tools')).body, {
      display_name: 'Dash Tools',
      description: null,
      pay_to: receiver,
      category: 'Developer Tools',
      tags: [],
      website_url: 'https://dash.example',
      docs_url: null,
    })
    await service.getByRole('button', { name: 'Disable service' }).click()
    await page.getByRole('heading', { name: 'Dash Tools (tools) — disabled' }).waitFor()
    t.equal((await api('GET', '/v1/sellers/dash-shop/services/tools')).body.enabled, false)
    t.equal(
      (await proxyAnswers(proxyUrl, '/dash-shop/tools/echo', 404)).status,
      404,
      'the endpoints of a disabled service are not served',
    )
    await service.getByRole('button', { name: 'Enable service' }).click()
    await page.getByRole('heading', { name: 'Dash Tools (tools)', exact: true }).waitFor()
    t.equal((await proxyAnswers(proxyUrl, '/dash-shop/tools/echo', 402)).status, 402, 'served again')

    // an agent key and an allowlist made in the dashboard decide whether the agent may pay the endpoint
    const agent = (await api('POST', '/v1/agents', { name: 'shopper' })).body
    await page.goto(`${server.base}/dashboard#/agents/${agent.address}`)
    await page.getByRole('heading', { name: 'shopper' }).waitFor()
    await page.locator('#balance').filter({ hasText: '0 USDC · 0 ETH (block' }).waitFor()
    await page.getByRole('button', { name: 'Create agent key' }).click()
    await page.locator('#new-secret').waitFor()
    const agentKey = (await page.locator('#new-secret').textContent()) ?? ''
    const allow = page.locator('#allowlist')
    await allow.getByLabel('Kind').selectOption('namespace')
    await allow.getByLabel('Value').fill('other-shop')
    await allow.getByRole('button', { name: 'Add to allowlist' }).click()
    await allow.locator('tr', { hasText: 'other-shop' }).waitFor()
    // a dry run says what the agent would pay, or why it may not (the challenge as the proxy asks it now)
    const currentChallenge = await (await proxyAnswers(proxyUrl, '/dash-shop/tools/echo', 402)).json()
    const preview = async () => {
      const res = await fetch(`${server.base}/v1/agent/payments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${agentKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: echo.url, challenge: currentChallenge, dry_run: true }),
      })
      t.equal(res.status, 200, 'the agent key created in the dashboard authenticates')
      return res.json()
    }
    t.match(
      (await preview()).refusal,
      { code: 'seller_not_allowed', namespace: 'dash-shop' },
      'another namespace on the allowlist: the agent may not pay dash-shop',
    )
    await allow.getByLabel('Value').fill('dash-shop')
    await allow.getByRole('button', { name: 'Add to allowlist' }).click()
    await allow.locator('tr', { hasText: 'dash-shop' }).waitFor()
    let allowed = await preview()
    for (let i = 0; i < 20 && allowed.refusal?.code === 'seller_not_allowed'; i++) {
      await new Promise((r) => setTimeout(r, 100)) // the agent-key cache drops the agent on the allowlist's notification
      allowed = await preview()
    }
    // past the allowlist, the next check is the (empty) wallet, at the price the registry asks now (0.004 USDC)
    t.match(
      allowed.refusal,
      { code: 'insufficient_balance', needed: '4000' },
      'with dash-shop allowed, only the empty wallet stops it',
    )
    // a challenge taken before the reprice (0.0025 USDC) is not what the registry asks: the dry run says it would be refused
    const stale = await fetch(`${server.base}/v1/agent/payments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agentKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: echo.url, challenge: challengeBody, dry_run: true }),
    })
    t.match(
      { status: stale.status, body: await stale.json() },
      { status: 200, body: { refusal: { code: 'requirement_mismatch' } } },
      'a stale challenge for a platform URL is refused',
    )

    // delete the service: a dismissed confirmation keeps it; then it and its endpoint are gone
    await page.getByRole('link', { name: 'Seller', exact: true }).click()
    nextDialog(page, false)
    await service.getByRole('button', { name: 'Delete service' }).click()
    t.equal((await api('GET', '/v1/sellers/dash-shop/services/tools')).status, 200, 'dismissed: the service stays')
    nextDialog(page)
    await service.getByRole('button', { name: 'Delete service' }).click()
    await service.waitFor({ state: 'detached' })
    await page.locator('#seller-dash-shop').getByText('No services yet.').waitFor()
    t.equal((await api('GET', '/v1/sellers/dash-shop/services/tools')).status, 404)
    t.equal(
      (await proxyAnswers(proxyUrl, '/dash-shop/tools/echo', 404)).status,
      404,
      'its endpoint is gone from the proxy',
    )

    // the funding wallet on the dev chain: balance, and the faucet (its limit is the API's message)
    await page.getByRole('link', { name: 'Funding wallet', exact: true }).click()
    await page.locator('#funding-balance').filter({ hasText: '0 USDC · 0 ETH (block' }).waitFor()
    const faucet = page.locator('#faucet')
    await faucet.getByLabel('Amount (USDC)').fill('5000')
    await faucet.getByRole('button', { name: 'Get test USDC' }).click()
    await faucet
      .locator('.form-error')
      .filter({ hasText: 'invalid value for amount: at most 1000000000 (1,000 USDC) per call' })
      .waitFor()
    await faucet.getByLabel('Amount (USDC)').fill('2.5')
    await faucet.getByRole('button', { name: 'Get test USDC' }).click()
    await page.locator('#notice.ok').filter({ hasText: 'Minted 2.5 test USDC' }).waitFor()
    await page.locator('#funding-balance').filter({ hasText: '2.5 USDC' }).waitFor()
    t.equal((await api('GET', '/v1/funding-wallet')).body.balance.usdc, '2500000', 'the wallet holds 2.5 USDC on chain')

    t.same(pageErrors, [], 'no script errors')
    t.same(cspViolations, [], 'no CSP violations')
  },
)
