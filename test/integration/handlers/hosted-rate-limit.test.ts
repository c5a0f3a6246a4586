import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { decodeRequired, signFor, v2Header } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'

const handlersDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/io-handlers')

t.test(
  "a hosted handler's own rate limit holds across proxies; refused calls are not recorded or charged",
  async (t) => {
    const platform = await startTestPlatform(t, { proxy: { handlersDir } })
    const { deps, proxy } = platform
    const second = await platform.startProxy({ handlersDir })
    const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)
    const url = '/tollgate/toolbox/limited?n=7'
    const required = decodeRequired((await proxy.inject(url)).headers['payment-required'] as string)
    const pay = async (app: typeof proxy) =>
      app.inject({ url, headers: { 'payment-signature': v2Header(required, await signFor(payer, required)) } })

    const codes = [(await pay(proxy)).statusCode, (await pay(second.app)).statusCode, (await pay(proxy)).statusCode]
    t.same(codes, [200, 200, 200])
    const over = await pay(second.app)
    t.equal(over.statusCode, 429, 'the fourth paid call within the hour, on the other proxy')
    t.equal(over.json().code, 'rate_limited')
    t.equal(over.headers['ratelimit-policy'], '3;w=3600')
    t.ok(Number(over.headers['retry-after']) > 0)
    const rows = await deps.db
      .selectFrom('payments')
      .select('status')
      .where('payer', '=', payer.address.toLowerCase())
      .execute()
    t.same(
      rows.map((r) => r.status),
      ['served', 'served', 'served'],
      'the refused call left no payment',
    )
  },
)

t.test('a rate limit decided by the provider settings applies only where they call for it', async (t) => {
  const platform = await startTestPlatform(t, { proxy: { handlersDir, providers: { LIMIT_PER_HOUR: '2' } } })
  const { deps, proxy } = platform
  const unlimited = await platform.startProxy({ handlersDir, providers: {} })
  const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)
  const url = '/tollgate/toolbox/limited-by-setting?n=1'
  const required = decodeRequired((await proxy.inject(url)).headers['payment-required'] as string)
  const pay = async (app: typeof proxy) =>
    app.inject({ url, headers: { 'payment-signature': v2Header(required, await signFor(payer, required)) } })

  const first = await pay(proxy)
  t.same(
    first.json(),
    { ok: true, n: 1, settings: [] },
    'a handler that reaches nothing outside is not handed the settings',
  )
  t.equal((await pay(proxy)).statusCode, 200)
  const over = await pay(proxy)
  t.equal(over.statusCode, 429, 'the third call on the proxy whose settings set two an hour')
  t.equal(over.headers['ratelimit-policy'], '2;w=3600')
  t.same(
    [(await pay(unlimited.app)).statusCode, (await pay(unlimited.app)).statusCode],
    [200, 200],
    'a proxy without the setting has no limit',
  )
  const rows = await deps.db
    .selectFrom('payments')
    .select('status')
    .where('payer', '=', payer.address.toLowerCase())
    .execute()
  t.equal(rows.length, 4, 'only the refused call left no payment')
})
