import { writeFileSync, mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { createPoster, deliverDue } from '../../../src/services/events/deliver.js'
import { signatureHeader } from '../../../src/services/events/signature.js'
import { verifyWebhook, WebhookSignatureError } from '../../../src/client.js'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'
import { freePort } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'
import { startReceiver } from '../../helpers/webhook-receiver.js'
import { terminal } from '../cli/cli-io.js'

t.test('tollgate webhooks: create, list, test, deliveries, delete, verify', async (t) => {
  const { deps, app } = await accountsApp(t, { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true' })
  const port = await freePort()
  await app.listen({ host: '127.0.0.1', port })
  const u = await userWithKey(deps)
  const term = terminal({ TOLLGATE_API_URL: `http://127.0.0.1:${port}`, TOLLGATE_API_KEY: u.apiKey })
  const receiver = await startReceiver(t)
  const poster = createPoster(deps.config)
  t.teardown(() => poster.close())

  const bad = await term.run(['webhooks', 'create', '--url', receiver.url, '--events', 'payment.nope'])
  t.equal(bad.code, 3, 'the API refusal is exit 3')
  t.match(bad.err + bad.out, /events/)
  t.equal((await term.run(['webhooks', 'create', '--url', receiver.url])).code, 1, 'usage: --events missing')

  const made = await term.run(['webhooks', 'create', '--url', receiver.url, '--events', 'topup.failed', '--json'])
  t.equal(made.code, 0, made.err)
  const { id, secret } = made.json() as { id: string; secret: string }
  t.match(secret, /^whsec_/)
  const listed = await term.run(['webhooks', 'list'])
  t.match(listed.out, id)
  t.match(listed.out, /topup\.failed/)

  t.equal((await term.run(['webhooks', 'test', id])).code, 0)
  await until('the test delivery', async () => (await deliverDue(deps, poster), receiver.received.length > 0))
  const got = receiver.received[0]!
  const log = await term.run(['webhooks', 'deliveries', id])
  t.match(log.out, /webhook\.test/)
  t.match(log.out, /delivered/)

  t.test('verify: the received body and header, against a changed body, a wrong secret, an old time', async (t) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tg-wh-'))
    const file = path.join(dir, 'body.json')
    writeFileSync(file, got.raw)
    const header = got.headers['tollgate-signature'] as string
    const ok = await term.run(['webhooks', 'verify', '--header', header, '--secret', secret, '--payload-file', file])
    t.equal(ok.code, 0, ok.err)
    t.match(ok.out, `valid: webhook.test ${got.body.id}`)
    const viaStdin = await term.run(['webhooks', 'verify', '--header', header, '--json'], {
      env: { TOLLGATE_WEBHOOK_SECRET: secret },
      stdin: got.raw,
    })
    t.same(viaStdin.json(), { valid: true, id: got.body.id, type: 'webhook.test' })
    const changed = await term.run(['webhooks', 'verify', '--header', header, '--secret', secret], {
      stdin: got.raw.replace('webhook.test', 'webhook.tesT'),
    })
    t.equal(changed.code, 1)
    t.match(changed.out, /invalid: no v1 signature matches/)
    const wrong = await term.run(['webhooks', 'verify', '--header', header, '--secret', 'whsec_other'], {
      stdin: got.raw,
    })
    t.equal(wrong.code, 1)
    const old = signatureHeader(secret, got.raw, Math.floor(Date.now() / 1000) - 3600)
    const stale = await term.run(['webhooks', 'verify', '--header', old, '--secret', secret, '--json'], {
      stdin: got.raw,
    })
    t.equal(stale.code, 1)
    t.equal(stale.json().reason, 'timestamp_out_of_tolerance')
    const noSecret = await term.run(['webhooks', 'verify', '--header', header], { stdin: got.raw })
    t.equal(noSecret.code, 1)
    t.match(noSecret.err + noSecret.out, /TOLLGATE_WEBHOOK_SECRET/)
  })

  t.test('verifyWebhook() from the client package', async (t) => {
    const header = got.headers['tollgate-signature'] as string
    t.equal(verifyWebhook({ payload: got.raw, header, secret }).id, got.body.id)
    t.equal(verifyWebhook({ payload: Buffer.from(got.raw), header, secret, toleranceSeconds: 0 }).type, 'webhook.test')
    t.throws(() => verifyWebhook({ payload: got.raw, header: 'nonsense', secret }), WebhookSignatureError)
    const late = (() => {
      try {
        verifyWebhook({ payload: got.raw, header, secret, now: Math.floor(Date.now() / 1000) + 301 })
      } catch (e) {
        return e as InstanceType<typeof WebhookSignatureError>
      }
    })()
    t.equal(late?.reason, 'timestamp_out_of_tolerance', 'a signature older than the tolerance is refused')
  })

  const del = await term.run(['webhooks', 'delete', id])
  t.equal(del.code, 0)
  t.equal((await term.run(['webhooks', 'delete', id])).code, 3, 'gone: 404, exit 3')
})
