import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { mintUsdc } from '../../src/chain/devnet.js'
import { wrapFetch } from '../../src/client.js'
import { startTestPlatform } from '../helpers/platform.js'
import { logIn, openBrowser, serveDashboard } from './browser.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/handlers')
const ECHO = '/tollgate/toolbox/echo?msg=hi'

t.test("the agent page shows the agent's batch-settlement channels, and an empty state before", async (t) => {
  const platform = await startTestPlatform(t, {
    proxy: { handlersDir: fixtures },
    env: { TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex') },
  })
  const server = await serveDashboard(t, platform.deps)
  const { page, pageErrors, cspViolations, api } = await openBrowser(t)
  await logIn(page, server)
  const address: string = (await api('POST', '/v1/agents', { name: 'channel-bot' })).body.address
  const key: string = (await api('POST', `/v1/agents/${address}/keys`, { name: 'k' })).body.secret
  // funded before the page reads the balance (the platform caches a wallet's balance for a second)
  await mintUsdc(platform.devnet.rpcUrl, address as `0x${string}`, 1_000_000n)

  await page.goto(`${server.base}/dashboard#/agents/${address}`)
  const channels = page.locator('#agent-channels')
  await channels.locator('.empty-state').waitFor()
  t.match(
    await channels.textContent(),
    /No channels: this agent has paid no endpoint through batch-settlement\..*tollgate fetch <url>.*--no-batch opts out/,
    'the empty state says how a channel opens',
  )

  const pay = wrapFetch(fetch, { baseUrl: server.base.replace(/\/$/, ''), agentKey: key, batchSettlement: true })
  for (let i = 0; i < 2; i++)
    t.match((await pay(`${platform.proxyUrl}${ECHO}`)).payment, { scheme: 'batch-settlement' })

  await page.reload()
  await channels.locator('tbody tr').first().waitFor()
  t.same(await channels.locator('thead th').allTextContents(), [
    'Channel',
    'Seller',
    'Balance',
    'Charged',
    'Claimed',
    'Refundable',
    'Withdrawing',
  ])
  const cells = await channels.locator('tbody tr').first().locator('td').allTextContents()
  t.match(cells[0], /^0x[0-9a-f]{4}…[0-9a-f]{4}$/, 'the channel, short')
  t.same(
    cells.slice(2),
    ['0.1 USDC', '0.002 USDC', '0 USDC', '0.098 USDC', 'no'],
    'balance: the default deposit (100 x the price); charged: two calls; nothing claimed yet; no withdrawal',
  )
  t.equal(await channels.locator('tbody tr').count(), 1, 'one channel')
  t.same(pageErrors, [], 'no script errors')
  t.same(cspViolations, [], 'no CSP violations')
})
