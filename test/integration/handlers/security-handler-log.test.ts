import path from 'node:path'
import { Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { decodeRequired, signFor, v2Header } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')

// A handler's error message is logged for the operator, never sent to the buyer. Should it carry a
// provider URL with the key in its path or query, the log keeps the host only.
t.test("a failing handler's message is logged without the URL secrets it carries", async (t) => {
  const lines: string[] = []
  const logStream = new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) })
  const platform = await startTestPlatform(t, {
    proxy: { handlersDir: fixtures, logger: true, logStream },
    env: { LOG_LEVEL: 'warn' },
  })
  const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)
  const url = '/tollgate/toolbox/throws'
  const required = decodeRequired((await platform.proxy.inject(url)).headers['payment-required'] as string)
  const res = await platform.proxy.inject({
    url,
    headers: { 'payment-signature': v2Header(required, await signFor(payer, required)) },
  })
  t.equal(res.statusCode, 502)
  t.notMatch(res.body, /internal detail|KEY-IN/, 'the buyer gets none of it')
  const failed = lines
    .map((l) => JSON.parse(l) as { msg: string; err?: unknown })
    .find((l) => l.msg === 'handler failed')
  t.ok(failed, 'the failure is logged')
  t.match(
    JSON.stringify(failed),
    /internal detail that must not reach the buyer \(https:\/\/provider\.example\//,
    'with its message and the host',
  )
  t.notMatch(lines.join(''), /KEY-IN-PATH|KEY-IN-QUERY/, 'but not the key in the path or query')
})
