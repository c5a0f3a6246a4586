import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { decodeRequired, signFor, v2Header } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'

const handlersDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/io-handlers')

t.test("a hosted handler's input errors keep their status through the proxy, and cost nothing", async (t) => {
  const platform = await startTestPlatform(t, { proxy: { handlersDir } })
  const { deps, proxy } = platform
  const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)
  const required = decodeRequired(
    (await proxy.inject('/tollgate/toolbox/picky?host=a')).headers['payment-required'] as string,
  )
  const call = async (host: string) =>
    proxy.inject({
      url: `/tollgate/toolbox/picky?host=${encodeURIComponent(host)}`,
      headers: { 'payment-signature': v2Header(required, await signFor(payer, required)) },
    })

  const unusable = await call('nowhere.invalid')
  t.equal(unusable.statusCode, 422, 'well-formed but unusable: 422')
  t.match(
    unusable.json(),
    {
      code: 'unusable_parameter',
      param: 'host',
      message: 'the value of host cannot be used: nowhere.invalid does not resolve',
    },
    'the field is named once',
  )
  const invalid = await call(' ')
  t.equal(invalid.statusCode, 400)
  t.match(invalid.json(), {
    code: 'invalid_parameter',
    param: 'host',
    message: 'invalid value for host: host must not be blank',
  })
  t.equal((await call('example.com')).statusCode, 200)
  const rows = await deps.db
    .selectFrom('payments')
    .select('status')
    .where('payer', '=', payer.address.toLowerCase())
    .orderBy('created_at')
    .execute()
  t.same(
    rows.map((r) => r.status),
    ['voided', 'voided', 'served'],
  )
})
