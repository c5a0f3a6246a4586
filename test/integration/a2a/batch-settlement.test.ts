/**
 * `batch-settlement` over A2A (x402 specs/transports-v2/a2a.md): the official A2A client sends a
 * message naming a hosted skill, and the official `@x402/evm` batch-settlement client scheme
 * (through `@x402/core`'s x402Client) signs the payment in `x402.payment.payload`: the deposit with
 * the first paid message, cumulative vouchers after, the receipt in `x402.payment.receipts`; a
 * replayed voucher fails its task and charges nothing.
 */
import { TaskState } from '@a2a-js/sdk'
import { ClientFactory } from '@a2a-js/sdk/client'
import { x402Client } from '@x402/core/client'
import type { PaymentPayload, PaymentRequired, SettleResponse } from '@x402/core/types'
import { toClientEvmSigner } from '@x402/evm'
import { BatchSettlementEvmScheme } from '@x402/evm/batch-settlement/client'
import t from 'tap'
import { createPublicClient, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { send, userMessage } from '../../helpers/a2a.js'
import { MASTER_KEY } from '../../helpers/accounts.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer } from '../../helpers/settlement.js'

t.test('batch-settlement over A2A with the official clients', async (t) => {
  const platform = await startTestPlatform(t, { env: { TOLLGATE_MASTER_KEY: MASTER_KEY } })
  const { deps, devnet } = platform
  const client = await new ClientFactory().createFromUrl(
    `${platform.proxyUrl}/tollgate/toolbox/a2a/.well-known/agent-card.json`,
    '',
  )
  const payer = await newPayer(platform, 1_000_000n)
  const signer = toClientEvmSigner(
    privateKeyToAccount(payer.key),
    createPublicClient({ transport: http(devnet.rpcUrl) }),
  )
  const x402 = new x402Client((_v, accepts) => accepts.find((a) => a.scheme === 'batch-settlement') ?? accepts[0]!)
  x402.register(
    `eip155:${devnet.chainId}`,
    new BatchSettlementEvmScheme(signer, { depositPolicy: { depositMultiplier: 10 } }),
  )
  const input = { text: 'abc', algorithms: ['sha256'] }

  /** one paid message as an A2A payer sends it: the challenge task, then the payment on that task */
  async function pay() {
    const challenge = await send(client, userMessage({ skill: 'hash-generator', input }))
    t.equal(challenge.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED)
    const required = challenge.status?.message?.metadata?.['x402.payment.required'] as unknown as PaymentRequired
    const payload = await x402.createPaymentPayload(required)
    const task = await send(
      client,
      userMessage({ taskId: challenge.id, metadata: { 'x402.payment.payload': payload } }),
    )
    const receipts = task.status?.message?.metadata?.['x402.payment.receipts'] as SettleResponse[] | undefined
    if (task.status?.state === TaskState.TASK_STATE_COMPLETED && receipts?.[0])
      await x402.handlePaymentResponse({
        paymentPayload: payload,
        requirements: payload.accepted,
        settleResponse: receipts[0],
      })
    return { required, payload, task, receipt: receipts?.[0] as (SettleResponse & { extra?: any }) | undefined }
  }

  const first = await pay()
  t.ok(
    first.required.accepts.some((a) => a.scheme === 'batch-settlement'),
    'the skill offers batch-settlement over A2A',
  )
  t.equal(first.task.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(first.task.status?.message))
  t.equal((first.payload.payload as { type: string }).type, 'deposit', 'the first paid message deposits')
  t.match(
    first.receipt,
    { success: true, amount: '10000', transaction: /^0x[0-9a-f]{64}$/ },
    'the deposit in the receipt',
  )
  t.match(first.receipt?.extra, { channelState: { chargedCumulativeAmount: '1000' } })
  const channelId = first.receipt!.extra.channelState.channelId as string

  let last: PaymentPayload = first.payload
  for (let i = 2; i <= 4; i++) {
    const r = await pay()
    t.equal(r.task.status?.state, TaskState.TASK_STATE_COMPLETED, `message ${i}`)
    t.equal((r.payload.payload as { type: string }).type, 'voucher')
    t.match(r.receipt, { transaction: '', extra: { channelState: { chargedCumulativeAmount: String(i * 1000) } } })
    last = r.payload
  }

  // the last voucher again, on a new task: refused, its task failed, nothing charged
  const again = await send(client, userMessage({ skill: 'hash-generator', input }))
  const replay = await send(client, userMessage({ taskId: again.id, metadata: { 'x402.payment.payload': last } }))
  t.equal(replay.status?.state, TaskState.TASK_STATE_FAILED, 'a replayed voucher fails its task')
  t.equal(replay.status?.message?.metadata?.['x402.payment.status'], 'payment-failed')

  const rows = await deps.db
    .selectFrom('payments')
    .select(['scheme', 'status', 'value'])
    .where('payer', '=', payer.address.toLowerCase())
    .execute()
  t.equal(rows.length, 4, 'each paid message is in the history once')
  t.ok(rows.every((r) => r.scheme === 'batch-settlement' && r.status === 'served' && r.value === '1000'))
  const ch = await deps.db
    .selectFrom('batch_channels')
    .select(['charged'])
    .where('channel_id', '=', channelId)
    .executeTakeFirstOrThrow()
  t.equal(ch.charged, '4000', 'the channel charged the four messages, not the replay')
})
