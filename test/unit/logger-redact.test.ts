import { Writable } from 'node:stream'
import { pino } from 'pino'
import t from 'tap'
import { redactPaths } from '../../src/logger.js'

t.test('credentials are redacted wherever request headers or upstream settings are logged', async (t) => {
  const lines: string[] = []
  const log = pino(
    { level: 'trace', redact: { paths: redactPaths, censor: '[redacted]' } },
    new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }),
  )
  const secret = 'SECRET-VALUE-0123456789'
  const headers = {
    authorization: `Bearer ${secret}`,
    cookie: `tg_session=${secret}`,
    'x-payment': secret,
    'payment-signature': secret,
    'x-api-key': secret,
    accept: 'application/json',
  }
  log.info({ req: { headers } }, 'as fastify logs a request')
  log.info({ headers }, 'headers at the top level')
  log.info({ request: { headers }, upstream: { headers } }, 'headers one level down')
  log.info(
    { upstream: { forward_headers: { 'x-seller-key': secret }, signingSecret: secret, signing_secret: secret } },
    'upstream settings',
  )
  log.info({ wallet: { privateKey: secret }, user: { password: secret, apiKey: secret } }, 'key fields')
  t.equal(lines.length, 5)
  for (const line of lines) t.notOk(line.includes(secret), `no secret in: ${JSON.parse(line).msg}`)
  t.ok(lines[0]!.includes('application/json'), 'other headers stay readable')
})
