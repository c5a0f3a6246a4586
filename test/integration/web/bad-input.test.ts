import { sql } from 'kysely'
import type { InjectOptions } from 'fastify'
import t from 'tap'
import { isTimestamp } from '../../../src/services/accounts/history-export.js'
import { MAX_JSON_DEPTH } from '../../../src/http/plugins/input-guard.js'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

// Input that used to reach Postgres or JSON.stringify and come back as a 500 (found by a black-box
// audit of every web route): each is now a 400 naming the parameter, and the app keeps working.

/** JSON text of an object nested `levels` deep (as text: serializing it in the test would overflow too) */
const deep = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels)

t.test('NUL characters and lone surrogates are refused where they arrive', async (t) => {
  const { deps, app } = await accountsApp(t, { TOLLGATE_OPERATOR_TOKEN: 'op-token' })
  const { auth } = await userWithKey(deps)
  const cases: { what: string; req: InjectOptions; param: string }[] = [
    {
      what: 'agent name',
      req: { method: 'POST', url: '/v1/agents', headers: auth, payload: { name: 'a\u0000b' } },
      param: 'name',
    },
    {
      what: 'login email, no credential needed',
      req: {
        method: 'POST',
        url: '/v1/session',
        payload: { email: 'a\u0000@example.com', password: 'correct horse battery' },
      },
      param: 'email',
    },
    {
      what: 'seller namespace in the path',
      req: { method: 'GET', url: '/v1/sellers/a%00b', headers: auth },
      param: 'namespace',
    },
    {
      what: 'a query parameter',
      req: { method: 'GET', url: '/v1/transactions?agent=%00', headers: auth },
      param: 'agent',
    },
    {
      what: 'a lone surrogate deep in a submission',
      req: {
        method: 'POST',
        url: '/api/v1/agents/marketplace/submissions',
        payload: JSON.parse('{"name":"x","skills":[{"name":"s","instructions":{"x":"\\ud800"}}]}'),
      },
      param: 'skills.0.instructions.x',
    },
    {
      what: 'a NUL in a JSON key',
      req: { method: 'POST', url: '/v1/api-keys', headers: auth, payload: { name: 'k', meta: { 'a\u0000': 1 } } },
      param: 'meta.a\u0000',
    },
    {
      what: 'an operator path id',
      req: {
        method: 'POST',
        url: '/api/v1/operator/marketplace/entries/%00/enable',
        headers: { authorization: 'Bearer op-token' },
      },
      param: 'id',
    },
  ]
  for (const c of cases) {
    const r = await app.inject(c.req)
    t.equal(r.statusCode, 400, `${c.what}: 400`)
    t.match(r.json(), { code: 'invalid_parameter', param: c.param }, `${c.what}: names ${JSON.stringify(c.param)}`)
  }
  const fine = await app.inject({ method: 'POST', url: '/v1/agents', headers: auth, payload: { name: 'émoji 😀 ok' } })
  t.equal(fine.statusCode, 201, 'well-formed unicode, astral characters included, still passes')
})

t.test('JSON nested too deep is refused before anything serializes it', async (t) => {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  const tooDeep = await app.inject({
    method: 'POST',
    url: '/v1/agents',
    headers: { ...auth, 'idempotency-key': 'k1', 'content-type': 'application/json' },
    payload: `{"name":"a","x":${deep(5000)}}`,
  })
  t.equal(tooDeep.statusCode, 400)
  t.match(tooDeep.json(), {
    code: 'invalid_parameter',
    message: new RegExp(`nested more than ${MAX_JSON_DEPTH} levels`),
  })
  const ok = await app.inject({
    method: 'POST',
    url: '/v1/agents',
    headers: { ...auth, 'idempotency-key': 'k2' },
    payload: { name: 'a' },
  })
  t.equal(ok.statusCode, 201, 'the same route with a normal body')
})

t.test('history dates and cursors Postgres would refuse are a 400, before an export starts streaming', async (t) => {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  const cursor = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
  for (const from of [
    '1',
    '0',
    '-1',
    '1.5',
    '100',
    '2024-02-30',
    '2023-02-29',
    '+275760-09-13T00:00:00Z',
    '-271821-04-20T00:00:00Z',
    '0000-01-01',
    '2024-13-01',
  ]) {
    for (const format of ['', '&format=csv', '&format=ndjson']) {
      const r = await app.inject({ url: `/v1/transactions?from=${encodeURIComponent(from)}${format}`, headers: auth })
      t.equal(r.statusCode, 400, `from=${from}${format}`)
    }
  }
  for (const [kind, c] of [
    ['transactions', cursor(['1', '00000000-0000-0000-0000-000000000000'])],
    ['transactions', cursor(['2026-11-01T00:00:00.000000Z', '-'.repeat(36)])],
    ['payment-events', cursor(['2026-11-01T00:00:00.000000Z', '9999999999999999999'])],
  ] as const) {
    const r = await app.inject({ url: `/v1/${kind}?cursor=${c}`, headers: auth })
    t.equal(r.statusCode, 400, `${kind} cursor ${Buffer.from(c, 'base64url').toString()}`)
    t.match(r.json(), { code: 'invalid_parameter', param: 'cursor' })
  }
  for (const from of [
    '2024-02-29',
    '2026-11-01T00:00:00Z',
    '2026-11-01T00:00',
    '2026-11-01 10:20:30.123456+02:00',
    '2026-11-01T24:00:00Z',
  ]) {
    const r = await app.inject({ url: `/v1/transactions?from=${encodeURIComponent(from)}`, headers: auth })
    t.equal(r.statusCode, 200, `from=${from} is accepted`)
  }
})

t.test('every value the timestamp check accepts is one Postgres reads', async (t) => {
  const { deps } = await accountsApp(t)
  const samples: string[] = []
  let seed = 7
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n)
  const pad = (n: number, w: number) => String(n).padStart(w, '0')
  for (let i = 0; i < 3000; i++) {
    const date = `${pad(rnd(10000), 4)}-${pad(rnd(15), 2)}-${pad(rnd(33), 2)}`
    const time = rnd(2)
      ? `${rnd(2) ? 'T' : ' '}${pad(rnd(26), 2)}:${pad(rnd(62), 2)}${rnd(2) ? `:${pad(rnd(62), 2)}` : ''}`
      : ''
    const zone = time && rnd(2) ? ['Z', `+${pad(rnd(16), 2)}:${pad(rnd(60), 2)}`, `-${pad(rnd(16), 2)}`][rnd(3)] : ''
    samples.push(date + time + zone)
  }
  const accepted = samples.filter(isTimestamp)
  t.ok(
    accepted.length > 100 && accepted.length < samples.length,
    `a mix of accepted (${accepted.length}) and refused values`,
  )
  const failed: string[] = []
  for (const v of accepted) {
    await sql`select ${v}::timestamptz`.execute(deps.db).catch(() => failed.push(v))
  }
  t.same(failed, [], 'Postgres reads every accepted value')
})

t.test('a POST with no body at all is an empty JSON object', async (t) => {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  const agent = (await app.inject({ method: 'POST', url: '/v1/agents', headers: auth, payload: { name: 'a' } })).json()
    .address
  const key = await app.inject({ method: 'POST', url: `/v1/agents/${agent}/keys`, headers: auth })
  t.equal(key.statusCode, 201, key.body)
  t.match(key.json().secret, /^ak_test_/)
  const missing = await app.inject({ method: 'POST', url: '/v1/agents', headers: auth })
  t.equal(missing.statusCode, 400)
  t.match(
    missing.json(),
    { code: 'invalid_parameter', param: 'name' },
    'a required field is named, not "body must be object"',
  )
})
