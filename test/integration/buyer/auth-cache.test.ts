import t from 'tap'
import { createDeps } from '../../../src/deps.js'
import { createAgentKeys } from '../../../src/services/accounts/agent-keys.js'
import { createAllowlist } from '../../../src/services/accounts/allowlist.js'
import { createAgentPayments } from '../../../src/services/agent-payments/agent-payments.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'

t.test('cached agent-key look-ups: a revoke or allowlist change reaches every process at commit', async (t) => {
  const p = await startBuyerPlatform(t)
  const url = `${p.proxyUrl}/tollgate/toolbox/echo`
  const challenge = (await fetch(url)).headers.get('payment-required')!
  const deps2 = createDeps(p.deps.config)
  t.teardown(() => deps2.close())
  const services = [createAgentPayments(p.deps), createAgentPayments(deps2)]
  t.teardown(() => Promise.all(services.map((s) => s.close())))
  await new Promise((r) => setTimeout(r, 300)) // both LISTENing
  const agent = await p.agent({ fund: 1_000_000n })
  for (const s of services) {
    const a = await s.authenticate(agent.key)
    t.match(
      await s.pay(a, { url, challenge }),
      { object: 'agent_payment' },
      'authenticated and paid (look-up now cached)',
    )
  }
  // allowlist added in Postgres: the next look-up on both processes sees it
  await createAllowlist({ db: p.deps.db }).add(
    { id: agent.id, address: agent.address },
    { kind: 'namespace', value: 'someone-else' },
  )
  await new Promise((r) => setTimeout(r, 50))
  for (const s of services)
    t.match(
      await s.pay(await s.authenticate(agent.key), { url, challenge }).catch((e) => e),
      { code: 'seller_not_allowed' },
      'allowlist change applied',
    )

  const keys = createAgentKeys({ db: p.deps.db, deployment: p.deps.config.deployment })
  const [k] = await keys.list({ id: agent.id, address: agent.address })
  await keys.revoke({ id: agent.id, address: agent.address }, k!.id)
  await new Promise((r) => setTimeout(r, 50))
  for (const s of services)
    t.match(
      await s.authenticate(agent.key).catch((e) => e),
      { code: 'revoked_agent_key' },
      'revoked key refused on both processes, as revoked',
    )
  const res = await p.web.inject({
    method: 'POST',
    url: '/v1/agent/payments',
    headers: agent.auth,
    payload: { url, challenge },
  })
  t.equal(res.statusCode, 401, 'and through the HTTP API')
  t.equal(res.json().code, 'revoked_agent_key', 'saying so')
})
