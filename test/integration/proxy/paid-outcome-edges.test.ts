import { createServer, type ServerResponse } from 'node:http'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { createPayerCredit } from '../../../src/ledger/payer-credit.js'
import { decodeRequired, signFor, v2Header } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { createPublishing } from '../../../src/services/publishing/publishing.js'

/** how long the call may take to reach the provider: a bound for a stuck call, not a timing */
const HANDLER_START_MS = 150_000
const handlersDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/io-handlers')

t.test(
  'the outcome of a paid call decides what leaves: a payment voided meanwhile, a sync settlement that throws',
  async (t) => {
    const held: ServerResponse[] = []
    const provider = createServer((_req, res) => void held.push(res))
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r))
    t.teardown(() => new Promise((r) => provider.close(r)))
    const providers = { HOLD_URL: `http://127.0.0.1:${(provider.address() as { port: number }).port}` }
    const platform = await startTestPlatform(t, {
      proxy: { handlersDir, providers },
      env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true', TOLLGATE_MASTER_KEY: '42'.repeat(32) },
    })
    const { deps, proxy } = platform
    const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)
    const url = '/tollgate/toolbox/holds?tag=x'
    const required = decodeRequired((await proxy.inject(url)).headers['payment-required'] as string)
    const paid = async (app: typeof proxy) =>
      app.inject({ url, headers: { 'payment-signature': v2Header(required, await signFor(payer, required)) } })
    /** the call has reached the provider (its handler runs); a call that ends first fails with its answer */
    const atProvider = (call: ReturnType<typeof paid>, before: number) =>
      Promise.race([
        until('the call at the provider', async () => held.length === before + 1, HANDLER_START_MS),
        call.then((res) => {
          throw new Error(`the call ended before reaching the provider: ${res.statusCode} ${res.body}`)
        }),
      ])

    t.test('a hosted call is recorded once, after its handler answered: no row while it runs', async (t) => {
      const before = held.length
      const call = paid(proxy)
      // the first hosted call starts the handler processes: on a loaded machine that alone can take tens of seconds
      await atProvider(call, before)
      const payments = await deps.db
        .selectFrom('payments')
        .select('id')
        .where('payer', '=', payer.address.toLowerCase())
        .execute()
      t.equal(payments.length, 0, 'nothing is written before the handler answers')
      held[before]!.end('answer')
      const res = await call
      t.equal(res.statusCode, 200, res.body)
      const receipt = JSON.parse(Buffer.from(res.headers['payment-response'] as string, 'base64').toString())
      const events = await deps.db
        .selectFrom('payment_events')
        .select(['type', 'from_status', 'to_status'])
        .where('payment_id', '=', receipt.paymentId)
        .execute()
      t.same(
        events,
        [{ type: 'served', from_status: null, to_status: 'served' }],
        'one row, one event: recorded served',
      )
    })

    t.test('an upstream call whose payment the sweep voided while it ran is not delivered as paid', async (t) => {
      // upstream calls are recorded `verified` first (the seller gets the payment id), so the sweep can void one mid-call
      const user = await createUsers(deps).create(`seller-${Date.now()}@example.com`, 'correct horse battery staple')
      const pub = createPublishing(deps)
      await pub.claimNamespace({ userId: user.id }, { namespace: 'holdco', display_name: 'Hold Co' })
      await pub.createService({ userId: user.id }, 'holdco', {
        name: 'slow',
        pay_to: platform.devnet.accounts.receiver.address,
      })
      await pub.createEndpoint({ userId: user.id }, 'holdco', 'slow', {
        slug: 'answer',
        methods: ['GET'],
        price: '1000',
        upstream_url: providers.HOLD_URL,
      })
      await until(
        'the proxy knows the endpoint',
        async () => (await proxy.inject('/holdco/slow/answer')).statusCode === 402,
      )
      const req = decodeRequired((await proxy.inject('/holdco/slow/answer')).headers['payment-required'] as string)
      const before = held.length
      const call = proxy.inject({
        url: '/holdco/slow/answer',
        headers: { 'payment-signature': v2Header(req, await signFor(payer, req)) },
      })
      await until('the call at the upstream', async () => held.length === before + 1)
      // what the settlement sweep does to a payment still `verified` long after its call started
      await deps.db
        .updateTable('payments')
        .set({ status: 'voided', failure_reason: 'no_outcome' })
        .where('status', '=', 'verified')
        .execute()
      held[before]!.end('late answer')
      const res = await call
      t.equal(res.statusCode, 503)
      t.equal(res.json().code, 'payment_not_recorded')
      t.notOk(res.headers['payment-response'], 'no receipt')
      t.notMatch(res.body, /late answer/, "the upstream's answer is withheld")
    })

    t.test(
      'a payer refused for a balance cached as too low is read again once the cache is 30 s old (a top-up)',
      async (t) => {
        const credit = createPayerCredit(deps)
        const asset = deps.config.chain.usdc.address.toLowerCase()
        const who = payer.address.toLowerCase()
        const cheap = '/tollgate/toolbox/limited-by-setting?n=1'
        const req = decodeRequired((await proxy.inject(cheap)).headers['payment-required'] as string)
        const call = async () =>
          proxy.inject({ url: cheap, headers: { 'payment-signature': v2Header(req, await signFor(payer, req)) } })
        await credit.setBalance(asset, who, 0n)
        const fresh = await call()
        t.equal(fresh.json().error, 'invalid_exact_evm_insufficient_balance', 'a balance read just now is trusted')
        await deps.redis.del(credit.keys.fresh(asset, who))
        const later = await call()
        t.equal(later.statusCode, 200, 'once it is old, the payer is read again and its funds are seen')
        t.ok(BigInt((await deps.redis.get(credit.keys.balance(asset, who)))!) > 0n, 'the cache holds the real balance')
      },
    )

    t.test('a sync settlement that throws (RPC down) leaves the payment to the batch and answers', async (t) => {
      await deps.db.updateTable('endpoints').set({ settlement_mode: 'sync' }).where('slug', '=', 'holds').execute()
      const failing = await platform.startProxy({
        handlersDir,
        providers,
        sync: { settleNow: async () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:8545')) },
      })
      const before = held.length
      const call = paid(failing.app)
      await atProvider(call, before)
      held[before]!.end('answer')
      const res = await call
      t.equal(res.statusCode, 200, res.body)
      t.match(res.json(), { tag: 'x', answer: 'answer' })
      const receipt = JSON.parse(Buffer.from(res.headers['payment-response'] as string, 'base64').toString())
      t.match(receipt, { success: true, transaction: '' }, 'served; the transaction comes from the batch')
      const row = await deps.db
        .selectFrom('payments')
        .select('status')
        .where('id', '=', receipt.paymentId)
        .executeTakeFirstOrThrow()
      t.equal(row.status, 'served', 'handed to the batch worker')
    })
  },
)
