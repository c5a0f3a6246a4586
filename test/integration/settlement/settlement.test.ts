import t from 'tap'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer, payMany } from '../../helpers/settlement.js'

t.test('paid calls end settled; on-chain transfers match the ledger exactly', async (t) => {
  const platform = await startTestPlatform(t)
  const { deps, devnet } = platform
  const N = Number(process.env.SETTLE_TEST_N ?? 1000)
  const payers = await Promise.all([newPayer(platform, 10_000_000n), newPayer(platform, 10_000_000n)])
  const receiver = devnet.accounts.receiver.address
  const balance = () =>
    deps.chain.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [receiver] })
  const before = await balance()
  const started = Date.now()
  const statuses = (await Promise.all(payers.map((p) => payMany(platform, p.key, N / 2)))).flat()
  const served = statuses.filter((s) => s === 200).length
  t.equal(served, N, `every call served (${served}/${N})`)
  t.comment(`${N} paid calls in ${Date.now() - started} ms`)

  const settler = createSettler(deps, { batchSize: 100 })
  const s0 = Date.now()
  const stats = await settler.runOnce(60_000)
  t.comment(`settled ${stats.settled} in ${stats.batches} batches, ${Date.now() - s0} ms`)
  const all = await deps.db.selectFrom('payments').select(['status', 'value', 'tx_hash']).execute()
  t.equal(all.length, N, 'one payment per call')
  t.ok(
    all.every((r) => r.status === 'settled'),
    'every payment settled',
  )
  const rows = all.filter((r) => r.status === 'settled')
  t.equal(rows.length, served, 'every served call settled')
  t.ok(
    rows.every((r) => r.tx_hash),
    'every payment has a tx hash',
  )
  const total = rows.reduce((a, r) => a + BigInt(r.value), 0n)
  t.equal((await balance()) - before, total, 'receiver balance increase equals the sum of settled payments')
  const events = await deps.db
    .selectFrom('payment_events')
    .select(['payment_id'])
    .where('to_status', '=', 'settled')
    .execute()
  t.equal(events.length, served, 'one settled event per payment')
  t.equal(new Set(events.map((e) => e.payment_id)).size, served, 'no payment settled twice')
  const batches = await deps.db.selectFrom('settlement_batches').selectAll().execute()
  t.ok(batches.every((b) => b.status === 'confirmed'))
  t.equal(
    batches.reduce((a, b) => a + b.size, 0),
    served,
  )
})
