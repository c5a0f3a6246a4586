/**
 * The `upto` scheme end to end on the devnet, paid by the official `@x402/evm` upto client through
 * `@x402/fetch` (unmodified): a hosted language-model endpoint charged from the provider's reported
 * token usage, a seller upstream charged what it reports in X-Tollgate-Charge (stripped; capped at
 * the maximum), settled in the Multicall3 batch, on-chain amounts equal to the charges.
 */
import { sql } from 'kysely'
import t from 'tap'
import { decodePaymentResponseHeader, wrapFetchWithPaymentFromConfig } from '@x402/fetch'
import { UptoEvmScheme } from '@x402/evm/upto/client'
import { erc20Abi, maxUint256, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { PERMIT2_ADDRESS } from '../../../src/chain/permit2.js'
import { facilitatorFor } from '../../../src/schemes/upto/facilitator.js'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { createPublishing } from '../../../src/services/publishing/publishing.js'
import { llmSettings } from '../../helpers/llm-stand-in.js'
import { meteredUpstream, usageReportingLlm } from '../../helpers/metered.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer, walletFor } from '../../helpers/settlement.js'

t.test('upto: the official client pays usage-priced endpoints, settled for the actual charge', async (t) => {
  const origin = await meteredUpstream(t)

  const llm = await usageReportingLlm(t)
  const platform = await startTestPlatform(t, {
    env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true', TOLLGATE_MASTER_KEY: '27'.repeat(32) },
  })
  const { deps, devnet } = platform
  const db = deps.db

  // the hosted summarizer priced by usage (its seller, the platform, enables upto), and a seller's metered upstream
  await db
    .updateTable('endpoints')
    .set({ schemes: ['exact', 'upto'] })
    .where('slug', '=', 'ai-text-summarizer')
    .execute()
  const user = await createUsers(deps).create(`upto-${Date.now()}@example.com`, 'correct horse battery staple')
  const pub = createPublishing(deps)
  await pub.claimNamespace({ userId: user.id }, { namespace: 'meter', display_name: 'Meter' })
  await pub.createService({ userId: user.id }, 'meter', { name: 'svc', pay_to: devnet.accounts.receiver.address })
  await pub.createEndpoint({ userId: user.id }, 'meter', 'svc', {
    slug: 'metered',
    methods: ['GET'],
    price: '5000',
    upstream_url: origin,
    schemes: ['exact', 'upto'],
  })
  await pub.createEndpoint({ userId: user.id }, 'meter', 'svc', {
    slug: 'fixed',
    methods: ['GET'],
    price: '5000',
    upstream_url: origin,
  })
  const { url } = await platform.startProxy({ providers: llmSettings(llm.url), allowPrivateNetwork: true })

  // challenges: upto beside exact where enabled, with the maximum; the v1 body stays exact
  const res = await fetch(`${url}/meter/svc/metered`)
  const v1 = (await res.json()) as { accepts: { scheme: string }[] }
  const required = decodeRequired(res.headers.get('payment-required')!)
  t.same(
    required.accepts.map((a: { scheme: string; amount: string }) => [a.scheme, a.amount]),
    [
      ['exact', '5000'],
      ['upto', '5000'],
    ],
  )
  t.same(
    v1.accepts.map((a) => a.scheme),
    ['exact'],
    'the v1 body offers exact only',
  )
  const upto = required.accepts[1]
  const relayers = devnet.accounts.relayers.map((r) => r.address)
  t.equal(
    upto.extra.facilitatorAddress,
    facilitatorFor(required.resource.url, relayers),
    'the facilitator is the relayer the endpoint hashes to',
  )
  t.ok(relayers.includes(upto.extra.facilitatorAddress as `0x${string}`), 'one of our relayers')
  t.equal(upto.extra.assetTransferMethod, 'permit2')
  const fixed = decodeRequired((await fetch(`${url}/meter/svc/fixed`)).headers.get('payment-required')!)
  t.same(
    fixed.accepts.map((a: { scheme: string }) => a.scheme),
    ['exact'],
    'an endpoint that did not enable upto offers exact only',
  )

  const buyer = await newPayer(platform, 1_000_000n)
  const w = walletFor(platform, buyer.key as Hex)
  await w.writeContract({
    address: deps.config.chain.usdc.address,
    abi: erc20Abi,
    functionName: 'approve',
    args: [PERMIT2_ADDRESS, maxUint256],
  })
  const pay = wrapFetchWithPaymentFromConfig(fetch, {
    schemes: [{ network: 'eip155:84532', client: new UptoEvmScheme(privateKeyToAccount(buyer.key as Hex)) }],
  })
  const balance = (a: `0x${string}`) =>
    deps.chain.readContract({
      address: deps.config.chain.usdc.address,
      abi: erc20Abi,
      functionName: 'balanceOf',
      args: [a],
    })
  const receiver = devnet.accounts.receiver.address
  const before = { buyer: await balance(buyer.address), receiver: await balance(receiver) }

  // hosted: 400 tokens at 2000 per 1,000 = 800 (the maximum is the price, 1000)
  const hosted = await pay(
    `${url}/tollgate/toolbox/ai-text-summarizer?text=${encodeURIComponent('A long text. '.repeat(20))}`,
  )
  t.equal(hosted.status, 200, await hosted.clone().text())
  const hostedReceipt = decodePaymentResponseHeader(hosted.headers.get('payment-response')!)
  t.equal(hostedReceipt.amount, '800', 'the receipt carries the actual charge')

  // upstream: the seller reports 1234 of a 5000 maximum; the header does not reach the buyer
  const metered = await pay(`${url}/meter/svc/metered?charge=1234`)
  t.equal(metered.status, 200)
  t.equal(metered.headers.get('x-tollgate-charge'), null, 'the charge header is stripped')
  t.equal(decodePaymentResponseHeader(metered.headers.get('payment-response')!).amount, '1234')

  // above the maximum: capped, and the seller told (a charge_capped event)
  const over = await pay(`${url}/meter/svc/metered?charge=999999`)
  t.equal(over.status, 200)
  const overReceipt = decodePaymentResponseHeader(over.headers.get('payment-response')!)
  t.equal(overReceipt.amount, '5000', 'capped at the maximum')

  // a failed call: nothing charged
  const failed = await pay(`${url}/meter/svc/metered?charge=fail`)
  t.equal(failed.status, 500)
  t.equal(failed.headers.get('payment-response'), null)

  const rows = await db
    .selectFrom('payments')
    .select(['id', 'status', 'value', 'max_value', 'scheme', 'facilitator'])
    .where('payer', '=', buyer.address.toLowerCase())
    .orderBy('created_at')
    .execute()
  t.same(
    rows.map((r) => [r.scheme, r.status, r.value, r.max_value]),
    [
      ['upto', 'served', '800', '1000'],
      ['upto', 'served', '1234', '5000'],
      ['upto', 'served', '5000', '5000'],
      ['upto', 'voided', '5000', '5000'],
    ],
  )
  const capped = await sql<{ data: { reported: string; charged: string } }>`
    select data from payment_events where payment_id = ${rows[2]!.id} and type = 'charge_capped'`.execute(db)
  t.same(capped.rows[0]?.data, { reported: '999999', charged: '5000' }, 'the cap is recorded for the seller')

  // settlement: the batch worker settles the actual amounts through the upto proxy
  const settler = createSettler(deps, { batchSize: 50 })
  for (let i = 0; i < 10; i++) {
    await settler.runOnce()
    const open = await db
      .selectFrom('payments')
      .select('id')
      .where('payer', '=', buyer.address.toLowerCase())
      .where('status', 'in', ['served', 'settling'])
      .execute()
    if (open.length === 0) break
  }
  const settled = await db
    .selectFrom('payments')
    .select(['status', 'tx_hash'])
    .where('payer', '=', buyer.address.toLowerCase())
    .where('status', '!=', 'voided')
    .execute()
  t.same(
    settled.map((r) => r.status),
    ['settled', 'settled', 'settled'],
  )
  const spent = 800n + 1234n + 5000n
  t.equal(before.buyer - (await balance(buyer.address)), spent, 'the buyer paid exactly the reported usage')
  t.equal((await balance(receiver)) - before.receiver, spent, 'the sellers got it')
})
