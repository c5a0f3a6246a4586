import { randomBytes } from 'node:crypto'
import { chromium, type Page } from 'playwright-core'
import type { Deps } from '../../src/deps.js'
import { buildWebApp } from '../../src/http/web-app.js'
import { createUsers } from '../../src/services/accounts/users.js'
import { testDeps } from '../helpers/test-env.js'

// Debian's chromium (`apt-get install chromium`; .ci/run installs it when this directory has tests)
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

interface T {
  teardown(fn: () => unknown): void
}

/** The web role on `deps`, listening on a free port (the browser needs a real socket), and a user to log in as. */
export async function serveDashboard(t: T, deps: Deps) {
  const app = await buildWebApp(deps, { logger: false })
  t.teardown(() => app.close())
  const base = await app.listen({ host: '127.0.0.1', port: 0 })
  const email = `dash-${randomBytes(4).toString('hex')}@example.com`
  const password = 'correct horse battery'
  await createUsers({ db: deps.db }).create(email, password)
  return { app, base, email, password }
}

/** A web app on a fresh schema with a master key (its chain RPC does not answer: balances are 503), `env` added. */
export async function dashboardServer(t: T, env: Record<string, string> = {}) {
  const deps = await testDeps(t, { TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex'), ...env })
  return { deps, ...(await serveDashboard(t, deps)) }
}

/**
 * A chromium page that records script errors and CSP violations, with `api()` to call the user
 * API from the page (same origin, the session cookie) when a test checks an effect.
 */
export async function openBrowser(t: T) {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu'],
  })
  t.teardown(() => browser.close())
  const page = await browser.newPage()
  page.setDefaultTimeout(15_000)
  const pageErrors: string[] = []
  const cspViolations: string[] = []
  page.on('pageerror', (err) => pageErrors.push(err.message))
  page.on('console', (m) => void (/Content Security Policy/i.test(m.text()) && cspViolations.push(m.text())))
  const api = (method: string, path: string, body?: unknown) =>
    page.evaluate(
      async ([method, path, body]) => {
        const res = await fetch(path as string, {
          method: method as string,
          headers: body ? { 'content-type': 'application/json' } : {},
          body: body ? JSON.stringify(body) : undefined,
        })
        return { status: res.status, body: await res.json().catch(() => null) }
      },
      [method, path, body] as const,
    )
  return { page, pageErrors, cspViolations, api }
}

/** Logs in through the login screen and waits for the first screen. */
export async function logIn(page: Page, server: { base: string; email: string; password: string }) {
  await page.goto(`${server.base}/dashboard`)
  await page.getByLabel('Email').fill(server.email)
  await page.getByLabel('Password').fill(server.password)
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.getByRole('heading', { name: 'Overview', exact: true }).waitFor()
}

/** Accepts (or dismisses) the next confirm() the page shows. */
export function nextDialog(page: Page, accept = true) {
  page.once('dialog', (d) => void (accept ? d.accept() : d.dismiss()))
}
