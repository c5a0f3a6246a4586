import { createHash, createHmac } from 'node:crypto'
import Fastify from 'fastify'
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { usersService } from '../../src/services/accounts/users.js'
import { publishingService } from '../../src/services/publishing/publishing.js'
import { decodeRequired, signFor, v2Header } from '../helpers/pay.js'
import { startTestPlatform } from '../helpers/platform.js'

t.test('a published upstream endpoint is paid, forwarded with the seller header and a valid HMAC, and unpublished', async (t) => {
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

  const platform = await startTestPlatform(t, { env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true', TOLLGATE_MASTER_KEY: '42'.repeat(32) } })
  const { deps, proxy } = platform
  const user = await usersService(deps).create(`seller-${Date.now()}@example.com`, 'correct horse battery staple')
  const pub = publishingService(deps)
  await pub.claimNamespace(user.id, { namespace: 'acme', display_name: 'Acme' })
  await pub.createService(user.id, 'acme', { name: 'weather', pay_to: platform.devnet.accounts.receiver.address })
  const created = await pub.createEndpoint(user.id, 'acme', 'weather', {
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

  const missing = await proxy.inject({ method: 'GET', url: '/acme/weather/current', headers: { 'payment-signature': v2Header(required, await signFor(payer, required)) } })
  t.equal(missing.statusCode, 400, 'a required header is checked before paying')
  t.equal(missing.json().param, 'x-city')

  const body = JSON.stringify({ days: 3 })
  const r = await proxy.inject({
    method: 'POST',
    url: '/acme/weather/current?units=metric',
    headers: { 'x-city': 'Lisbon', 'content-type': 'application/json', 'payment-signature': v2Header(required, await signFor(payer, required)) },
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
  const expected = createHmac('sha256', signingSecret!).update(`${ts}.POST./api/weather?units=metric.${createHash('sha256').update(body).digest('hex')}`).digest('hex')
  t.equal(mac, expected, 'the HMAC verifies with the signing secret')

  const failed = await proxy.inject({ method: 'GET', url: '/acme/weather/current?fail=1', headers: { 'x-city': 'Porto', 'payment-signature': v2Header(required, await signFor(payer, required)) } })
  t.equal(failed.statusCode, 500, 'the upstream status passes through')
  const voided = await deps.db.selectFrom('payments').select('status').where('resource', 'like', '%/acme/weather/current').orderBy('created_at', 'desc').executeTakeFirstOrThrow()
  t.equal(voided.status, 'voided', 'a failed upstream call is not charged')

  await pub.deleteEndpoint(user.id, 'acme', 'weather', 'current')
  let gone
  for (let i = 0; i < 50; i++) {
    gone = await proxy.inject('/acme/weather/current')
    if (gone.statusCode === 404) break
    await new Promise((r) => setTimeout(r, 100))
  }
  t.equal(gone!.statusCode, 404, 'unpublished endpoints are gone')
})
