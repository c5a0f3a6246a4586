/**
 * Every scheme the endpoint offers, over A2A: an endpoint that offers `deferred` lists the voucher
 * requirement in its task's PaymentRequired, and a voucher in `x402.payment.payload` pays the
 * message (the official A2A client; the voucher signed with viem as in the MCP deferred test, since
 * there is no official deferred client).
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { TaskState } from '@a2a-js/sdk'
import { ClientFactory } from '@a2a-js/sdk/client'
import { getAddress } from 'viem'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import type { Challenge } from '../../../src/x402/challenge.js'
import { send, userMessage } from '../../helpers/a2a.js'
import { deferredBuyer, voucherWire } from '../../helpers/deferred-buyer.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')

t.test('a paid A2A message with a deferred voucher', async (t) => {
  const platform = await startTestPlatform(t, { proxy: { handlersDir: fixtures } })
  const { deps, devnet } = platform
  const seller = getAddress(devnet.accounts.receiver.address)
  await deps.db
    .updateTable('endpoints')
    .set({ schemes: ['exact', 'deferred'] })
    .where('slug', '=', 'echo')
    .execute()
  await announceRegistryChange(deps)
  const client = await new ClientFactory().createFromUrl(
    `${platform.proxyUrl}/tollgate/toolbox/a2a/.well-known/agent-card.json`,
    '',
  )

  const challenge = await until('the skill offers deferred', async () => {
    const task = await send(client, userMessage({ skill: 'echo', input: { msg: 'hi' } }))
    const pr = task.status?.message?.metadata?.['x402.payment.required'] as Challenge['v2'] | undefined
    return task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED && pr?.accepts.length === 2 && { task, pr }
  })
  t.same(
    challenge.pr.accepts.map((a) => a.scheme),
    ['exact', 'deferred'],
    'every scheme the endpoint offers',
  )
  const deferred = challenge.pr.accepts[1]!
  t.equal(deferred.payTo, seller)

  const buyer = await deferredBuyer(devnet, 10n ** 6n)
  await buyer.deposit(seller, 100_000n)
  const voucher = buyer.voucher(deferred)
  const payment = {
    x402Version: 2,
    resource: challenge.pr.resource,
    accepted: deferred,
    payload: { voucher: voucherWire(voucher), signature: await buyer.sign(voucher) },
  }
  const task = await send(
    client,
    userMessage({ taskId: challenge.task.id, metadata: { 'x402.payment.payload': payment } }),
  )
  t.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(task.status?.message?.metadata))
  t.same(task.artifacts[0]?.parts[0]?.content, { $case: 'data', value: { echo: { msg: 'hi' } } })
  const receipt = (task.status?.message?.metadata?.['x402.payment.receipts'] as Array<{ payer: string }>)[0]!
  t.equal(receipt.payer.toLowerCase(), buyer.address.toLowerCase())
  const payments = await deps.db
    .selectFrom('payments')
    .select(['scheme', 'value'])
    .where('payer', '=', buyer.address.toLowerCase())
    .execute()
  t.match(payments, [{ scheme: 'deferred', value: '1000' }], 'a deferred payment for the voucher')
})
