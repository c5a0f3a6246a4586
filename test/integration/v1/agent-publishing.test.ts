import t from 'tap'
import type { CuratedAgentDTO } from '../../../src/services/marketplace/types.js'
import { until } from '../../helpers/until.js'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

const PAY_TO = '0x1111111111111111111111111111111111111111'

t.test("an agent key manages the agent's own paid endpoints under /v1/agent/sellers, and nothing else", async (t) => {
  const { deps, app } = await accountsApp(t)
  const owner = await userWithKey(deps)
  const stranger = await userWithKey(deps)
  type Auth = { authorization: string }
  const call = (auth: Auth, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
    app.inject({ method, url, headers: auth, ...(payload === undefined ? {} : { payload: payload as object }) })
  const agentWithKey = async (user: { auth: Auth }, name: string) => {
    const agent = (await call(user.auth, 'POST', '/v1/agents', { name })).json()
    const key = (await call(user.auth, 'POST', `/v1/agents/${agent.address}/keys`, { name: 'publisher' })).json()
    return {
      address: agent.address as string,
      keyId: key.id as string,
      auth: { authorization: `Bearer ${key.secret}` },
    }
  }
  const botA = await agentWithKey(owner, 'bot a')
  const botB = await agentWithKey(owner, 'bot b')
  const foreign = await agentWithKey(stranger, 'not ours')

  // an agent claims its own namespace: owned by its user, linked to the agent
  t.same((await call(botA.auth, 'GET', '/v1/agent/sellers')).json().data, [], 'no namespaces at first')
  const claimed = await call(botA.auth, 'POST', '/v1/agent/sellers', { namespace: 'bot-a-data' })
  t.equal(claimed.statusCode, 201)
  t.equal(claimed.headers['ratelimit-limit'], '600', 'rate limited per agent like the user API')
  t.match(claimed.json(), { namespace: 'bot-a-data', agent_address: botA.address })
  t.match(
    (await call(owner.auth, 'GET', '/v1/sellers')).json().data,
    [{ namespace: 'bot-a-data', agent_address: botA.address }],
    "the owner sees it among the user's namespaces",
  )

  // ... publishes a service and an endpoint in it; a retry with the same Idempotency-Key gets the first answer
  const create = () =>
    app.inject({
      method: 'POST',
      url: '/v1/agent/sellers/bot-a-data/services',
      headers: { ...botA.auth, 'idempotency-key': 'svc-1' },
      payload: { name: 'quotes', pay_to: PAY_TO, category: 'Crypto' },
    })
  const first = await create()
  t.equal(first.statusCode, 201)
  const again = await create()
  t.equal(again.statusCode, 201, 'the retry is answered, not refused as a conflict')
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.equal(again.body, first.body)
  const ep = await call(botA.auth, 'POST', '/v1/agent/sellers/bot-a-data/services/quotes/endpoints', {
    slug: 'hash',
    methods: ['GET'],
    price: '2000',
    handler: 'hash-generator',
  })
  t.equal(ep.statusCode, 201)
  t.match(ep.json(), { slug: 'hash', price: '2000' })
  t.equal(
    (
      await call(botA.auth, 'PATCH', '/v1/agent/sellers/bot-a-data/services/quotes/endpoints/hash', { price: '3000' })
    ).json().price,
    '3000',
    'and changes it',
  )
  t.equal(
    (await call(owner.auth, 'GET', '/v1/sellers/bot-a-data/services/quotes/endpoints/hash')).json().price,
    '3000',
    'the owner sees the same endpoint',
  )
  const listed = await until('the entry in the marketplace', async () => {
    const all = (
      await app.inject({ method: 'GET', url: '/api/v1/agents/marketplace?source=platform' })
    ).json() as CuratedAgentDTO[]
    return all.find((a) => a.endpoints.some((e) => e.url.endsWith('/bot-a-data/quotes/hash')))
  })
  t.equal(listed.platform_agent_address, botA.address, 'listed as the agent')

  // ... but cannot move the namespace to another agent; renaming is fine
  const move = await call(botA.auth, 'PATCH', '/v1/agent/sellers/bot-a-data', { agent_address: botB.address })
  t.equal(move.statusCode, 400)
  t.equal(move.json().param, 'agent_address')
  t.equal(
    (await call(botA.auth, 'PATCH', '/v1/agent/sellers/bot-a-data', { display_name: 'Bot A Data' })).json()
      .display_name,
    'Bot A Data',
  )

  // another agent of the same user, an agent of another user: not found, and nothing changes
  for (const [who, auth] of [
    ['a sibling agent', botB.auth],
    ["another user's agent", foreign.auth],
  ] as const) {
    t.equal((await call(auth, 'GET', '/v1/agent/sellers/bot-a-data')).statusCode, 404, `${who}: read`)
    t.equal(
      (await call(auth, 'POST', '/v1/agent/sellers/bot-a-data/services', { name: 'x', pay_to: PAY_TO })).statusCode,
      404,
      `${who}: add a service`,
    )
    t.equal(
      (await call(auth, 'DELETE', '/v1/agent/sellers/bot-a-data/services/quotes/endpoints/hash')).statusCode,
      404,
      `${who}: unpublish`,
    )
    t.same((await call(auth, 'GET', '/v1/agent/sellers')).json().data, [], `${who}: lists none`)
  }
  t.equal(
    (await call(owner.auth, 'GET', '/v1/sellers/bot-a-data/services/quotes/endpoints/hash')).statusCode,
    200,
    'the endpoint is still there',
  )

  // the owner's own namespace: invisible to the agent until the owner links it
  t.equal((await call(owner.auth, 'POST', '/v1/sellers', { namespace: 'owner-ns' })).statusCode, 201)
  t.equal((await call(botA.auth, 'GET', '/v1/agent/sellers/owner-ns')).statusCode, 404, 'not linked: not found')
  t.equal((await call(owner.auth, 'PATCH', '/v1/sellers/owner-ns', { agent_address: botA.address })).statusCode, 200)
  t.equal((await call(botA.auth, 'GET', '/v1/agent/sellers/owner-ns')).statusCode, 200, 'linked: the agent manages it')
  t.same(
    (await call(botA.auth, 'GET', '/v1/agent/sellers')).json().data.map((s: { namespace: string }) => s.namespace),
    ['bot-a-data', 'owner-ns'],
  )

  t.equal(
    (await call(botA.auth, 'GET', '/v1/agent/sellers/a%00b')).json().param,
    'namespace',
    'bad input is a 400 naming the field here too',
  )

  // credentials: an API key is not an agent key and the other way round; a revoked agent key is refused
  t.equal((await call(owner.auth, 'GET', '/v1/agent/sellers')).statusCode, 401, 'an API key on the agent routes')
  t.equal((await call(botA.auth, 'GET', '/v1/sellers')).statusCode, 401, 'an agent key on the user routes')
  t.equal((await call(owner.auth, 'DELETE', `/v1/agents/${botA.address}/keys/${botA.keyId}`)).statusCode, 200)
  const refused = await until('the revoked key refused', async () => {
    const r = await call(botA.auth, 'GET', '/v1/agent/sellers')
    return r.statusCode === 401 ? r : undefined
  })
  t.equal(refused.statusCode, 401, 'revoked')
})
