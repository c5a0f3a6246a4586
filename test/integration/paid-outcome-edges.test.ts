import { createServer, type ServerResponse } from 'node:http'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { payerCredit } from '../../src/services/payer-credit.js'
import { decodeRequired, signFor, v2Header } from '../helpers/pay.js'
import { startTestPlatform } from '../helpers/platform.js'
import { until } from '../helpers/until.js'

const handlersDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/io-handlers')

t.test('the outcome of a paid call decides what leaves: a payment voided meanwhile, a sync settlement that throws', async (t) => {
  const held: ServerResponse[] = []
  const provider = createServer((_req, res) => void held.push(res))
  await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => provider.close(r)))
  const providers = { HOLD_URL: `http://127.0.0.1:${(provider.address() as { port: number }).port}` }
  const platform = await startTestPlatform(t, { proxy: { handlersDir, providers } })
  const { deps, proxy } = platform
  const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)
  const url = '/tollgate/toolbox/holds?tag=x'
  const required = decodeRequired((await proxy.inject(url)).headers['payment-required'] as string)
  const paid = async (app: typeof proxy) => app.inject({ url, headers: { 'payment-signature': v2Header(required, await signFor(payer, required)) } })

  t.test('a call whose payment the sweep voided while it ran is not delivered as paid', async (t) => {
    const call = paid(proxy)
    await until('the call at the provider', async () => held.length === 1)
    // what the settlement sweep does to a payment still `verified` long after its call started
    await deps.db.updateTable('payments').set({ status: 'voided', failure_reason: 'no_outcome' }).where('status', '=', 'verified').execute()
    held[0]!.end('late answer')
    const res = await call
    t.equal(res.statusCode, 503)
    t.equal(res.json().code, 'payment_not_recorded')
    t.notOk(res.headers['payment-response'], 'no receipt')
    t.notMatch(res.body, /late answer/, "the handler's output is withheld")
  })

  t.test('a payer refused for a balance cached as too low is read again once the cache is 30 s old (a top-up)', async (t) => {
    const credit = payerCredit(deps)
    const asset = deps.config.chain.usdc.address.toLowerCase()
    const who = payer.address.toLowerCase()
    const cheap = '/tollgate/toolbox/limited-by-setting?n=1'
    const req = decodeRequired((await proxy.inject(cheap)).headers['payment-required'] as string)
    const call = async () => proxy.inject({ url: cheap, headers: { 'payment-signature': v2Header(req, await signFor(payer, req)) } })
    await credit.setBalance(asset, who, 0n)
    const fresh = await call()
    t.equal(fresh.json().error, 'invalid_exact_evm_insufficient_balance', 'a balance read just now is trusted')
    await deps.redis.del(credit.keys.fresh(asset, who))
    const later = await call()
    t.equal(later.statusCode, 200, 'once it is old, the payer is read again and its funds are seen')
    t.ok(BigInt((await deps.redis.get(credit.keys.balance(asset, who)))!) > 0n, 'the cache holds the real balance')
  })

  t.test('a sync settlement that throws (RPC down) leaves the payment to the batch and answers', async (t) => {
    await deps.db.updateTable('endpoints').set({ settlement_mode: 'sync' }).where('slug', '=', 'holds').execute()
    const failing = await platform.startProxy({ handlersDir, providers, sync: { settleNow: async () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:8545')) } })
    const call = paid(failing.app)
    await until('the second call at the provider', async () => held.length === 2)
    held[1]!.end('answer')
    const res = await call
    t.equal(res.statusCode, 200, res.body)
    t.match(res.json(), { tag: 'x', answer: 'answer' })
    const receipt = JSON.parse(Buffer.from(res.headers['payment-response'] as string, 'base64').toString())
    t.match(receipt, { success: true, transaction: '' }, 'served; the transaction comes from the batch')
    const row = await deps.db.selectFrom('payments').select('status').where('id', '=', receipt.paymentId).executeTakeFirstOrThrow()
    t.equal(row.status, 'served', 'handed to the batch worker')
  })
})
