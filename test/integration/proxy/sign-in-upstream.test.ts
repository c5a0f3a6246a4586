import Fastify from 'fastify'
import t from 'tap'
import { x402HTTPClient } from '@x402/core/client'
import { ExactEvmScheme } from '@x402/evm'
import { createSIWxClientHook } from '@x402/extensions/sign-in-with-x'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../../../src/chain/devnet.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { createPublishing } from '../../../src/services/publishing/publishing.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'

t.test(
  "a seller upstream with paid access: the signed-in call reaches the origin with the granting payment's id, without the proof",
  async (t) => {
    const upstream = Fastify()
    const seen: Record<string, unknown>[] = []
    upstream.get('/api/*', async (req) => {
      seen.push(req.headers)
      return { upstream: 'ok' }
    })
    await upstream.listen({ host: '127.0.0.1', port: 0 })
    t.teardown(() => upstream.close())
    const origin = `http://127.0.0.1:${(upstream.server.address() as { port: number }).port}/api/report`

    const platform = await startTestPlatform(t, {
      env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true', TOLLGATE_MASTER_KEY: '42'.repeat(32) },
    })
    const { deps } = platform
    const user = await createUsers(deps).create(`seller-${Date.now()}@example.com`, 'correct horse battery staple')
    const pub = createPublishing(deps)
    await pub.claimNamespace({ userId: user.id }, { namespace: 'acme', display_name: 'Acme' })
    await pub.createService({ userId: user.id }, 'acme', {
      name: 'reports',
      pay_to: platform.devnet.accounts.receiver.address,
    })
    await pub.createEndpoint({ userId: user.id }, 'acme', 'reports', {
      slug: 'daily',
      price: '2500',
      upstream_url: origin,
      access_minutes: 5,
    })
    const url = `${platform.proxyUrl}/acme/reports/daily`
    await until('the proxy to serve the new endpoint', async () => (await fetch(url)).status === 402)

    const account = privateKeyToAccount(generatePrivateKey())
    await mintUsdc(platform.devnet.rpcUrl, account.address, 1_000_000n)
    const http = new x402HTTPClient(new x402Client().register('eip155:84532', new ExactEvmScheme(account)))
    http.onPaymentRequired(createSIWxClientHook(account))
    const buy = wrapFetchWithPayment(fetch, http)

    const first = await buy(url)
    t.equal(first.status, 200)
    t.ok(first.headers.get('payment-response'), 'paid')
    const [payment] = await deps.db
      .selectFrom('payments')
      .select('id')
      .where('payer', '=', account.address.toLowerCase())
      .execute()
    const again = await buy(url)
    t.equal(again.status, 200)
    t.same(await again.json(), { upstream: 'ok' })
    t.equal(again.headers.get('payment-response'), null, 'served on the sign-in')
    t.equal(seen.length, 2, 'the origin was called twice (the refused sign-in never reached it)')
    t.equal(seen[0]!['x-tollgate-payment-id'], payment!.id)
    t.equal(seen[1]!['x-tollgate-payment-id'], payment!.id, "the signed-in call carries the granting payment's id")
    t.equal(seen[1]!['sign-in-with-x'], undefined, 'the proof is not forwarded')
    t.ok(seen[1]!['x-tollgate-signature'], 'signed as every forwarded call')
    t.equal((await deps.db.selectFrom('payments').select('id').execute()).length, 1)
  },
)
