import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { createTestClient, http, type Hex } from 'viem'
import { MAX_HANDLER_TIMEOUT_MS } from '../../../src/pool/handler-contract.js'
import { transferCallData } from '../../../src/services/settlement/chain-ops.js'
import { createSettler, longestCallMs, VOID_MARGIN_MS } from '../../../src/services/settlement/settler.js'
import { MAX_UPSTREAM_TIMEOUT_MS } from '../../../src/services/publishing/upstream-config.js'
import { withDevnet } from '../../helpers/devnet.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { capturedLog, newPayer, payMany, walletFor } from '../../helpers/settlement.js'

type RpcCall = { id: unknown; method: string; params?: unknown[] }
type RpcRefusal = { code: number; message: string }

/**
 * A JSON-RPC endpoint in front of anvil that refuses what a hosted provider refuses: eth_getLogs
 * spanning more than `maxLogRange` blocks (`-32005 query exceeds max block range`), and whatever
 * `refuse` names. It records the ranges asked for.
 */
async function rpcStandIn(t: Test, upstream: string, maxLogRange: number) {
  const logRanges: Array<{ from: bigint; to: bigint }> = []
  const state: { refuse?: (call: RpcCall) => RpcRefusal | undefined } = {}
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const body = Buffer.concat(chunks).toString()
    const call = JSON.parse(body) as RpcCall
    let refusal = Array.isArray(call) ? undefined : state.refuse?.(call)
    if (!refusal && call.method === 'eth_getLogs') {
      const f = call.params![0] as { fromBlock: Hex; toBlock: Hex }
      const range = { from: BigInt(f.fromBlock), to: BigInt(f.toBlock) }
      logRanges.push(range)
      if (range.to - range.from + 1n > BigInt(maxLogRange))
        refusal = { code: -32005, message: `query exceeds max block range ${maxLogRange}` }
    }
    res.setHeader('content-type', 'application/json')
    if (refusal) return res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, error: refusal }))
    const up = await fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    res.end(await up.text())
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => server.close(r)))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, logRanges, state }
}

t.test('the settlement sweep', async (t) => {
  const devnet = await withDevnet(t)
  const CHUNK = 20
  const rpc = await rpcStandIn(t, devnet.rpcUrl, CHUNK)
  const platform = await startTestPlatform(t, {
    devnet,
    env: {
      RPC_URL: rpc.url,
      RELAYER_PRIVATE_KEYS: devnet.accounts.relayers[0]!.privateKey,
      SETTLEMENT_LOG_CHUNK_BLOCKS: String(CHUNK),
    },
  })
  const { deps } = platform
  const db = deps.db
  const anvil = createTestClient({ mode: 'anvil', transport: http(devnet.rpcUrl) })
  t.teardown(() => anvil.setAutomine(true).catch(() => {}))
  const paymentOf = (payer: string) =>
    db.selectFrom('payments').selectAll().where('payer', '=', payer.toLowerCase()).executeTakeFirstOrThrow()

  t.equal(deps.config.settlement.logChunkBlocks, CHUNK, 'SETTLEMENT_LOG_CHUNK_BLOCKS is read')

  t.test('an authorization used outside our batches is found in chunks the provider accepts', async (t) => {
    await anvil.mine({ blocks: 150 })
    const payer = await newPayer(platform, 1_000_000n)
    t.same(await payMany(platform, payer.key, 1, 1), [200])
    const row = await paymentOf(payer.address)
    // the payer submits its own authorization before we do
    const hash = await walletFor(platform, payer.key).sendTransaction({
      to: devnet.usdcAddress,
      data: transferCallData(row),
    })
    t.equal((await deps.chain.waitForTransactionReceipt({ hash })).status, 'success')
    await anvil.mine({ blocks: 50 })
    rpc.logRanges.length = 0
    const stats = await createSettler(deps).runOnce()
    t.equal(stats.settled, 1)
    const after = await paymentOf(payer.address)
    t.same(
      { status: after.status, tx_hash: after.tx_hash },
      { status: 'settled', tx_hash: hash },
      'settled by the transaction found in the logs',
    )
    t.ok(rpc.logRanges.length > 2, `several requests (${rpc.logRanges.length})`)
    t.ok(
      rpc.logRanges.every((r) => r.to - r.from + 1n <= BigInt(CHUNK)),
      'none over the chunk size',
    )
  })

  /** A paid call whose batch was mined but recorded under another hash (as when a replacement is recorded and the original lands). */
  const lostBatch = async (t: Test) => {
    const payer = await newPayer(platform, 1_000_000n)
    t.same(await payMany(platform, payer.key, 1, 1), [200])
    const crashing = createSettler(deps, {
      hooks: {
        afterSend: () => {
          throw new Error('afterSend')
        },
      },
    })
    await t.rejects(crashing.runOnce(), { message: 'afterSend' })
    const row = await paymentOf(payer.address)
    t.equal(row.status, 'settling')
    const batch = await db
      .selectFrom('settlement_batches')
      .selectAll()
      .innerJoin('settlement_batch_items as i', 'i.batch_id', 'settlement_batches.id')
      .where('i.payment_id', '=', row.id)
      .executeTakeFirstOrThrow()
    const mined = (await deps.chain.getTransactionReceipt({ hash: batch.tx_hash as Hex })).transactionHash
    await db
      .updateTable('settlement_batches')
      .set({ tx_hash: '0x' + 'ab'.repeat(32) })
      .where('id', '=', batch.id)
      .execute()
    await anvil.mine({ blocks: 120 })
    return { payer, row, batchId: batch.id, fromBlock: BigInt(batch.from_block), mined }
  }

  t.test("a dropped batch's payments are looked for from the batch's block, not 50,000 blocks back", async (t) => {
    await anvil.mine({ blocks: 300 })
    const lost = await lostBatch(t)
    rpc.logRanges.length = 0
    const { log, lines, msgs } = capturedLog()
    const stats = await createSettler(deps, { stuckAfterMs: 0, log }).sweep()
    t.equal(stats.settled, 1)
    const after = await paymentOf(lost.payer.address)
    t.same({ status: after.status, tx_hash: after.tx_hash }, { status: 'settled', tx_hash: lost.mined })
    t.ok(rpc.logRanges.length > 0)
    const lowest = rpc.logRanges.reduce((m, r) => (r.from < m ? r.from : m), rpc.logRanges[0]!.from)
    t.ok(lowest >= lost.fromBlock - 100n, `searched from block ${lowest}, the batch's is ${lost.fromBlock}`)
    t.ok(rpc.logRanges.every((r) => r.to - r.from + 1n <= BigInt(CHUNK)))
    const dropped = msgs().find((m) => m.msg.startsWith('settlement batch dropped'))
    t.equal(dropped?.batch, lost.batchId, 'the dropped batch is logged')
    t.notOk(lines.join('').includes(lost.row.signature.slice(2, 40)), 'no payment signature in the log')
  })

  t.test(
    'a failing log lookup leaves its payment settling and the sweep goes on to void stale verified payments',
    async (t) => {
      const lost = await lostBatch(t)
      // a stale `verified` payment (the proxy died mid-call long ago)
      const stale = {
        ...lost.row,
        id: '00000000-0000-4000-8000-00000000aa01',
        nonce: '0x' + 'aa'.repeat(32),
        status: 'verified' as const,
        tx_hash: null,
        settled_at: null,
        created_at: new Date(Date.now() - 3_600_000),
      }
      await db
        .insertInto('payments')
        .values(stale as never)
        .execute()
      rpc.state.refuse = (c) => (c.method === 'eth_getLogs' ? { code: -32603, message: 'upstream timeout' } : undefined)
      const { log, msgs } = capturedLog()
      const stats = await createSettler(deps, { stuckAfterMs: 0, log }).sweep()
      t.equal(stats.voided, 1, 'the stale payment is voided')
      t.equal(
        (await db.selectFrom('payments').select('status').where('id', '=', stale.id).executeTakeFirstOrThrow()).status,
        'voided',
      )
      t.equal(
        (await paymentOf(lost.payer.address)).status,
        'settling',
        'the payment whose lookup failed is left for the next sweep',
      )
      const warned = msgs().find((m) => m.msg.startsWith('settlement: could not look up'))
      t.equal(warned?.payment, lost.row.id)
      t.match(String(warned?.err), /upstream timeout/)
      t.notOk(String(warned?.err).includes(rpc.url), 'no RPC URL in the log')
      rpc.state.refuse = undefined
      await createSettler(deps, { stuckAfterMs: 0 }).sweep()
      t.same(
        await paymentOf(lost.payer.address).then((r) => [r.status, r.tx_hash]),
        ['settled', lost.mined],
        'settled once the provider answers',
      )
    },
  )

  t.test('verified payments are voided only after the longest call a handler or upstream may take', async (t) => {
    t.equal(longestCallMs(deps.config.handlers.timeoutMs), Math.max(MAX_HANDLER_TIMEOUT_MS, MAX_UPSTREAM_TIMEOUT_MS))
    t.equal(longestCallMs(10_000), 120_000)
    const base = await db.selectFrom('payments').selectAll().executeTakeFirstOrThrow()
    const at = (id: string, ageMs: number, nonceByte: string) => ({
      ...base,
      id,
      nonce: '0x' + nonceByte.repeat(32),
      status: 'verified' as const,
      tx_hash: null,
      settled_at: null,
      created_at: new Date(Date.now() - ageMs),
    })
    // 110 s: ai-research-report's own limit, still running; past 70 s (the old default)
    const slow = at('00000000-0000-4000-8000-00000000bb01', 110_000, 'b1')
    const gone = at(
      '00000000-0000-4000-8000-00000000bb02',
      longestCallMs(deps.config.handlers.timeoutMs) + VOID_MARGIN_MS + 5_000,
      'b2',
    )
    await db
      .insertInto('payments')
      .values([slow, gone] as never)
      .execute()
    const stats = await createSettler(deps).sweep()
    t.equal(stats.voided, 1)
    const status = async (id: string) =>
      (await db.selectFrom('payments').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status
    t.equal(await status(slow.id), 'verified', "a call within a handler's declared limit is not voided")
    t.equal(await status(gone.id), 'voided')
  })

  t.test('a refused rebroadcast is logged without the raw transaction', async (t) => {
    const payer = await newPayer(platform, 1_000_000n)
    t.same(await payMany(platform, payer.key, 1, 1), [200])
    await anvil.setAutomine(false)
    await createSettler(deps, { receiptTimeoutMs: 300 }).runOnce()
    const batch = await db
      .selectFrom('settlement_batches')
      .selectAll()
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow()
    rpc.state.refuse = (c) =>
      c.method === 'eth_sendRawTransaction' ? { code: -32000, message: 'txpool is full' } : undefined
    const { log, lines, msgs } = capturedLog()
    await createSettler(deps, { stuckAfterMs: 0, replaceAfterMs: 3_600_000, log }).sweep()
    rpc.state.refuse = undefined
    const failed = msgs().find((m) => m.msg === 'rebroadcast failed')
    t.equal(failed?.batch, batch.id)
    t.match(String(failed?.err), /txpool is full/)
    t.notOk(lines.join('').includes(batch.raw_tx.slice(2, 80)), 'no raw transaction in the log')
    await anvil.setAutomine(true)
    await anvil.mine({ blocks: 1 })
    await createSettler(deps, { stuckAfterMs: 0 }).sweep()
    t.equal((await paymentOf(payer.address)).status, 'settled')
  })
})
