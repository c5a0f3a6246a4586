import t from 'tap'
import type { Hex } from 'viem'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { createFacilitatorClient, facilitatorRequest } from '../../../src/services/settlement/facilitator.js'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { createSyncSettlement } from '../../../src/services/settlement/sync.js'
import { startWorkers } from '../../../workers/index.js'
import { withDevnet } from '../../helpers/devnet.js'
import { startLocalFacilitator } from '../../helpers/local-facilitator.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer, paidPath, payMany } from '../../helpers/settlement.js'

t.test('SETTLEMENT_MODE=facilitator settles through POST /settle', async (t) => {
  const devnet = await withDevnet(t)
  const facilitatorKey = (devnet.accounts.relayers[1] ?? devnet.accounts.relayer).privateKey
  const fac = await startLocalFacilitator(t, devnet, facilitatorKey)
  const platform = await startTestPlatform(t, {
    devnet,
    env: { SETTLEMENT_MODE: 'facilitator', FACILITATOR_URL: fac.url },
  })
  const { deps } = platform
  const db = deps.db
  const payer = await newPayer(platform, 10_000_000n)
  const receiver = devnet.accounts.receiver.address
  const balance = () =>
    deps.chain.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [receiver] })

  t.test('paid calls end settled by the facilitator; the chain confirms every transfer', async (t) => {
    const before = await balance()
    const statuses = await payMany(platform, payer.key, 12, 4)
    t.ok(
      statuses.every((s) => s === 200),
      `every call served: ${statuses}`,
    )
    const stats = await createSettler(deps).runOnce(60_000)
    t.equal(stats.settled, 12)
    t.equal(stats.batches, 0, 'no relayer batch was sent')
    const rows = await db.selectFrom('payments').selectAll().execute()
    t.ok(
      rows.every((r) => r.status === 'settled' && r.tx_hash),
      'every payment settled with a tx hash',
    )
    t.same(
      new Set(rows.map((r) => r.tx_hash)),
      new Set(fac.submitted),
      'the recorded transactions are the facilitator’s',
    )
    for (const r of rows)
      t.equal((await deps.chain.getTransactionReceipt({ hash: r.tx_hash as Hex })).status, 'success')
    t.equal(
      (await balance()) - before,
      rows.reduce((a, r) => a + BigInt(r.value), 0n),
      'receiver got exactly the settled sum',
    )
    const body = fac.requests[0]!
    t.equal(body.x402Version, 2)
    t.match(body.paymentRequirements, { scheme: 'exact', network: 'eip155:84532', amount: String(rows[0]!.value) })
    t.ok(
      body.paymentPayload.payload.signature && body.paymentPayload.payload.authorization.nonce,
      'payload carries the signed authorization',
    )
  })

  t.test('an authorization already used on chain is never sent again', async (t) => {
    t.same(await payMany(platform, payer.key, 1, 1), [200])
    const row = await db.selectFrom('payments').selectAll().where('status', '=', 'served').executeTakeFirstOrThrow()
    // the facilitator settled it, but the answer never reached us (a crash after the POST)
    const out = await createFacilitatorClient(fac.url).settle(row, deps.config)
    if (out.kind !== 'submitted') throw new Error(`facilitator refused: ${JSON.stringify(out)}`)
    await deps.chain.waitForTransactionReceipt({ hash: out.txHash })
    const requests = fac.requests.length
    await createSettler(deps).runOnce()
    const after = await db.selectFrom('payments').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow()
    t.equal(after.status, 'settled')
    t.equal(after.tx_hash, out.txHash, 'the transaction found on chain is recorded')
    t.equal(fac.requests.length, requests, 'no second /settle for a used authorization')
  })

  t.test('an unreachable facilitator leaves the payment to the next round', async (t) => {
    t.same(await payMany(platform, payer.key, 1, 1), [200])
    fac.failNext(1)
    const settler = createSettler(deps)
    const first = await settler.runOnce()
    t.equal(first.requeued, 1, 'requeued, not failed')
    const second = await settler.runOnce()
    t.equal(second.settled, 1)
    const events = await db
      .selectFrom('payment_events')
      .select('payment_id')
      .where('to_status', '=', 'settled')
      .execute()
    t.equal(new Set(events.map((e) => e.payment_id)).size, events.length, 'no payment settled twice')
  })

  t.test('BullMQ workers in facilitator mode settle without relayers', async (t) => {
    const workers = await startWorkers(
      { ...deps, config: { ...deps.config, relayerKeys: [] } },
      { everyMs: { 'settlement-tick': 200 } },
    )
    t.teardown(() => workers.close())
    t.same(await payMany(platform, payer.key, 4, 2), [200, 200, 200, 200])
    const deadline = Date.now() + 20_000
    let open = 1
    while (open > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200))
      open = (
        await db.selectFrom('payments').select('id').where('status', 'in', ['verified', 'served', 'settling']).execute()
      ).length
    }
    await workers.close()
    t.equal(open, 0, 'nothing left open')
    const rows = await db.selectFrom('payments').selectAll().execute()
    t.ok(
      rows.every((r) => r.status === 'settled' && fac.submitted.includes(r.tx_hash as Hex)),
      'all settled by the facilitator',
    )
  })

  t.test('sync endpoints settle through the facilitator before responding', async (t) => {
    await db.updateTable('endpoints').set({ settlement_mode: 'sync' }).where('slug', '=', 'hash-generator').execute()
    t.teardown(() =>
      db.updateTable('endpoints').set({ settlement_mode: 'async' }).where('slug', '=', 'hash-generator').execute(),
    )
    const sync = createSyncSettlement(deps)
    const { url } = await platform.startProxy({ sync })
    t.same(await payMany(platform, payer.key, 1, 1, url + paidPath), [200])
    const row = await db.selectFrom('payments').selectAll().orderBy('created_at', 'desc').executeTakeFirstOrThrow()
    t.equal(row.status, 'settled')
    t.ok(fac.submitted.includes(row.tx_hash as Hex), 'the facilitator’s transaction')
    t.same(await sync.settleNow(row.id), { ok: true, txHash: row.tx_hash }, 'idempotent')
  })

  t.test('v1 payments get the v1 wire shape', async (t) => {
    const row = await db.selectFrom('payments').selectAll().executeTakeFirstOrThrow()
    const v1 = facilitatorRequest({ ...row, x402_version: 1 }, deps.config)
    t.match(v1, {
      x402Version: 1,
      paymentPayload: { x402Version: 1, scheme: 'exact', network: 'base-sepolia' },
      paymentRequirements: { maxAmountRequired: String(row.value), network: 'base-sepolia' },
    })
  })
})
