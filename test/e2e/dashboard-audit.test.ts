import { randomBytes } from 'node:crypto'
import t from 'tap'
import { testDeps } from '../helpers/test-env.js'
import { logIn, openBrowser, serveDashboard } from './browser.js'

// What a user auditing the dashboard ran into, one test each (no chain: balances are 503).

interface T {
  teardown(fn: () => unknown): void
}

async function dashboardServer(t: T) {
  const deps = await testDeps(t, { TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex') })
  return { deps, ...(await serveDashboard(t, deps)) }
}

t.test('a session that ends while the user works: the login screen says so, a first visit does not', async (t) => {
  const server = await dashboardServer(t)
  const { page, pageErrors, cspViolations, api } = await openBrowser(t)

  // a first visit: the login screen, no "session ended" message
  await page.goto(`${server.base}/dashboard#/agents`)
  await page.getByRole('heading', { name: 'Log in' }).waitFor()
  t.ok(await page.locator('#login-error').isHidden(), 'no message before anyone logged in')

  await logIn(page, server)
  await page.getByRole('link', { name: 'Agents', exact: true }).click()
  await page.getByRole('heading', { name: 'Agents' }).waitFor()
  t.equal((await api('DELETE', '/v1/session')).status, 204, 'the session ends elsewhere (another tab, expiry)')
  await page.getByLabel('New agent').fill('lost-bot')
  await page.getByRole('button', { name: 'Create agent' }).click()
  await page.getByRole('heading', { name: 'Log in' }).waitFor()
  await page.locator('#login-error').filter({ hasText: 'Your session has ended' }).waitFor()
  t.match(await page.locator('#login-error').textContent(), /log in again/i, 'it says what to do')
  t.equal((await api('GET', '/v1/agents')).status, 401, 'nothing was created')

  // logging in clears it and returns to the screen the 401 interrupted
  await page.getByLabel('Email').fill(server.email)
  await page.getByLabel('Password').fill(server.password)
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.getByRole('heading', { name: 'Agents' }).waitFor()
  // an explicit log out is not a session that "ended": no message
  await page.getByRole('button', { name: 'Log out' }).click()
  await page.getByRole('heading', { name: 'Log in' }).waitFor()
  t.ok(await page.locator('#login-error').isHidden(), 'no "session ended" message after Log out')
  t.same(pageErrors, [], 'no script errors')
  t.same(cspViolations, [], 'no CSP violations')
})
