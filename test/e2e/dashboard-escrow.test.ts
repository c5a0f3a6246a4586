import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { mintUsdc } from '../../src/chain/devnet.js'
import { wrapFetch } from '../../src/client.js'
import { announceRegistryChange } from '../../src/services/registry-events.js'
import { decodeRequired } from '../helpers/pay.js'
import { startTestPlatform } from '../helpers/platform.js'
import { until } from '../helpers/until.js'
import { logIn, openBrowser, serveDashboard } from './browser.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/handlers')
const ECHO = '/tollgate/toolbox/echo?msg=hi'

t.test("the agent page shows the agent's escrow account and its outstanding voucher", async (t) => {
  const platform = await startTestPlatform(t, {
    proxy: { handlersDir: fixtures },
    env: { TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex') },
  })
  const { deps, proxy } = platform
  await deps.db
    .updateTable('endpoints')
    .set({ schemes: ['exact', 'deferred'] })
    .where('slug', '=', 'echo')
    .execute()
  await announceRegistryChange(deps)
  await until(
    'the proxy offers deferred',
    async () => decodeRequired((await proxy.inject(ECHO)).headers['payment-required'] as string).accepts.length === 2,
  )
  const server = await serveDashboard(t, deps)
  const { page, pageErrors, cspViolations, api } = await openBrowser(t)
  await logIn(page, server)
  const address: string = (await api('POST', '/v1/agents', { name: 'voucher-bot' })).body.address
  const key: string = (await api('POST', `/v1/agents/${address}/keys`, { name: 'k' })).body.secret
  await mintUsdc(platform.devnet.rpcUrl, address as `0x${string}`, 1_000_000n)
  const pay = wrapFetch(fetch, { baseUrl: server.base.replace(/\/$/, ''), agentKey: key })
  for (let i = 0; i < 2; i++) t.match((await pay(`${platform.proxyUrl}${ECHO}`)).payment, { scheme: 'deferred' })

  await page.goto(`${server.base}/dashboard#/agents/${address}`)
  const escrow = page.locator('#agent-escrow')
  await escrow.locator('tbody tr').first().waitFor()
  const row = (await escrow.locator('tbody tr').first().textContent()) ?? ''
  t.match(row, /0\.1 USDC/, 'the balance: the default deposit, 100 x the price')
  t.match(row, /0\.002 USDC/, 'outstanding: two calls')
  t.match(row, /#1: 0\.002 USDC signed, 0 USDC collected/, 'the voucher')
  t.same(pageErrors, [], 'no script errors')
  t.same(cspViolations, [], 'no CSP violations')
})
