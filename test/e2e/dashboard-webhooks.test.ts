import t from 'tap'
import { createPoster, deliverDue } from '../../src/services/events/deliver.js'
import { emitEvent } from '../../src/services/events/outbox.js'
import { until } from '../helpers/until.js'
import { signatureValid, startReceiver } from '../helpers/webhook-receiver.js'
import { dashboardServer, logIn, nextDialog, openBrowser } from './browser.js'

// Issue 38 in a browser: add a webhook endpoint (the secret shown once), send a test event, see it
// in the delivery log; the alerts list on the Webhooks page and on Insights.
t.test('in a browser: webhooks page, test event, delivery log, alerts', async (t) => {
  const server = await dashboardServer(t, { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true' })
  const { deps } = server
  const receiver = await startReceiver(t)
  const poster = createPoster(deps.config)
  t.teardown(() => poster.close())
  // the worker's part, run here while the page waits
  const worker = setInterval(() => void deliverDue(deps, poster).catch(() => {}), 200)
  t.teardown(() => clearInterval(worker))
  const { page, pageErrors, cspViolations } = await openBrowser(t)
  await logIn(page, server)
  await page.getByRole('link', { name: 'Webhooks' }).click()
  await page.getByRole('heading', { name: 'Webhooks' }).waitFor()

  await page.getByRole('button', { name: 'Add endpoint' }).click()
  await page.locator('#webhook-url:invalid').waitFor() // the browser asks for a URL first
  await page.getByLabel('Endpoint URL').fill(receiver.url)
  await page.getByRole('button', { name: 'Add endpoint' }).click()
  await page.getByText(/invalid value for events/).waitFor()
  await page.getByLabel('agent.cap_reached').check()
  await page.getByRole('button', { name: 'Add endpoint' }).click()
  const secret = (await page.locator('#new-secret').textContent())!
  t.match(secret, /^whsec_/)
  await page.getByRole('heading', { name: receiver.url, exact: true }).waitFor()

  await page.getByRole('button', { name: 'Send test event' }).click()
  await until('the test event received', async () => receiver.received.length > 0)
  t.ok(signatureValid(receiver.received[0]!.headers['tollgate-signature'] as string, receiver.received[0]!.raw, secret))
  await page.getByRole('button', { name: 'Refresh log' }).click()
  await page.locator('.deliveries td.delivered').first().waitFor()
  t.match(await page.locator('.deliveries').textContent(), /webhook\.test/)

  const user = await deps.db
    .selectFrom('users')
    .select('id')
    .where('email', '=', server.email)
    .executeTakeFirstOrThrow()
  await emitEvent(deps.db, {
    userId: user.id,
    type: 'agent.cap_reached',
    data: { agent: '0xabc', window: 'daily' },
  })
  await page.reload()
  await page.locator('#alerts li[data-type="agent.cap_reached"]').waitFor()
  await page.getByRole('link', { name: 'Insights' }).click()
  await page.locator('#alerts li[data-type="agent.cap_reached"]').waitFor()

  await page.getByRole('link', { name: 'Webhooks' }).click()
  nextDialog(page)
  await page.getByRole('button', { name: 'Delete' }).click()
  await page.getByText('No endpoints yet.').waitFor()
  t.same(pageErrors, [])
  t.same(cspViolations, [])
})
