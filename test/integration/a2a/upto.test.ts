/**
 * `upto` over A2A with the official clients, unmodified: the A2A SDK's client asks a usage-priced
 * skill (a seller upstream that reports its charge in X-Tollgate-Charge), the task's PaymentRequired
 * offers upto beside exact, the official `@x402/evm` upto client (through `@x402/core`'s x402Client)
 * signs the maximum, and the task completes with the actual charge in `x402.payment.receipts`, the
 * ledger and, once settled, on chain (a report above the maximum is capped at it); the same payment
 * sent again is a failed task.
 */
import t from 'tap'
import { TaskState, type Task } from '@a2a-js/sdk'
import { ClientFactory } from '@a2a-js/sdk/client'
import { x402Client } from '@x402/core/client'
import type { PaymentRequired } from '@x402/core/types'
import { UptoEvmScheme } from '@x402/evm/upto/client'
import { erc20Abi, maxUint256, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { PERMIT2_ADDRESS } from '../../../src/chain/permit2.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { send, userMessage } from '../../helpers/a2a.js'
import { meteredUpstream } from '../../helpers/metered.js'
import { startSellerPlatform } from '../../helpers/seller.js'
import { newPayer, settleAllOf, walletFor } from '../../helpers/settlement.js'
import { until } from '../../helpers/until.js'

const MAX = 5000n
const metaOf = (task: Task) => (task.status?.message?.metadata ?? {}) as Record<string, unknown>
interface Receipt {
  success: boolean
  payer: string
  network: string
  paymentId: string
  amount?: string
}

t.test('the official A2A client pays a usage-priced skill with the official upto client', async (t) => {
  const origin = await meteredUpstream(t)
  const { platform, pub, who } = await startSellerPlatform(t, {
    namespace: 'meter',
    service: 'svc',
    proxy: { allowPrivateNetwork: true },
  })
  const { deps, devnet } = platform
  await pub.createEndpoint(who, 'meter', 'svc', {
    slug: 'metered',
    methods: ['GET'],
    price: MAX.toString(),
    upstream_url: origin,
    schemes: ['exact', 'upto'],
  })
  await announceRegistryChange(deps)
  const cardUrl = `${platform.proxyUrl}/meter/svc/a2a/.well-known/agent-card.json`
  await until('the proxy serves the service as an agent', async () => (await fetch(cardUrl)).ok)
  const client = await new ClientFactory().createFromUrl(cardUrl, '')

  const buyer = await newPayer(platform, 100_000n)
  await walletFor(platform, buyer.key).writeContract({
    address: devnet.usdcAddress,
    abi: erc20Abi,
    functionName: 'approve',
    args: [PERMIT2_ADDRESS, maxUint256],
  })
  // only the upto scheme is registered, so the x402 client picks the upto requirement
  const x402 = new x402Client().register('eip155:84532', new UptoEvmScheme(privateKeyToAccount(buyer.key)))
  const balance = (a: Address) =>
    deps.chain.readContract({ address: devnet.usdcAddress, abi: erc20Abi, functionName: 'balanceOf', args: [a] })
  const ledger = () =>
    deps.db
      .selectFrom('payments')
      .select(['id', 'scheme', 'status', 'value', 'max_value'])
      .where('payer', '=', buyer.address.toLowerCase())
      .orderBy('created_at')
      .execute()

  // the challenge: input-required, payment-required, upto offered with the maximum
  const challenge = await send(client, userMessage({ skill: 'metered', input: { charge: '1234' } }))
  t.equal(challenge.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED)
  t.equal(metaOf(challenge)['x402.payment.status'], 'payment-required')
  const required = metaOf(challenge)['x402.payment.required'] as PaymentRequired
  t.same(
    required.accepts.map((a) => [a.scheme, a.amount]),
    [
      ['exact', MAX.toString()],
      ['upto', MAX.toString()],
    ],
    'upto is offered beside exact, for the maximum',
  )
  t.equal(required.resource.url, `${platform.proxyUrl}/meter/svc/metered`)

  // the payment: the upto client signs the maximum; the task completes with the actual charge
  const payment = await x402.createPaymentPayload(required)
  t.equal(payment.accepted.scheme, 'upto')
  const signedMax = BigInt(
    (payment.payload as { permit2Authorization: { permitted: { amount: string } } }).permit2Authorization.permitted
      .amount,
  )
  t.equal(signedMax, MAX, 'the signed maximum')
  const before = await balance(buyer.address)
  const paid = await send(
    client,
    userMessage({
      taskId: challenge.id,
      metadata: { 'x402.payment.status': 'payment-submitted', 'x402.payment.payload': payment },
    }),
  )
  t.equal(paid.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(metaOf(paid)))
  t.equal(paid.id, challenge.id, 'the same task')
  t.same(paid.artifacts[0]?.parts[0]?.content, { $case: 'data', value: { upstream: 'ok' } })
  t.equal(metaOf(paid)['x402.payment.status'], 'payment-completed')
  const receipts = metaOf(paid)['x402.payment.receipts'] as Receipt[]
  t.equal(receipts.length, 1)
  const receipt = receipts[0]!
  t.match(receipt, { success: true, network: 'eip155:84532', amount: '1234' }, 'the charge the endpoint reported')
  t.ok(BigInt(receipt.amount!) <= signedMax, 'no more than the signed maximum')
  t.equal(receipt.payer.toLowerCase(), buyer.address.toLowerCase())
  const rows = await ledger()
  t.same(
    rows.map((r) => [r.id, r.scheme, r.status, r.value, r.max_value]),
    [[receipt.paymentId, 'upto', 'served', '1234', MAX.toString()]],
    'the ledger: an upto payment for the charge, with its maximum',
  )

  // the same payment again, in a new task: failed, nothing more recorded
  const replay = await send(
    client,
    userMessage({ skill: 'metered', input: { charge: '1' }, metadata: { 'x402.payment.payload': payment } }),
  )
  t.equal(replay.status?.state, TaskState.TASK_STATE_FAILED, JSON.stringify(metaOf(replay)))
  t.equal(metaOf(replay)['x402.payment.status'], 'payment-failed')
  t.equal(metaOf(replay)['x402.payment.error'], 'permit2_invalid_nonce')
  t.match(metaOf(replay)['x402.payment.receipts'], [{ success: false, transaction: '' }])
  t.equal((await ledger()).length, 1, 'nothing more recorded')

  // a report above the maximum: charged the maximum, never more than signed
  const over = await send(client, userMessage({ skill: 'metered', input: { charge: '999999' } }))
  const overPayment = await x402.createPaymentPayload(metaOf(over)['x402.payment.required'] as PaymentRequired)
  const capped = await send(client, userMessage({ taskId: over.id, metadata: { 'x402.payment.payload': overPayment } }))
  t.equal(capped.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(metaOf(capped)))
  t.match(metaOf(capped)['x402.payment.receipts'], [{ success: true, amount: MAX.toString() }], 'capped')
  t.same(
    (await ledger()).map((r) => [r.scheme, r.value, r.max_value]),
    [
      ['upto', '1234', MAX.toString()],
      ['upto', MAX.toString(), MAX.toString()],
    ],
  )

  // settled: the chain moved the charges, not the maxima
  await settleAllOf(deps, buyer.address)
  t.equal(before - (await balance(buyer.address)), 1234n + MAX, 'the buyer paid the reported charges')
})
