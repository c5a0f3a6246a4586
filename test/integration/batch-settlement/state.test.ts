/**
 * `batch-settlement` channel state when the server loses it: Redis and the `batch_channels` row
 * gone, the channel is rebuilt from the chain with the spec's baseline (charged = totalClaimed),
 * and the official client, whose own state is ahead, recovers from the corrective 402 (no
 * voucherState: it adopts the on-chain baseline) and pays on.
 */
import t from 'tap'
import { batchBuyer, receiptOf } from '../../helpers/batch-buyer.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer, paidPath } from '../../helpers/settlement.js'

t.test('server state lost: rebuilt from the chain, the official client recovers by itself', async (t) => {
  const platform = await startTestPlatform(t, { env: { TOLLGATE_MASTER_KEY: '35'.repeat(32) } })
  const { deps, proxyUrl } = platform
  const url = `${proxyUrl}${paidPath}`
  const payer = await newPayer(platform, 1_000_000n)
  const buyer = batchBuyer(platform, payer.key, 10)
  for (let i = 1; i <= 3; i++) t.equal((await buyer.pay(url)).status, 200, `call ${i}`)
  const row = await deps.db.selectFrom('batch_channels').selectAll().executeTakeFirstOrThrow()
  t.equal(row.charged, '3000')

  // the server forgets the channel (nothing claimed yet: those 3 calls are forfeited, as the spec says)
  await deps.db.deleteFrom('batch_channels').execute()
  const keys = await deps.redis.keys(deps.key('bsch', '*'))
  await deps.redis.del(...keys)

  const sentBefore = buyer.sent.length
  const res = await buyer.pay(url)
  t.equal(res.status, 200, await res.clone().text())
  t.equal(buyer.sent.length - sentBefore, 2, 'one voucher on the old amount, one on the recovered baseline')
  t.match(receiptOf(res).extra, { chargedAmount: '1000', channelState: { chargedCumulativeAmount: '1000' } })
  const rebuilt = await deps.db.selectFrom('batch_channels').selectAll().executeTakeFirstOrThrow()
  t.match(rebuilt, { channel_id: row.channel_id, charged: '1000', balance: '10000', total_claimed: '0' })
  t.equal((await buyer.pay(url)).status, 200, 'and pays on')
})
