import t, { type Test } from 'tap'
import { decodePaymentResponseHeader } from '@x402/fetch'
import { sql } from 'kysely'
import { getAddress, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { createPayerCredit } from '../../../src/ledger/payer-credit.js'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { createSyncSettlement } from '../../../src/services/settlement/sync.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { decodeRequired, signFor, v2Header } from '../../helpers/pay.js'
import { newPayer, paidPath, payMany, walletFor } from '../../helpers/settlement.js'

t.test('settlement recovery, risk and sync mode', async (t) => {
  const platform = await startTestPlatform(t)
  const { deps, devnet } = platform
  const db = deps.db
  const statusCounts = async () => {
    const r = await db
      .selectFrom('payments')
      .select(['status'])
      .select((e) => e.fn.countAll<string>().as('n'))
      .groupBy('status')
      .execute()
    return Object.fromEntries(r.map((x) => [x.status, Number(x.n)]))
  }
  const assertAllSettledOnce = async (t: Test, label: string) => {
    const c = await statusCounts()
    t.notOk(c.served || c.settling || c.verified, `${label}: nothing left open ${JSON.stringify(c)}`)
    const dup = await sql<{
      n: string
    }>`select count(*)::text as n from (select payment_id from payment_events where to_status = 'settled' group by payment_id having count(*) > 1) d`.execute(
      db,
    )
    t.equal(dup.rows[0]!.n, '0', `${label}: no payment settled twice`)
    // every settled payment's authorization is in a mined receipt with its tx hash
    const rows = await db
      .selectFrom('payments')
      .select(['tx_hash', 'payer', 'nonce'])
      .where('status', '=', 'settled')
      .execute()
    const hashes = [...new Set(rows.map((r) => r.tx_hash!))]
    for (const h of hashes) t.equal((await deps.chain.getTransactionReceipt({ hash: h as Hex })).status, 'success')
  }
  const payer = await newPayer(platform, 100_000_000n)

  for (const stage of ['afterClaim', 'beforeSend', 'afterSend'] as const) {
    t.test(
      `a batch aborted at ${stage} (in process; kill -9 of a worker process: settlement-crash.test.ts) is resolved by a fresh settler`,
      async (t) => {
        const st = await payMany(platform, payer.key, 10, 5)
        t.ok(st.every((s) => s === 200))
        const crashing = createSettler(deps, {
          hooks: {
            [stage]: () => {
              throw new Error(stage)
            },
          },
        })
        await t.rejects(crashing.runOnce(), { message: stage })
        const fresh = createSettler(deps, { stuckAfterMs: 0 })
        await fresh.sweep()
        await fresh.runOnce()
        await assertAllSettledOnce(t, stage)
      },
    )
  }

  t.test('two workers share a backlog: no double submission, no nonce collision', async (t) => {
    await payMany(platform, payer.key, 60, 8)
    const a = createSettler(deps, { batchSize: 10 })
    const b = createSettler(deps, { batchSize: 10 })
    await Promise.all([a.runOnce(), b.runOnce(), a.runOnce(), b.runOnce()])
    await createSettler(deps).runOnce()
    await assertAllSettledOnce(t, 'two workers')
    const items = await sql<{
      n: string
    }>`select count(*)::text as n from (select payment_id from settlement_batch_items group by payment_id having count(*) > 1) d`.execute(
      db,
    )
    t.equal(items.rows[0]!.n, '0', 'each payment submitted in exactly one batch')
    const nonces = await sql<{
      n: string
    }>`select count(*)::text as n from (select relayer, nonce from settlement_batches group by relayer, nonce having count(*) > 1) d`.execute(
      db,
    )
    t.equal(nonces.rows[0]!.n, '0', 'no relayer nonce used twice')
  })

  t.test('a payer who moves funds away: failed, blocked, next call refused', async (t) => {
    const p = await newPayer(platform, 5_000n)
    t.same(await payMany(platform, p.key, 1, 1), [200])
    const wallet = walletFor(platform, p.key)
    await deps.chain.waitForTransactionReceipt({
      hash: await wallet.writeContract({
        address: devnet.usdcAddress,
        abi: usdcAbi,
        functionName: 'transfer',
        args: [devnet.accounts.faucet.address, 5_000n],
      }),
    })
    await createSettler(deps).runOnce()
    const row = await db
      .selectFrom('payments')
      .selectAll()
      .where('payer', '=', p.address.toLowerCase())
      .executeTakeFirstOrThrow()
    t.equal(row.status, 'failed')
    t.equal(row.failure_reason, 'insufficient_funds')
    t.ok(
      await db.selectFrom('payer_blocks').selectAll().where('payer', '=', p.address.toLowerCase()).executeTakeFirst(),
      'payer blocked',
    )
    await deps.chain.waitForTransactionReceipt({
      hash: await walletFor(platform, devnet.accounts.faucet.privateKey).writeContract({
        address: devnet.usdcAddress,
        abi: usdcAbi,
        functionName: 'transfer',
        args: [p.address, 5_000n],
      }),
    })
    // the cached balance (read when the settlement failed, 0) catches up, as its refresh would
    await createPayerCredit(deps).setBalance(
      deps.config.chain.usdc.address.toLowerCase(),
      p.address.toLowerCase(),
      5_000n,
    )
    const res = await fetch(platform.proxyUrl + paidPath)
    const challenge = res.headers.get('payment-required')
    await res.arrayBuffer()
    t.equal(res.status, 402)
    // an unsigned call gets the plain challenge; a paid one is refused with the reason
    const { wrapFetchWithPaymentFromConfig } = await import('@x402/fetch')
    const { ExactEvmScheme } = await import('@x402/evm')
    const { privateKeyToAccount } = await import('viem/accounts')
    const pay = wrapFetchWithPaymentFromConfig(fetch, {
      schemes: [{ network: 'eip155:84532', client: new ExactEvmScheme(privateKeyToAccount(p.key)) }],
    })
    const refused = await pay(platform.proxyUrl + paidPath).catch((e: Error) => e)
    const text =
      refused instanceof Error
        ? refused.message
        : (await refused.text()) + (refused.headers.get('payment-required') ?? '')
    const decoded =
      refused instanceof Error ? '' : Buffer.from(refused.headers.get('payment-required') ?? '', 'base64').toString()
    t.match(
      text + decoded,
      /payer_blocked/,
      'next call refused with payer_blocked by a proxy that cannot settle before answering',
    )
    void challenge

    // a proxy that can settle first serves the blocked payer once its payment is on chain, and that lifts the block
    const { url: syncUrl } = await platform.startProxy({ sync: createSyncSettlement(deps) })
    const paidFirst = await pay(syncUrl + paidPath)
    t.equal(paidFirst.status, 200, 'the blocked payer pays up front and is served')
    const receipt = decodePaymentResponseHeader(paidFirst.headers.get('payment-response')!)
    t.match(receipt.transaction, /^0x[0-9a-f]{64}$/, 'with the settlement transaction: no credit was extended')
    const settledRow = await db
      .selectFrom('payments')
      .select(['status', 'settlement_mode'])
      .where('tx_hash', '=', receipt.transaction)
      .executeTakeFirstOrThrow()
    t.same(settledRow, { status: 'settled', settlement_mode: 'sync' })
    t.notOk(
      await db.selectFrom('payer_blocks').selectAll().where('payer', '=', p.address.toLowerCase()).executeTakeFirst(),
      'the block is lifted',
    )
    const again = await pay(platform.proxyUrl + paidPath)
    await again.arrayBuffer()
    t.equal(again.status, 200, 'and the payer gets credit again everywhere')
  })

  t.test('an authorization cancelled on chain: failed with authorization_canceled', async (t) => {
    const p = await newPayer(platform, 5_000n)
    t.same(await payMany(platform, p.key, 1, 1), [200])
    const row = await db
      .selectFrom('payments')
      .selectAll()
      .where('payer', '=', p.address.toLowerCase())
      .executeTakeFirstOrThrow()
    const wallet = walletFor(platform, p.key)
    const signature = await wallet.signTypedData({
      domain: {
        name: deps.config.chain.usdc.name,
        version: deps.config.chain.usdc.version,
        chainId: devnet.chainId,
        verifyingContract: devnet.usdcAddress,
      },
      types: {
        CancelAuthorization: [
          { name: 'authorizer', type: 'address' },
          { name: 'nonce', type: 'bytes32' },
        ],
      },
      primaryType: 'CancelAuthorization',
      message: { authorizer: p.address, nonce: row.nonce as Hex },
    })
    const hash = await wallet.writeContract({
      address: devnet.usdcAddress,
      abi: usdcAbi,
      functionName: 'cancelAuthorization',
      args: [getAddress(p.address), row.nonce as Hex, signature],
    })
    const rc = await deps.chain.waitForTransactionReceipt({ hash })
    t.equal(rc.status, 'success')
    await createSettler(deps).runOnce()
    const after = await db.selectFrom('payments').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow()
    t.equal(after.status, 'failed')
    t.equal(after.failure_reason, 'authorization_canceled')
    t.equal(after.tx_hash, null)
  })

  t.test('sync mode returns a real transaction hash the chain confirms', async (t) => {
    await db.updateTable('endpoints').set({ settlement_mode: 'sync' }).where('slug', '=', 'hash-generator').execute()
    const sync = createSyncSettlement(deps)
    const { url } = await platform.startProxy({ sync })
    const p = await newPayer(platform, 5_000n)
    const { wrapFetchWithPaymentFromConfig } = await import('@x402/fetch')
    const { ExactEvmScheme } = await import('@x402/evm')
    const pay = wrapFetchWithPaymentFromConfig(fetch, {
      schemes: [{ network: 'eip155:84532', client: new ExactEvmScheme(privateKeyToAccount(p.key)) }],
    })
    const res = await pay(url + paidPath)
    t.equal(res.status, 200, await res.clone().text())
    const header = decodePaymentResponseHeader(res.headers.get('payment-response')!)
    const row = await db
      .selectFrom('payments')
      .selectAll()
      .where('payer', '=', p.address.toLowerCase())
      .executeTakeFirstOrThrow()
    t.equal(row.status, 'settled')
    t.equal(header.transaction, row.tx_hash, 'response carries the settlement tx hash')
    const receipt = await deps.chain.getTransactionReceipt({ hash: row.tx_hash as Hex })
    t.equal(receipt.status, 'success')
    t.same(await sync.settleNow(row.id), { ok: true, txHash: row.tx_hash }, 'idempotent')

    // the same payer empties its wallet; its cached balance still covers a call, which settlement then cannot
    await deps.chain.waitForTransactionReceipt({
      hash: await walletFor(platform, p.key).writeContract({
        address: devnet.usdcAddress,
        abi: usdcAbi,
        functionName: 'transfer',
        args: [devnet.accounts.faucet.address, 4_000n],
      }),
    })
    const required = decodeRequired((await fetch(url + paidPath)).headers.get('payment-required'))
    const refused = await fetch(url + paidPath, {
      headers: { 'payment-signature': v2Header(required, await signFor(privateKeyToAccount(p.key), required)) },
    })
    const body = JSON.parse(await refused.text())
    t.equal(refused.status, 402, 'a sync payment that fails on-chain: the response is withheld')
    t.notOk('digests' in body, "the handler's output is not in it")
    t.equal(body.x402Version, 1, 'the challenge is, to pay again')
    t.equal(refused.headers.get('payment-response'), null, 'no settlement receipt')
    const challenge = JSON.parse(Buffer.from(refused.headers.get('payment-required')!, 'base64').toString())
    t.equal(challenge.error, 'insufficient_funds')
    t.equal(body.error, 'insufficient_funds')
    t.match(body.message, /withheld; nothing was charged/)
    const failed = await db
      .selectFrom('payments')
      .select(['status', 'failure_reason', 'tx_hash'])
      .where('payer', '=', p.address.toLowerCase())
      .where('status', '!=', 'settled')
      .executeTakeFirstOrThrow()
    t.same(failed, { status: 'failed', failure_reason: 'insufficient_funds', tx_hash: null })
  })
})
