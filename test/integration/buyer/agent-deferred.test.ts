/**
 * Agent wallets pay `deferred` (POST /v1/agent/payments, through wrapFetch as `tollgate fetch` and
 * the MCP tools do): vouchers from the custodial key, a deposit from the agent's wallet into the
 * escrow when its balance there is short, caps counting each call's price (never the aggregate),
 * the allowlist, and the preview.
 */
import t from 'tap'
import { createPublicClient, getAddress, http, type Address } from 'viem'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { PaymentRefusedError, wrapFetch } from '../../../src/client.js'
import { deferredEscrowAbi } from '../../../src/schemes/deferred/escrow-abi.js'
import { DeferredCollector } from '../../../src/services/deferred-collect/collector.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { until } from '../../helpers/until.js'

const ECHO = '/tollgate/toolbox/echo?msg=hi'
const PRICE = 1000n
const p = await startBuyerPlatform(t)
const { deps, proxy, devnet } = p
const seller = getAddress(devnet.accounts.receiver.address)
const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl) })
const escrowBalance = async (buyer: Address) =>
  (
    await pub.readContract({
      address: devnet.deferredEscrowAddress,
      abi: deferredEscrowAbi,
      functionName: 'getAccount',
      args: [buyer, seller, devnet.usdcAddress],
    })
  ).balance
const walletBalance = (who: Address) =>
  pub.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [who] })

await deps.db
  .updateTable('endpoints')
  .set({ schemes: ['exact', 'deferred'] })
  .where('slug', '=', 'echo')
  .execute()
await announceRegistryChange(deps)
await until(
  'the proxy offers deferred',
  async () => decodeRequired((await proxy.inject(ECHO)).headers['payment-required'] as string).accepts.length === 2,
)
const url = `${p.proxyUrl}${ECHO}`
const rowsOf = (agentId: string) =>
  deps.db
    .selectFrom('agent_payments')
    .select(['scheme', 'amount', 'status'])
    .where('agent_id', '=', agentId)
    .orderBy('created_at')
    .execute()

t.test(
  'an agent pays vouchers: one deposit from its wallet, the aggregate grows, the collector settles it',
  async (t) => {
    const agent = await p.agent({ fund: 1_000_000n })
    const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key })
    for (let i = 0; i < 5; i++) {
      const res = await pay(url)
      t.equal(res.status, 200, `call ${i}`)
      t.match(res.payment, {
        scheme: 'deferred',
        header: 'PAYMENT-SIGNATURE',
        amount: '1000',
        voucher: { nonce: String(i), valueAggregate: String(BigInt(i + 1) * PRICE) },
      })
      t.equal(
        res.payment!.deposit,
        i === 0 ? String(100n * PRICE) : undefined,
        i === 0 ? 'the first deposits 100 x the price' : 'no deposit after',
      )
    }
    t.equal(await escrowBalance(agent.address), 100n * PRICE)
    t.equal(await walletBalance(agent.address), 1_000_000n - 100n * PRICE, 'the deposit came from the agent wallet')
    t.same(
      await rowsOf(agent.id),
      Array(5).fill({ scheme: 'deferred', amount: '1000', status: 'accepted' }),
      'each call counted at its price',
    )
    await new DeferredCollector(deps, {
      escrow: devnet.deferredEscrowAddress,
      log: { info() {}, warn() {}, error() {} },
    }).runOnce({ force: true })
    const settled = await deps.db
      .selectFrom('payments')
      .select('status')
      .where('payer', '=', agent.address.toLowerCase())
      .execute()
    t.same(
      settled.map((r) => r.status),
      Array(5).fill('settled'),
    )
    t.equal(await escrowBalance(agent.address), 95n * PRICE)
  },
)

t.test(
  'caps apply to each increment: over the cap refused with nothing signed; the aggregate is not counted',
  async (t) => {
    const small = await p.agent({ fund: 1_000_000n, caps: { per_transaction: '999' } })
    const refused = await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: small.key })(url).catch((e) => e)
    t.type(refused, PaymentRefusedError)
    t.match(refused, { code: 'spend_cap_exceeded', details: { cap: 'per_transaction' } })
    t.same(await rowsOf(small.id), [], 'nothing signed')
    t.equal(await escrowBalance(small.address), 0n, 'nothing deposited')

    const perCall = await p.agent({ fund: 1_000_000n, caps: { per_transaction: '1000', daily: '3000' } })
    const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: perCall.key })
    for (let i = 0; i < 3; i++)
      t.match(
        (await pay(url)).payment,
        { scheme: 'deferred', voucher: { valueAggregate: String(BigInt(i + 1) * PRICE) } },
        `call ${i}: the aggregate passes the per-transaction cap`,
      )
    const overDaily = await pay(url).catch((e) => e)
    t.match(
      overDaily,
      { code: 'spend_cap_exceeded', details: { cap: 'daily' } },
      'the fourth call is over the daily cap',
    )
    t.equal((await rowsOf(perCall.id)).length, 3, 'nothing signed for it')
  },
)

t.test('the allowlist applies to vouchers', async (t) => {
  const picky = await p.agent({ fund: 1_000_000n, allow: [{ kind: 'namespace', value: 'someone-else' }] })
  const refused = await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: picky.key })(url).catch((e) => e)
  t.match(refused, { code: 'seller_not_allowed' })
  t.same(await rowsOf(picky.id), [])
  const allowed = await p.agent({ fund: 1_000_000n, allow: [{ kind: 'namespace', value: 'tollgate' }] })
  t.match((await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: allowed.key })(url)).payment, { scheme: 'deferred' })
})

t.test('the preview shows the scheme and the deposit it would make', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const challenge = (await proxy.inject(ECHO)).headers['payment-required'] as string
  const res = await fetch(`${p.webUrl}/v1/agent/payments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${agent.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url, challenge, dry_run: true, deposit_amount: '5000' }),
  })
  t.equal(res.status, 200)
  t.match(await res.json(), {
    object: 'agent_payment_preview',
    would_pay: { scheme: 'deferred', amount: '1000', deposit: '5000' },
    refusal: null,
  })
  const bad = await fetch(`${p.webUrl}/v1/agent/payments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${agent.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url, challenge, deposit_amount: '10' }),
  })
  t.match(await bad.json(), { code: 'invalid_parameter', param: 'deposit_amount' })
  t.same(await rowsOf(agent.id), [])
})
