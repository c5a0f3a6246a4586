/**
 * A buyer starts a timed withdrawal of its `batch-settlement` channel and keeps calling, paid by the
 * official `@x402/evm` client through `@x402/fetch`, on the devnet with anvil time travel. A call
 * served before the claim worker has seen the withdrawal is claimed in that worker run; from then on
 * the channel's vouchers are refused (`invalid_batch_settlement_evm_withdrawal_pending`), up to the
 * withdrawal's end, when the payer's `finalizeWithdraw` races any call served late. The receiver gets
 * exactly what the served calls cost, the payer exactly the rest.
 */
import t from 'tap'
import { createTestClient, erc20Abi, http, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { DEVNET_USDC_ADDRESS } from '../../../src/chain/devnet.js'
import { BATCH_SETTLEMENT_ADDRESS } from '../../../src/chain/batch-settlement/addresses.js'
import { batchSettlementAbi } from '../../../src/chain/batch-settlement/abi.js'
import { configOfRow, normalizeConfig, readChannel } from '../../../src/chain/batch-settlement/channel.js'
import { BatchClaimer } from '../../../src/services/batch-claim/claimer.js'
import { batchBuyer, receiptOf } from '../../helpers/batch-buyer.js'
import { chainClients } from '../../helpers/batch-channel.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer, paidPath } from '../../helpers/settlement.js'

const quiet = { info() {}, warn() {}, error() {} }
const FUNDED = 1_000_000n

t.test('a withdrawal pending: every served call reaches the receiver, the payer gets the rest', async (t) => {
  const platform = await startTestPlatform(t, { env: { TOLLGATE_MASTER_KEY: '36'.repeat(32) } })
  const { deps, devnet, proxyUrl } = platform
  const url = `${proxyUrl}${paidPath}`
  const { pub, wallet } = chainClients(devnet)
  const usdcOf = (who: Address) =>
    pub.readContract({ address: DEVNET_USDC_ADDRESS, abi: erc20Abi, functionName: 'balanceOf', args: [who] })
  const claimer = new BatchClaimer(deps, { log: quiet })
  const payer = await newPayer(platform, FUNDED)
  const buyer = batchBuyer(platform, payer.key)

  // every answer to a paid call: what it was charged, summed over the served ones
  let served = 0n
  const call = async () => {
    const res = await buyer.pay(url)
    if (res.status === 200) served += BigInt(receiptOf(res).extra!.chargedAmount!)
    return res
  }
  for (let i = 1; i <= 3; i++) t.equal((await call()).status, 200, `call ${i}`)
  const row = await deps.db.selectFrom('batch_channels').selectAll().executeTakeFirstOrThrow()
  const channelId = row.channel_id as Hex
  // nothing is claimed or settled before the worker runs
  const receiver = row.receiver as Address
  const receiverBefore = await usdcOf(receiver)
  const config = normalizeConfig(configOfRow(row))

  // the payer starts a timed withdrawal of everything unclaimed
  const payerWallet = wallet(privateKeyToAccount(payer.key))
  const send = async (functionName: 'initiateWithdraw' | 'finalizeWithdraw', args: readonly unknown[]) => {
    const hash = await payerWallet.writeContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: batchSettlementAbi,
      functionName,
      args: args as never,
    })
    return (await pub.waitForTransactionReceipt({ hash })).status
  }
  const onChain = await readChannel(pub, channelId)
  t.equal(await send('initiateWithdraw', [config, onChain.balance - onChain.totalClaimed]), 'success')

  // before the worker has seen it, the proxy does not know: the call is served, and claimed below
  t.equal((await call()).status, 200, 'a call before the worker run is served')
  t.match(await claimer.runOnce(), { withdrawing: 1, claims: 1, claimed: served, settled: served })
  t.equal((await readChannel(pub, channelId)).totalClaimed, served, 'every served call is claimed at once')

  const refusedNow = async (what: string) => {
    const before = buyer.sent.length
    const res = await call()
    t.equal(res.status, 402, what)
    const error = res.status === 402 ? decodeRequired(res.headers.get('payment-required')).error : undefined
    t.equal(error, 'invalid_batch_settlement_evm_withdrawal_pending')
    t.ok(buyer.sent.length - before <= 1, 'the client does not retry it')
  }
  await refusedNow('from the worker run on, the channel takes no more calls')

  // the delay is over (anvil time travel): a call now would race the payer's finalizeWithdraw
  const test = createTestClient({ chain: devnet.chain, mode: 'anvil', transport: http(devnet.rpcUrl) })
  await test.increaseTime({ seconds: row.withdraw_delay + 1 })
  await test.mine({ blocks: 1 })
  await refusedNow('at the end of the delay too')
  t.equal(await send('finalizeWithdraw', [config]), 'success', 'the payer finalizes before any worker run')
  await claimer.runOnce()

  const charged = await deps.db
    .selectFrom('batch_channels')
    .select('charged')
    .where('channel_id', '=', channelId)
    .executeTakeFirstOrThrow()
  const rows = await deps.db
    .selectFrom('payments')
    .select((eb) => eb.fn.sum<string>('value').as('sum'))
    .where('payer', '=', payer.address.toLowerCase())
    .where('status', '=', 'served')
    .executeTakeFirstOrThrow()
  t.equal(served, 4000n, 'four calls served')
  t.equal(BigInt(charged.charged), served, 'the channel charged the served calls only')
  t.equal(BigInt(rows.sum), served, 'and the payments history says the same')
  t.equal((await usdcOf(receiver)) - receiverBefore, served, 'the receiver got exactly the served calls')
  t.equal(await usdcOf(payer.address), FUNDED - served, 'the payer got exactly the rest')
  t.equal(await deps.redis.hget(deps.key('bsch', channelId), 'w'), '0', 'the withdrawal is over in the copy')
})
