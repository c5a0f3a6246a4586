import t, { type Test } from 'tap'
import { sql } from 'kysely'
import { createTestClient, http, type Hex } from 'viem'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { withDevnet } from '../../helpers/devnet.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { capturedLog, newPayer, payMany, walletFor } from '../../helpers/settlement.js'

// Relayer A sends the batches; the settlers under test hold only relayer B's key, as a worker
// restarted after A's key was removed from RELAYER_PRIVATE_KEYS.
t.test('a pending batch of a relayer whose key was removed is still resolved', async (t) => {
  const devnet = await withDevnet(t)
  const [relayerA, relayerB] = devnet.accounts.relayers
  const platform = await startTestPlatform(t, { devnet, env: { RELAYER_PRIVATE_KEYS: relayerA!.privateKey } })
  const { deps } = platform
  const db = deps.db
  const anvil = createTestClient({ mode: 'anvil', transport: http(devnet.rpcUrl) })
  t.teardown(() => anvil.setAutomine(true).catch(() => {}))
  const credit = createSettler(deps).credit
  const keyOnlyB = { relayerKeys: [relayerB!.privateKey], stuckAfterMs: 0 }

  const batchesOf = (payer: string) =>
    db
      .selectFrom('settlement_batches as b')
      .selectAll('b')
      .where(
        'b.id',
        'in',
        db
          .selectFrom('settlement_batch_items as i')
          .innerJoin('payments as p', 'p.id', 'i.payment_id')
          .select('i.batch_id')
          .where('p.payer', '=', payer.toLowerCase()),
      )
      .orderBy('b.nonce')
      .execute()
  const paymentsOf = (payer: string) =>
    db.selectFrom('payments').selectAll().where('payer', '=', payer.toLowerCase()).orderBy('created_at').execute()
  const batchStatus = async (id: string) =>
    (await db.selectFrom('settlement_batches').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status
  const inPool = async (hash: string) =>
    (await deps.chain.getTransaction({ hash: hash as Hex }).catch(() => null)) !== null

  /** n paid calls, then `relayer` (A unless told) sends them in batches of `batchSize` while blocks are not mined: they stay pending */
  const pendingFrom = async (t: Test, n: number, batchSize = n, relayer = relayerA!) => {
    await anvil.setAutomine(true)
    const payer = await newPayer(platform, 1_000_000n)
    t.ok(
      (await payMany(platform, payer.key, n, 1)).every((s) => s === 200),
      'paid',
    )
    await anvil.setAutomine(false)
    await createSettler(deps, { receiptTimeoutMs: 300, batchSize, relayerKeys: [relayer.privateKey] }).runOnce()
    const batches = await batchesOf(payer.address)
    t.equal(batches.length, Math.ceil(n / batchSize), 'batches sent')
    t.ok(
      batches.every((b) => b.status === 'pending' && b.relayer === relayer.address.toLowerCase()),
      'pending, from the sending relayer',
    )
    t.ok((await paymentsOf(payer.address)).every((p) => p.status === 'settling'))
    return { payer, batches }
  }

  t.test('rebroadcast without the key (never fee-bumped), then confirmed and settled', async (t) => {
    const { payer, batches } = await pendingFrom(t, 3, 2)
    // gone from the node's pool (as after a node restart): only a rebroadcast can bring them back
    for (const b of batches) await anvil.dropTransaction({ hash: b.tx_hash as Hex })
    t.notOk(await inPool(batches[0]!.tx_hash))
    const { log, lines, msgs } = capturedLog()
    // replaceAfterMs 0: a settler holding the key would replace at once
    const sweep = createSettler(deps, { ...keyOnlyB, replaceAfterMs: 0, log }).sweep()
    let done = false
    void sweep.finally(() => (done = true)).catch(() => {})
    let rebroadcast = false
    for (let i = 0; i < 100 && !done; i++) {
      await new Promise((r) => setTimeout(r, 50))
      if (await inPool(batches[0]!.tx_hash)) rebroadcast = true
      await anvil.mine({ blocks: 1 })
    }
    const stats = await sweep
    t.ok(rebroadcast, 'the recorded transaction was rebroadcast')
    t.equal(stats.settled, 3, 'the sweep settles both batches')
    for (const b of batches) {
      t.equal(await batchStatus(b.id), 'confirmed')
      t.equal(
        (await db.selectFrom('settlement_batches').select('tx_hash').where('id', '=', b.id).executeTakeFirstOrThrow())
          .tx_hash,
        b.tx_hash,
        'not replaced',
      )
      t.equal(
        (await deps.chain.getTransactionReceipt({ hash: b.tx_hash as Hex }).catch(() => null))?.status,
        'success',
        'the original transaction is mined',
      )
    }
    const rows = await db
      .selectFrom('payments as p')
      .innerJoin('settlement_batch_items as i', 'i.payment_id', 'p.id')
      .innerJoin('settlement_batches as b', 'b.id', 'i.batch_id')
      .select(['p.status', 'p.tx_hash', 'b.tx_hash as batch_tx'])
      .where('p.payer', '=', payer.address.toLowerCase())
      .execute()
    t.equal(rows.length, 3)
    t.ok(
      rows.every((r) => r.status === 'settled' && r.tx_hash === r.batch_tx),
      'each payment settled with its batch transaction hash',
    )
    const warned = msgs().filter((m) => m.level === 40 && m.relayer === relayerA!.address)
    t.equal(warned.length, 1, 'one warning for the relayer in the sweep')
    t.same(
      warned[0]?.batches,
      batches.map((b) => b.id),
      'naming its batches',
    )
    t.same(
      msgs().filter((m) => (m.level as number) >= 40),
      warned,
      'no other warning (no replacement tried)',
    )
    t.notOk(lines.join('').includes(batches[0]!.raw_tx.slice(2, 80)), 'no raw transaction in the log')
  })

  t.test(
    "dropped when relayer A's nonce was used by another transaction; its payments go back to served",
    async (t) => {
      const { payer, batches } = await pendingFrom(t, 2)
      const [b] = batches
      await anvil.dropTransaction({ hash: b!.tx_hash as Hex })
      // relayer A (its key still in the operator's hands) spends that nonce on something else
      const other = await walletFor(platform, relayerA!.privateKey).sendTransaction({
        to: relayerA!.address,
        value: 0n,
        nonce: Number(b!.nonce),
      })
      await anvil.mine({ blocks: 1 })
      t.equal((await deps.chain.getTransactionReceipt({ hash: other })).status, 'success')
      const { log, msgs } = capturedLog()
      const stats = await createSettler(deps, { ...keyOnlyB, log }).sweep()
      t.equal(stats.requeued, 2, 'rechecked: unused and not expired, so back to served')
      t.equal(await batchStatus(b!.id), 'dropped')
      t.ok((await paymentsOf(payer.address)).every((p) => p.status === 'served'))
      t.equal(msgs().find((m) => m.msg.startsWith('settlement batch dropped'))?.batch, b!.id)
      // relayer B settles them in a new batch
      await anvil.setAutomine(true)
      t.equal((await createSettler(deps, keyOnlyB).runOnce()).settled, 2)
      const after = await paymentsOf(payer.address)
      t.ok(
        after.every((p) => p.status === 'settled' && p.tx_hash !== b!.tx_hash),
        'settled by another transaction',
      )
    },
  )

  // last: it moves the chain's clock an hour ahead
  t.test(
    'a batch that can no longer be mined ends dropped, its payments failed as expired and their exposure released',
    async (t) => {
      const { payer, batches } = await pendingFrom(t, 2)
      const [b] = batches
      const [p0] = await paymentsOf(payer.address)
      const exposure = (p: { asset: string; payer: string }) => deps.redis.get(credit.keys.exposure(p.asset, p.payer))
      t.equal(await exposure(p0!), '2000', 'both payments count in the exposure')
      await anvil.dropTransaction({ hash: b!.tx_hash as Hex })
      // an hour later by the settler's clock (the margin) but not yet on chain: the batch could
      // still be mined, so it is only rebroadcast
      const hour = { ...keyOnlyB, expiryMarginS: 3_600 }
      t.same(await createSettler(deps, hour).sweep(), { settled: 0, failed: 0, requeued: 0, batches: 0, voided: 0 })
      t.equal(await batchStatus(b!.id), 'pending', 'not dropped while the chain still accepts its authorizations')
      t.ok(await inPool(b!.tx_hash), 'rebroadcast')
      await anvil.dropTransaction({ hash: b!.tx_hash as Hex })

      // relayer C (its key removed too) has two batches; the later one's payment has a longer validity
      const relayerC = devnet.accounts.relayers[2]!
      const c = await pendingFrom(t, 3, 2, relayerC)
      const [c1, c2] = c.batches
      const [c2payment] = await db
        .selectFrom('settlement_batch_items')
        .select('payment_id')
        .where('batch_id', '=', c2!.id)
        .execute()
      await sql`update payments set valid_before = valid_before + 7200 where id = ${c2payment!.payment_id}`.execute(db)
      const usdc = () =>
        deps.chain.readContract({
          address: devnet.usdcAddress,
          abi: usdcAbi,
          functionName: 'balanceOf',
          args: [c.payer.address],
        })
      const cBalance = await usdc()

      for (const x of [c1!, c2!]) await anvil.dropTransaction({ hash: x.tx_hash as Hex })
      // now an hour passes on chain too: the authorizations are past validBefore (all but the longer one, by our records)
      await anvil.increaseTime({ seconds: 3_600 })
      await anvil.mine({ blocks: 1 })
      const { log, msgs } = capturedLog()
      const stats = await createSettler(deps, { ...hour, log }).sweep()
      t.equal(stats.failed, 4, "the payments of A's batch and of C's first")
      t.equal(await batchStatus(b!.id), 'dropped')
      t.notOk(await inPool(b!.tx_hash), 'not rebroadcast: no batch of its relayer waits for its nonce')
      const rows = await paymentsOf(payer.address)
      t.same(
        rows.map((r) => [r.status, r.failure_reason]),
        [
          ['failed', 'expired'],
          ['failed', 'expired'],
        ],
        'failed as expired',
      )
      t.equal(await exposure(p0!), '0', 'exposure released')
      const dropped = msgs().filter((m) => m.msg.startsWith('settlement batch dropped'))
      t.equal(dropped.length, 2)
      t.match(
        dropped.find((m) => m.batch === b!.id),
        { relayer: relayerA!.address },
        "A's drop is logged",
      )
      t.match(
        dropped.find((m) => m.batch === c1!.id),
        { relayer: relayerC.address },
        "C's drop is logged",
      )
      for (const r of [relayerA!, relayerC])
        t.equal(
          msgs().filter((m) => m.relayer === r.address && Array.isArray(m.batches)).length,
          1,
          `one key warning for ${r.address}`,
        )

      t.equal(await batchStatus(c1!.id), 'dropped')
      t.equal(await batchStatus(c2!.id), 'pending', 'the later batch, still valid by our records, stays pending')
      const cRows = await db
        .selectFrom('payments')
        .select(['id', 'status'])
        .where('payer', '=', c.payer.address.toLowerCase())
        .execute()
      t.same(
        cRows.filter((r) => r.id !== c2payment!.payment_id).map((r) => r.status),
        ['failed', 'failed'],
      )
      t.equal(
        await exposure({ asset: p0!.asset, payer: c.payer.address.toLowerCase() }),
        '1000',
        "only the pending batch's payment still counts",
      )
      t.ok(
        await inPool(c1!.tx_hash),
        'the dropped batch is rebroadcast all the same: the later batch waits for its nonce',
      )
      t.ok(await inPool(c2!.tx_hash), 'the later batch is rebroadcast')
      await anvil.mine({ blocks: 1 })
      t.ok(await deps.chain.getTransactionReceipt({ hash: c1!.tx_hash as Hex }), 'mined, using its nonce')
      t.ok(await deps.chain.getTransactionReceipt({ hash: c2!.tx_hash as Hex }), 'so the later batch could be mined')
      t.equal(await usdc(), cBalance, 'mined past validBefore, no transfer moved money')
    },
  )
})
