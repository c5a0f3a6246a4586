import { Writable } from 'node:stream'
import t, { type Test } from 'tap'
import { sql } from 'kysely'
import { createTestClient, http, type Hex } from 'viem'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { processLogger } from '../../../src/logger.js'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { withDevnet } from '../../helpers/devnet.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer, payMany } from '../../helpers/settlement.js'

t.test('a stuck batch is replaced with the same nonce and higher fees, within the cap', async (t) => {
  const devnet = await withDevnet(t)
  const platform = await startTestPlatform(t, {
    devnet,
    env: { RELAYER_PRIVATE_KEYS: devnet.accounts.relayers[0]!.privateKey },
  })
  const { deps } = platform
  const db = deps.db
  const anvil = createTestClient({ mode: 'anvil', transport: http(devnet.rpcUrl) })
  t.teardown(() => anvil.setAutomine(true).catch(() => {}))
  const payer = await newPayer(platform, 100_000_000n)
  const receiver = devnet.accounts.receiver.address
  const balance = () =>
    deps.chain.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [receiver] })
  const pendingBatch = () =>
    db.selectFrom('settlement_batches').selectAll().where('status', '=', 'pending').executeTakeFirstOrThrow()
  const receiptOf = (hash: string) => deps.chain.getTransactionReceipt({ hash: hash as Hex }).catch(() => null)

  /** n paid calls, then a batch sent while blocks are not mined: it stays pending */
  const stuckBatch = async (t: Test, n: number) => {
    await anvil.setAutomine(true)
    t.ok((await payMany(platform, payer.key, n, 5)).every((s) => s === 200))
    await anvil.setAutomine(false)
    const stats = await createSettler(deps, { receiptTimeoutMs: 300 }).runOnce()
    t.same({ batches: stats.batches, settled: stats.settled }, { batches: 1, settled: 0 }, 'a batch sent, not mined')
    const batch = await pendingBatch()
    t.ok(await deps.chain.getTransaction({ hash: batch.tx_hash as Hex }), 'in the mempool')
    t.equal(await receiptOf(batch.tx_hash), null, 'no receipt')
    return batch
  }

  t.test('replacement lands, the payments settle once', async (t) => {
    const before = await balance()
    const stuck = await stuckBatch(t, 10)
    const tx1 = await deps.chain.getTransaction({ hash: stuck.tx_hash as Hex })
    const lines: string[] = []
    const log = processLogger('info', new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }))
    const settler = createSettler(deps, { replaceAfterMs: 0, receiptTimeoutMs: 30_000, log })
    const round = settler.runOnce()
    let current = stuck
    for (let i = 0; i < 200 && current.tx_hash === stuck.tx_hash; i++) {
      await new Promise((r) => setTimeout(r, 50))
      current = await db
        .selectFrom('settlement_batches')
        .selectAll()
        .where('id', '=', stuck.id)
        .executeTakeFirstOrThrow()
    }
    t.not(current.tx_hash, stuck.tx_hash, 'the batch now records the replacement')
    const tx2 = await deps.chain.getTransaction({ hash: current.tx_hash as Hex })
    t.equal(tx2.nonce, tx1.nonce, 'same nonce')
    t.equal(tx2.input, tx1.input, 'same call')
    t.ok(
      tx2.maxFeePerGas! * 10n >= tx1.maxFeePerGas! * 11n,
      `maxFeePerGas bumped >= 10% (${tx1.maxFeePerGas} -> ${tx2.maxFeePerGas})`,
    )
    t.ok(
      tx2.maxPriorityFeePerGas! * 10n >= tx1.maxPriorityFeePerGas! * 11n,
      `maxPriorityFeePerGas bumped >= 10% (${tx1.maxPriorityFeePerGas} -> ${tx2.maxPriorityFeePerGas})`,
    )
    t.ok(tx2.maxFeePerGas! <= deps.config.settlement.maxFeePerGasWei, 'within the cap')
    await anvil.mine({ blocks: 1 })
    const stats = await round
    t.equal(stats.settled, 10, 'the round settles the batch from the replacement receipt')
    t.equal((await receiptOf(current.tx_hash))?.status, 'success', 'the replacement is mined')
    t.equal(await receiptOf(stuck.tx_hash), null, 'the original never is')
    const rows = await db
      .selectFrom('payments')
      .select(['status', 'tx_hash', 'value'])
      .where('id', 'in', db.selectFrom('settlement_batch_items').select('payment_id').where('batch_id', '=', stuck.id))
      .execute()
    t.equal(rows.length, 10)
    t.ok(
      rows.every((r) => r.status === 'settled' && r.tx_hash === current.tx_hash),
      'settled by the replacement',
    )
    t.equal(
      (await balance()) - before,
      rows.reduce((a, r) => a + BigInt(r.value), 0n),
      'receiver balance increase equals the sum',
    )
    const dup = await sql<{
      n: string
    }>`select count(*)::text as n from (select payment_id from payment_events where to_status = 'settled' group by payment_id having count(*) > 1) d`.execute(
      db,
    )
    t.equal(dup.rows[0]!.n, '0', 'no payment settled twice')
    t.equal(
      (await db.selectFrom('settlement_batches').select('status').where('id', '=', stuck.id).executeTakeFirstOrThrow())
        .status,
      'confirmed',
    )
    const replaced = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'settlement batch replaced')
    t.match(
      replaced,
      { level: 40, batch: stuck.id, from: stuck.tx_hash, to: current.tx_hash },
      'the replacement is in the log',
    )
    t.notOk(lines.join('').includes(current.raw_tx.slice(2, 80)), 'without the signed transaction')
  })

  t.test('at the fee cap there is no room for a bump: rebroadcast only, then it lands', async (t) => {
    const stuck = await stuckBatch(t, 5)
    const tx1 = await deps.chain.getTransaction({ hash: stuck.tx_hash as Hex })
    const capped = createSettler(deps, { replaceAfterMs: 0, receiptTimeoutMs: 300, maxFeePerGasCap: tx1.maxFeePerGas! })
    const stats = await capped.runOnce()
    t.same(
      { batches: stats.batches, settled: stats.settled },
      { batches: 0, settled: 0 },
      'still waiting, nothing new sent',
    )
    t.equal((await pendingBatch()).tx_hash, stuck.tx_hash, 'not replaced')
    await anvil.mine({ blocks: 1 })
    t.equal((await createSettler(deps).runOnce()).settled, 5, 'the original lands and settles')
    t.equal((await receiptOf(stuck.tx_hash))?.status, 'success')
  })
})
