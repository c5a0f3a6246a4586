/**
 * `batch-settlement` in discovery and the marketplace: the official x402 Bazaar client lists a
 * hosted endpoint with the requirement the proxy's challenge carries (receiverAuthorizer: the
 * platform key, withdrawDelay, the token's name and version); the marketplace DTO lists the scheme
 * among `schemes` while its `x402Schema` stays the product spec's `exact | deferred | null`.
 */
import t from 'tap'
import { HTTPFacilitatorClient } from '@x402/core/http'
import { withBazaar } from '@x402/extensions'
import { buildWebApp } from '../../../src/http/web-app.js'
import { dtoSchema } from '../../../src/services/marketplace/load-entries.js'
import type { CuratedAgentDTO } from '../../../src/services/marketplace/types.js'
import { decodeRequired } from '../../helpers/pay.js'
import { freePort, startTestPlatform } from '../../helpers/platform.js'

const MASTER = '31'.repeat(32)

t.test('the x402Schema of what an endpoint offers', async (t) => {
  t.equal(dtoSchema(['exact', 'batch-settlement']), 'exact')
  t.equal(dtoSchema(['batch-settlement']), 'deferred', 'a batch-settlement offer is settled later: deferred')
  t.equal(dtoSchema(['deferred']), 'deferred')
  t.equal(dtoSchema(['upto']), null)
})

t.test('discovery and the marketplace DTO list batch-settlement on hosted endpoints', async (t) => {
  const platform = await startTestPlatform(t, { env: { TOLLGATE_MASTER_KEY: MASTER } })
  const { deps } = platform
  const web = await buildWebApp(deps, { logger: false })
  const port = await freePort()
  await web.listen({ host: '127.0.0.1', port })
  t.teardown(() => web.close())
  const baseUrl = `http://127.0.0.1:${port}`
  const hashUrl = `${platform.proxyUrl}/tollgate/toolbox/hash-generator`
  const key = await deps.db.selectFrom('platform_keys').selectAll().executeTakeFirstOrThrow()

  const bazaar = withBazaar(new HTTPFacilitatorClient({ url: baseUrl })).extensions.bazaar
  const list = (await bazaar.listResources({ limit: 100 })) as unknown as {
    items: Array<{ resource: string; accepts: Array<Record<string, unknown> & { extra?: Record<string, unknown> }> }>
  }
  const item = list.items.find((i) => i.resource === hashUrl)!
  t.ok(item, 'the hosted endpoint is listed')
  t.same(
    item.accepts.map((a) => a.scheme),
    ['exact', 'batch-settlement'],
  )
  const listed = item.accepts[1]!
  t.equal(String(listed.extra!.receiverAuthorizer).toLowerCase(), key.address, 'receiverAuthorizer: the platform key')

  // the same terms as the proxy's challenge
  const required = decodeRequired((await fetch(`${hashUrl}?text=a&algorithms=sha256`)).headers.get('payment-required'))
  const offered = required.accepts.find((a) => a.scheme === 'batch-settlement')!
  t.same(
    { ...listed, maxTimeoutSeconds: undefined },
    { ...offered, maxTimeoutSeconds: undefined },
    'discovery lists the requirement the challenge carries',
  )

  const res = await fetch(`${baseUrl}/api/v1/agents/marketplace?source=platform&limit=100`)
  t.equal(res.status, 200)
  const entries = (await res.json()) as CuratedAgentDTO[]
  const ep = entries.flatMap((e) => e.endpoints).find((e) => e.url === hashUrl)!
  t.same(ep.schemes, ['exact', 'batch-settlement'], 'the DTO names the schemes offered')
  t.equal(ep.pricing_config.x402Schema, 'exact', 'x402Schema stays exact | deferred | null')
})
