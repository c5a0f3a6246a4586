import t from 'tap'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

const LIMITED = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'ratelimit-policy']

t.test(
  'authenticated answers that fail validation are counted and carry RateLimit headers; 401s carry none',
  async (t) => {
    const { deps, app } = await accountsApp(t, {}, { v1: { rateLimitPerMinute: 4 } })
    const { auth } = await userWithKey(deps)

    const invalid = [
      // the route's querystring schema: limit is 1-100
      await app.inject({ method: 'GET', url: '/v1/transactions?limit=0', headers: auth }),
      // the route's body schema: name is required
      await app.inject({ method: 'POST', url: '/v1/agents', headers: auth, payload: {} }),
      // a body that is not JSON at all (refused while parsing, before any schema)
      await app.inject({
        method: 'POST',
        url: '/v1/agents',
        headers: { ...auth, 'content-type': 'application/json' },
        payload: '{"name":',
      }),
    ]
    t.same(
      invalid.map((r) => r.statusCode),
      [400, 400, 400],
    )
    t.same(
      invalid.map((r) => [r.json().code, r.json().param]),
      [
        ['invalid_parameter', 'limit'],
        ['invalid_parameter', 'name'],
        ['bad_request', undefined],
      ],
      'refused as before',
    )
    t.same(
      invalid.map((r) => r.headers['ratelimit-remaining']),
      ['3', '2', '1'],
      'each one counted, and labelled',
    )
    invalid.forEach((r, i) => LIMITED.forEach((h) => t.ok(r.headers[h] !== undefined, `invalid request ${i}: ${h}`)))

    const fourth = await app.inject({ method: 'GET', url: '/v1/agents', headers: auth })
    t.equal(fourth.statusCode, 200)
    t.equal(fourth.headers['ratelimit-remaining'], '0')
    const fifth = await app.inject({ method: 'POST', url: '/v1/agents', headers: auth, payload: {} })
    t.equal(fifth.statusCode, 429, 'past the limit a bad body is a 429 too, not a free 400')
    t.equal(fifth.json().code, 'rate_limited')
    t.ok(Number(fifth.headers['retry-after']) > 0)
    t.equal(
      await deps.db
        .selectFrom('agents')
        .select('id')
        .execute()
        .then((r) => r.length),
      0,
      'nothing was created',
    )

    for (const headers of [{}, { authorization: 'Bearer sk_test_nope' }]) {
      const res = await app.inject({ method: 'GET', url: '/v1/agents', headers })
      t.equal(res.statusCode, 401)
      for (const h of LIMITED) t.equal(res.headers[h], undefined, `401 without ${h}`)
    }
  },
)
