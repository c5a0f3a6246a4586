import t from 'tap'
import { MASTER_KEY, accountsApp, userWithKey } from '../../helpers/accounts.js'
import { startReceiver, signatureValid } from '../../helpers/webhook-receiver.js'
import { until } from '../../helpers/until.js'
import { createPoster, deliverDue } from '../../../src/services/events/deliver.js'
import { emitEvent } from '../../../src/services/events/outbox.js'

const FAST = { WEBHOOK_RETRY_BASE_MS: '200', WEBHOOK_RETRY_MAX_MS: '800', WEBHOOK_GIVE_UP_MS: '3000' }

t.test('webhook endpoints: validation, SSRF, signed delivery, retries, give-up', async (t) => {
  const { deps, app } = await accountsApp(t, { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true', ...FAST })
  const u = await userWithKey(deps)
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
    app.inject({ method, url, headers: u.auth, payload: payload as object })
  const receiver = await startReceiver(t)
  const poster = createPoster(deps.config)
  t.teardown(() => poster.close())
  const deliverAll = () => deliverDue(deps, poster)

  t.test('bad input is a clear 400', async (t) => {
    const cases: Array<[unknown, RegExp]> = [
      [{ url: 'ftp://x', events: ['payment.settled'] }, /url/],
      [{ url: receiver.url }, /events/],
      [{ url: receiver.url, events: [] }, /non-empty list/],
      [{ url: receiver.url, events: ['payment.bogus'] }, /events.*expected one of payment.served/],
      [{ url: receiver.url, events: ['agent.cap_near'], cap_near_percent: 150 }, /1 to 100/],
    ]
    for (const [body, want] of cases) {
      const r = await call('POST', '/v1/webhooks', body)
      t.equal(r.statusCode, 400, JSON.stringify(body))
      t.match(r.json().message, want)
    }
    t.equal((await call('GET', '/v1/webhooks/not-an-id')).statusCode, 404)
    t.equal((await call('GET', '/v1/webhooks/00000000-0000-0000-0000-000000000000')).statusCode, 404)
    t.equal((await app.inject({ method: 'GET', url: '/v1/webhooks' })).statusCode, 401, 'needs a key')
  })

  t.test('loopback and private URLs are refused without the test switch', async (t) => {
    const strict = await accountsApp(t, {})
    const v = await userWithKey(strict.deps)
    for (const url of [
      'http://127.0.0.1:9/x',
      'http://localhost/x',
      'http://169.254.169.254/latest',
      'http://[::1]/x',
    ]) {
      const r = await strict.app.inject({
        method: 'POST',
        url: '/v1/webhooks',
        headers: v.auth,
        payload: { url, events: ['payment.settled'] },
      })
      t.equal(r.statusCode, 400, url)
      t.equal(r.json().code, 'upstream_not_allowed')
    }
    // a URL stored when allowed is still refused at send time by a strict worker
    const strictPoster = createPoster(strict.deps.config)
    t.teardown(() => strictPoster.close())
    const a = await strictPoster.post(receiver.url, 'whsec_x', '{}')
    t.equal(a.ok, false)
    t.match(a.error, /private|loopback/)
    t.equal(receiver.received.length, 0, 'nothing reached the receiver')
  })

  let id = ''
  let secret = ''
  t.test('create shows the secret once; it is encrypted at rest', async (t) => {
    const r = await call('POST', '/v1/webhooks', { url: receiver.url, events: ['topup.completed', 'agent.cap_near'] })
    t.equal(r.statusCode, 201)
    id = r.json().id
    secret = r.json().secret
    t.match(secret, /^whsec_/)
    const got = await call('GET', `/v1/webhooks/${id}`)
    t.equal(got.statusCode, 200)
    t.notOk('secret' in got.json(), 'not shown again')
    t.same(
      (await call('GET', '/v1/webhooks')).json().data.map((e: { id: string }) => e.id),
      [id],
    )
    const row = await deps.db.selectFrom('webhook_endpoints').select('encrypted_secret').executeTakeFirstOrThrow()
    t.notOk(row.encrypted_secret.includes(secret.slice(6)), 'stored encrypted')
    t.match(row.encrypted_secret, /^v1\./)
    t.ok(MASTER_KEY)
  })

  t.test('an event is delivered once, signed, to subscribed endpoints only', async (t) => {
    await deps.db.transaction().execute(async (trx) => {
      await emitEvent(trx, { userId: u.userId, type: 'topup.completed', data: { topup_id: 'x1' } })
      await emitEvent(trx, { userId: u.userId, type: 'withdrawal.confirmed', data: {} }) // not subscribed
    })
    await deliverAll()
    await until('the delivery', async () => receiver.received.length >= 1)
    const got = receiver.received[0]!
    t.equal(got.body.type, 'topup.completed')
    t.match(got.body.id, /^evt_[0-9a-f]{32}$/)
    t.same(got.body.data, { topup_id: 'x1' })
    t.equal(got.headers['content-type'], 'application/json')
    t.ok(signatureValid(got.headers['tollgate-signature'] as string, got.raw, secret), 'signature verifies')
    t.notOk(signatureValid(got.headers['tollgate-signature'] as string, got.raw + ' ', secret), 'not over other bytes')
    t.equal(await deliverAll(), 0, 'nothing left')
    t.equal(receiver.received.length, 1)
  })

  t.test('a rolled-back transaction emits nothing', async (t) => {
    await deps.db
      .transaction()
      .execute(async (trx) => {
        await emitEvent(trx, { userId: u.userId, type: 'topup.completed', data: { topup_id: 'rolled-back' } })
        throw new Error('abort')
      })
      .catch(() => {})
    const n = await deps.db
      .selectFrom('webhook_events')
      .where('data', '@>', '{"topup_id":"rolled-back"}' as never)
      .select('id')
      .execute()
    t.equal(n.length, 0)
  })

  t.test('cap_near goes only to endpoints whose threshold it is', async (t) => {
    const before = receiver.received.length
    await emitEvent(deps.db, { userId: u.userId, type: 'agent.cap_near', data: { percent: 50 } })
    await emitEvent(deps.db, { userId: u.userId, type: 'agent.cap_near', data: { percent: 80 } })
    await deliverAll()
    await until('the 80% one', async () => receiver.received.length > before)
    t.same(
      receiver.received.slice(before).map((r) => r.body.data.percent),
      [80],
    )
  })

  t.test('failures back off exponentially; retries carry the same id and body', async (t) => {
    const before = receiver.received.length
    let fails = 3
    receiver.answerWith(() => (fails-- > 0 ? 500 : 200))
    const evId = await emitEvent(deps.db, { userId: u.userId, type: 'topup.completed', data: { n: 2 } })
    await until('a successful retry', async () => {
      await deliverAll()
      return receiver.received.length - before >= 4
    })
    const tries = receiver.received.slice(before)
    t.same(new Set(tries.map((r) => r.body.id)), new Set([evId]), 'every attempt carries the event id')
    t.equal(new Set(tries.map((r) => r.raw)).size, 1, 'the same body')
    const gaps = tries.slice(1).map((r, i) => r.at - tries[i]!.at)
    t.ok(gaps[0]! >= 180, `first retry after ~200 ms (${gaps.join(', ')})`)
    t.ok(gaps[1]! >= 380, 'then ~400 ms')
    t.ok(gaps[2]! >= 750, 'then ~800 ms (the max)')
    const log = (await call('GET', `/v1/webhooks/${id}/deliveries`)).json().data
    const d = log.find((x: { event_id: string }) => x.event_id === evId)
    t.match(d, { status: 'delivered', attempts: 4, response_code: 200, type: 'topup.completed' })
    t.type(d.latency_ms, 'number')
  })

  t.test('send test event, PATCH, and disabling after the give-up time with a notice', async (t) => {
    receiver.answerWith(() => 200)
    const before = receiver.received.length
    const r = await call('POST', `/v1/webhooks/${id}/test`)
    t.equal(r.statusCode, 202)
    await until('the test event', async () => (await deliverAll(), receiver.received.length > before))
    t.equal(receiver.received.at(-1)!.body.type, 'webhook.test')

    const p = await call('PATCH', `/v1/webhooks/${id}`, { events: ['topup.failed'] })
    t.same(p.json().events, ['topup.failed'])
    t.equal((await call('PATCH', `/v1/webhooks/${id}`, { enabled: 'yes' })).statusCode, 400)

    receiver.answerWith(() => 503)
    await emitEvent(deps.db, { userId: u.userId, type: 'topup.failed', data: { error: 'x' } })
    await until(
      'the endpoint disabled',
      async () => {
        await deliverAll()
        return !(await call('GET', `/v1/webhooks/${id}`)).json().enabled
      },
      20_000,
    )
    const alerts = (await call('GET', '/v1/alerts')).json().data.map((a: { type: string }) => a.type)
    t.ok(alerts.includes('webhook.disabled'), 'a notice among the alerts')
    t.equal((await call('POST', `/v1/webhooks/${id}/test`)).statusCode, 409, 'a disabled endpoint is not tested')
    t.equal((await call('PATCH', `/v1/webhooks/${id}`, { enabled: true })).json().enabled, true)
    t.equal((await call('DELETE', `/v1/webhooks/${id}`)).statusCode, 200)
    t.equal((await call('GET', `/v1/webhooks/${id}`)).statusCode, 404)
  })
})
