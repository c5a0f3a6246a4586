import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { buildWebApp } from '../../src/http/web-app.js'
import { createUsers } from '../../src/services/accounts/users.js'
import { testDeps } from '../helpers/test-env.js'
import { logIn, openBrowser } from './browser.js'

interface T {
  teardown(fn: () => unknown): void
}

/** What the web app was sent and what it answered, for each state-changing /v1 request. */
interface Seen {
  method: string
  url: string
  origin?: string
  site?: string
  sessionCookie: boolean
  status: number
  body: Record<string, unknown>
}

/** The web app listening on a free port, recording the POSTs it answers, and a user to log in as. */
async function recordingServer(t: T) {
  const deps = await testDeps(t, { TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex') })
  const app = await buildWebApp(deps, { logger: false })
  t.teardown(() => app.close())
  const seen: Seen[] = []
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.method !== 'GET' && request.url.startsWith('/v1/')) {
      const h = request.headers
      seen.push({
        method: request.method,
        url: request.url,
        origin: h.origin,
        site: h['sec-fetch-site'] as string | undefined,
        sessionCookie: /tollgate_session=ses_/.test(h.cookie ?? ''),
        status: reply.statusCode,
        body: JSON.parse(String(payload || '{}')),
      })
    }
    return payload
  })
  const base = await app.listen({ host: '127.0.0.1', port: 0 })
  const email = `xo-${randomBytes(4).toString('hex')}@example.com`
  const password = 'correct horse battery'
  await createUsers({ db: deps.db }).create(email, password)
  return { deps, base, email, password, seen }
}

/** A page on another loopback port: same site as the web app (ports do not count), another origin. */
async function otherOrigin(t: T): Promise<string> {
  const server = createServer((_req, res) =>
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end('<!doctype html><title>another origin</title><p>nothing here'),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

// issue 22 part 3, in chromium: a logged-in dashboard user opens a page on another port of the same
// host (the proxy's port, say). SameSite=Lax sends the session cookie along, since the page is
// same-site; the web app must refuse what the page asks for, and still serve the dashboard.
t.test('a page of another origin cannot act with the dashboard session; the dashboard still can', async (t) => {
  const server = await recordingServer(t)
  const { page, pageErrors, api } = await openBrowser(t)
  await logIn(page, server)
  t.match(
    server.seen.at(-1),
    { method: 'POST', url: '/v1/session', site: 'same-origin', status: 200 },
    'the login came from the dashboard itself',
  )
  const created = await api('POST', '/v1/agents', { name: 'victim bot' })
  t.equal(created.status, 201, 'the dashboard page itself creates an agent')
  const address = (created.body as { address: string }).address
  t.equal((await api('POST', `/v1/agents/${address}/keys`, { name: 'mine' })).status, 201, 'and a key for it')
  const keyCount = async () =>
    Number(
      (
        await server.deps.db
          .selectFrom('agent_keys')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    )
  const keysBefore = await keyCount()

  const evil = await otherOrigin(t)
  await page.goto(`${evil}/`)
  // the requests the issue made, as a page can make them: no body and no custom header (so no CORS
  // preflight), `credentials: 'include'`; no-cors, as the app sends no CORS headers (the page could
  // not read the answer anyway: the effect is what counts)
  for (const path of [`/v1/agents/${address}/keys`, '/v1/funding-wallet/faucet']) {
    const url = `${server.base}${path}`
    const [response] = await Promise.all([
      page.waitForResponse(url),
      page.evaluate(
        (url) => fetch(url, { method: 'POST', credentials: 'include', mode: 'no-cors' }).then(() => 'sent'),
        url,
      ),
    ])
    t.equal(response.status(), 403, `POST ${path} from ${evil}`)
    const s = server.seen.at(-1)!
    t.match(
      s,
      { method: 'POST', url: path, origin: evil, site: 'same-site', sessionCookie: true },
      'chromium sent the session cookie, Origin and Sec-Fetch-Site: same-site',
    )
    t.equal(s.body.code, 'cross_origin_request')
    t.match(
      s.body.message,
      `this request comes from ${evil} (Sec-Fetch-Site: same-site), not from the dashboard (${new URL(server.deps.config.dashboardUrl).origin}):`,
    )
  }
  t.equal(await keyCount(), keysBefore, 'no agent key was made')

  // back on the dashboard, the same session still works
  await page.goto(`${server.base}/dashboard`)
  await page.getByRole('heading', { name: 'Overview', exact: true }).waitFor()
  t.equal(
    (await api('POST', `/v1/agents/${address}/keys`, { name: 'mine too' })).status,
    201,
    'the dashboard page still changes things',
  )
  t.equal(await keyCount(), keysBefore + 1)
  t.same(pageErrors, [], 'no script errors')
})
