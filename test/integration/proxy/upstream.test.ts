import { createHash, createHmac } from 'node:crypto'
import Fastify from 'fastify'
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { createUsers } from '../../../src/services/accounts/users.js'
import { createPublishing } from '../../../src/services/publishing/publishing.js'
import { decodeRequired, signFor, v2Header } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'

t.test(
  'a published upstream endpoint is paid, forwarded with the seller header and a valid HMAC, and unpublished',
  async (t) => {
    const upstream = Fastify()
    const seen: { headers: Record<string, unknown>; body: string; url: string; method: string }[] = []
    upstream.addContentTypeParser('application/json', { parseAs: 'string' }, (_r, body, done) => done(null, body))
    upstream.all('/api/*', async (req, reply) => {
      seen.push({ headers: req.headers, body: String(req.body ?? ''), url: req.url, method: req.method })
      if (req.url.includes('fail')) return reply.code(500).send({ upstream: 'broken' })
      return { upstream: 'ok', got: req.body ? JSON.parse(String(req.body)) : null }
    })
    await upstream.listen({ host: '127.0.0.1', port: 0 })
    t.teardown(() => upstream.close())
    const origin = `http://127.0.0.1:${(upstream.server.address() as { port: number }).port}/api/weather`

    const platform = await startTestPlatform(t, {
      env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true', TOLLGATE_MASTER_KEY: '42'.repeat(32) },
    })
    const { deps, proxy } = platform
    const user = await createUsers(deps).create(`seller-${Date.now()}@example.com`, 'correct horse battery staple')
    const pub = createPublishing(deps)
    await pub.claimNamespace({ userId: user.id }, { namespace: 'acme', display_name: 'Acme' })
    await pub.createService({ userId: user.id }, 'acme', {
      name: 'weather',
      pay_to: platform.devnet.accounts.receiver.address,
    })
    const created = await pub.createEndpoint({ userId: user.id }, 'acme', 'weather', {
      slug: 'current',
      methods: ['GET', 'POST'],
      price: '2500',
      upstream_url: origin,
      upstream: { forward_headers: { 'x-seller-key': 'seller-secret-value' }, required_headers: ['x-city'] },
    })
    const signingSecret = (created as { signing_secret?: string }).signing_secret
    t.ok(signingSecret, 'the signing secret is shown once at creation')

    // the proxy picks the change up from the registry channel
    let first
    for (let i = 0; i < 50; i++) {
      first = await proxy.inject('/acme/weather/current')
      if (first.statusCode === 402) break
      await new Promise((r) => setTimeout(r, 100))
    }
    t.equal(first!.statusCode, 402, 'the proxy serves the 402 for the new slug')
    const required = decodeRequired(first!.headers['payment-required'] as string)
    t.equal(required.accepts[0].amount, '2500')
    const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)

    const missing = await proxy.inject({
      method: 'GET',
      url: '/acme/weather/current',
      headers: { 'payment-signature': v2Header(required, await signFor(payer, required)) },
    })
    t.equal(missing.statusCode, 400, 'a required header is checked before paying')
    t.equal(missing.json().param, 'x-city')

    const body = JSON.stringify({ days: 3 })
    const r = await proxy.inject({
      method: 'POST',
      url: '/acme/weather/current?units=metric',
      headers: {
        'x-city': 'Lisbon',
        'content-type': 'application/json',
        'payment-signature': v2Header(required, await signFor(payer, required)),
      },
      payload: body,
    })
    t.equal(r.statusCode, 200, r.body)
    t.same(r.json(), { upstream: 'ok', got: { days: 3 } })
    t.ok(r.headers['payment-response'], 'payment response header added')
    const got = seen.at(-1)!
    t.equal(got.headers['x-seller-key'], 'seller-secret-value', 'the seller header is forwarded')
    t.equal(got.headers['x-city'], 'Lisbon')
    t.notOk(got.headers['payment-signature'], 'our payment header is not leaked upstream')
    t.equal(got.url, '/api/weather?units=metric')
    const sig = String(got.headers['x-tollgate-signature'])
    const [, ts, mac] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(sig) ?? []
    const expected = createHmac('sha256', signingSecret!)
      .update(`${ts}.POST./api/weather?units=metric.${createHash('sha256').update(body).digest('hex')}`)
      .digest('hex')
    t.equal(mac, expected, 'the HMAC verifies with the signing secret')

    const failed = await proxy.inject({
      method: 'GET',
      url: '/acme/weather/current?fail=1',
      headers: { 'x-city': 'Porto', 'payment-signature': v2Header(required, await signFor(payer, required)) },
    })
    t.equal(failed.statusCode, 500, 'the upstream status passes through')
    const voided = await deps.db
      .selectFrom('payments')
      .select('status')
      .where('resource', 'like', '%/acme/weather/current')
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow()
    t.equal(voided.status, 'voided', 'a failed upstream call is not charged')

    await pub.deleteEndpoint({ userId: user.id }, 'acme', 'weather', 'current')
    let gone
    for (let i = 0; i < 50; i++) {
      gone = await proxy.inject('/acme/weather/current')
      if (gone.statusCode === 404) break
      await new Promise((r) => setTimeout(r, 100))
    }
    t.equal(gone!.statusCode, 404, 'unpublished endpoints are gone')
  },
)

t.test(
  "a seller's per-endpoint rate limit holds across proxy processes; refused calls are not recorded or charged",
  async (t) => {
    const upstream = Fastify()
    let served = 0
    upstream.get('/quote', async () => ({ n: ++served }))
    await upstream.listen({ host: '127.0.0.1', port: 0 })
    t.teardown(() => upstream.close())
    const platform = await startTestPlatform(t, {
      env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true', TOLLGATE_MASTER_KEY: '43'.repeat(32) },
    })
    const { deps, proxy } = platform
    const other = await platform.startProxy()
    const user = await createUsers(deps).create(`limited-${Date.now()}@example.com`, 'correct horse battery staple')
    const pub = createPublishing(deps)
    await pub.claimNamespace({ userId: user.id }, { namespace: 'limited', display_name: 'Limited' })
    await pub.createService({ userId: user.id }, 'limited', {
      name: 'api',
      pay_to: platform.devnet.accounts.receiver.address,
    })
    await pub.createEndpoint({ userId: user.id }, 'limited', 'api', {
      slug: 'quote',
      methods: ['GET'],
      price: '1000',
      upstream_url: `http://127.0.0.1:${(upstream.server.address() as { port: number }).port}/quote`,
      upstream: { rate_limit: { requests: 4, per_seconds: 3600 } },
    })
    let first
    for (let i = 0; i < 50; i++) {
      first = await proxy.inject('/limited/api/quote')
      if (first.statusCode === 402 && (await other.app.inject('/limited/api/quote')).statusCode === 402) break
      await new Promise((r) => setTimeout(r, 100))
    }
    t.equal(first!.statusCode, 402)
    const required = decodeRequired(first!.headers['payment-required'] as string)
    const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)

    t.equal((await proxy.inject('/limited/api/quote')).statusCode, 402, 'challenges do not count')
    const headers = await Promise.all(
      Array.from({ length: 7 }, async () => v2Header(required, await signFor(payer, required))),
    )
    // a forged payment does not count either
    const forged = JSON.parse(Buffer.from(headers[0]!, 'base64').toString())
    forged.payload.signature = `0x${'11'.repeat(65)}`
    t.equal(
      (
        await proxy.inject({
          url: '/limited/api/quote',
          headers: { 'payment-signature': Buffer.from(JSON.stringify(forged)).toString('base64') },
        })
      ).statusCode,
      402,
    )

    const results = await Promise.all(
      headers.map((h, i) =>
        (i % 2 ? other.app : proxy).inject({ url: '/limited/api/quote', headers: { 'payment-signature': h } }),
      ),
    )
    const codes = results.map((r) => r.statusCode).sort()
    t.same(
      codes,
      [200, 200, 200, 200, 429, 429, 429],
      'four calls in the window across both processes, the rest refused',
    )
    t.equal(served, 4, 'the upstream saw only the allowed calls')
    const refused = results.filter((r) => r.statusCode === 429)
    for (const r of refused) {
      t.equal(r.json().code, 'rate_limited')
      t.ok(Number(r.headers['retry-after']) >= 1, 'Retry-After says when')
      t.equal(r.headers['ratelimit-policy'], '4;w=3600')
      t.notOk(r.headers['payment-response'], 'no payment response: nothing was charged')
    }
    const rows = await deps.db
      .selectFrom('payments')
      .select(['status'])
      .where('resource', 'like', '%/limited/api/quote')
      .execute()
    t.equal(rows.length, 4, 'refused calls left no payment row')
    t.ok(rows.every((r) => r.status === 'served'))
    // the refused payment's nonce is free again: the same signed payment is not "already used"
    const retry = await proxy.inject({
      url: '/limited/api/quote',
      headers: { 'payment-signature': headers[results.findIndex((r) => r.statusCode === 429)]! },
    })
    t.equal(retry.statusCode, 429, 'still limited in this window, and not refused as a replay')
  },
)
