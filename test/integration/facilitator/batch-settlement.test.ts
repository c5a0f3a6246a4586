/**
 * Facilitator mode, `batch-settlement`: a seller's own server runs the official `@x402/express`
 * middleware with the official batch-settlement server scheme (`@x402/evm/batch-settlement/server`)
 * and `HTTPFacilitatorClient` pointing at Tollgate; the official batch-settlement client pays it
 * through `@x402/fetch`, unmodified. The deposit goes through Tollgate's relayer, the vouchers are
 * the server's, and the server's channel manager claims and settles through Tollgate: the receiver
 * gets exactly what was charged on the devnet.
 */
import type { Server } from 'node:http'
import express from 'express'
import t from 'tap'
import { erc20Abi } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { HTTPFacilitatorClient } from '@x402/core/server'
import { paymentMiddleware, x402ResourceServer } from '@x402/express'
import { BatchSettlementEvmScheme as BatchServerScheme } from '@x402/evm/batch-settlement/server'
import { signVoucher } from '@x402/evm/batch-settlement/client'
import { toClientEvmSigner } from '@x402/evm'
import { DEVNET_USDC_ADDRESS } from '../../../src/chain/devnet.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { MASTER_KEY, userWithKey } from '../../helpers/accounts.js'
import { batchBuyer, receiptOf } from '../../helpers/batch-buyer.js'
import { evmClients } from '../../helpers/evm-chain.js'
import { decodeRequired } from '../../helpers/pay.js'
import { closeListening, freePort, startTestPlatform } from '../../helpers/platform.js'
import { newPayer } from '../../helpers/settlement.js'

const PRICE = 1000n

t.test('facilitator mode: the official batch-settlement server is paid through Tollgate', async (t) => {
  const platform = await startTestPlatform(t, { env: { TOLLGATE_MASTER_KEY: MASTER_KEY } })
  const { deps, devnet } = platform
  const network = `eip155:${devnet.chainId}` as const
  const web = await buildWebApp(deps, { logger: false })
  await web.listen({ host: '127.0.0.1', port: await freePort() })
  t.teardown(() => closeListening(web))
  const facilitatorUrl = `http://127.0.0.1:${(web.server.address() as { port: number }).port}/facilitator`
  const seller = await userWithKey(deps)
  const { pub } = await evmClients(devnet)
  const usdcOf = (a: `0x${string}`) =>
    pub.readContract({ address: DEVNET_USDC_ADDRESS, abi: erc20Abi, functionName: 'balanceOf', args: [a] })

  // /supported declares the kind with the platform's receiverAuthorizer
  const supported = await (await fetch(`${facilitatorUrl}/supported`)).json()
  const kind = supported.kinds.find((k: { scheme: string }) => k.scheme === 'batch-settlement')
  const platformKey = await deps.db.selectFrom('platform_keys').selectAll().executeTakeFirstOrThrow()
  t.match(kind, { x402Version: 2, network })
  t.equal(
    String(kind.extra.receiverAuthorizer).toLowerCase(),
    platformKey.address,
    'receiverAuthorizer: the platform key',
  )

  // the seller's own server: official middleware and batch-settlement server scheme, unmodified
  const payTo = privateKeyToAccount(generatePrivateKey()).address
  const keyed = (apiKey: string) =>
    new HTTPFacilitatorClient({
      url: facilitatorUrl,
      createAuthHeaders: async () => {
        const h = { Authorization: `Bearer ${apiKey}` }
        return { verify: h, settle: h, supported: h }
      },
    })
  const facilitator = keyed(seller.apiKey)
  const scheme = new BatchServerScheme(payTo)
  const resourceServer = new x402ResourceServer(facilitator).register(network, scheme)
  const app = express()
  app.use(
    paymentMiddleware(
      {
        'GET /weather': {
          accepts: { scheme: 'batch-settlement', price: '$0.001', network, payTo, maxTimeoutSeconds: 60 },
          description: 'weather',
        },
      },
      resourceServer,
    ),
  )
  app.get('/weather', (_req, res) => {
    res.json({ weather: 'sunny' })
  })
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/weather`
  const post = (path: string, body: unknown, apiKey = seller.apiKey) =>
    fetch(`${facilitatorUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify(body),
    })
  const call = (paymentPayload: { accepted: unknown }) => ({
    x402Version: 2,
    paymentPayload,
    paymentRequirements: paymentPayload.accepted,
  })

  const payer = await newPayer(platform, 1_000_000n)
  const buyer = batchBuyer(platform, payer.key)
  let channelId = ''
  let calls = 0
  // what the client deposits: the server's minDeposit hint (10 x the price) caps its multiplier
  const DEPOSIT = 10n * PRICE

  await t.test('deposit: the first call opens the channel through Tollgate’s relayer', async (t) => {
    const res = await buyer.pay(url)
    t.equal(res.status, 200, await res.clone().text())
    calls++
    const r = receiptOf(res)
    t.match(r.transaction, /^0x[0-9a-f]{64}$/, 'the deposit transaction')
    t.equal(r.amount, String(DEPOSIT))
    t.equal(await usdcOf(payer.address), 1_000_000n - DEPOSIT, 'the buyer deposited')
    const rows = await deps.db.selectFrom('facilitator_settlements').selectAll().execute()
    t.match(
      rows.map((row) => [row.action, row.status, row.user_id, row.tx_hash]),
      [['deposit', 'settled', seller.userId, r.transaction]],
      'recorded as the seller’s deposit',
    )
    const bound = await deps.db.selectFrom('facilitator_batch_channels').selectAll().executeTakeFirstOrThrow()
    t.equal(bound.user_id, seller.userId, 'the channel is the seller’s')
    channelId = bound.channel_id
  })

  await t.test('several voucher calls, no transaction each', async (t) => {
    for (let i = 0; i < 5; i++) {
      const res = await buyer.pay(url)
      t.equal(res.status, 200, `voucher call ${i + 1}`)
      calls++
      t.equal(receiptOf(res).transaction, '')
    }
    t.equal(await usdcOf(payTo), 0n, 'nothing moved to the receiver yet')
  })

  await t.test('replay and tampering are refused', async (t) => {
    // a replayed voucher at the server: the official server's corrective 402
    const replay = await fetch(url, { headers: { 'payment-signature': buyer.sent.at(-1)! } })
    t.equal(replay.status, 402)
    t.equal(
      decodeRequired(replay.headers.get('payment-required')).error,
      'invalid_batch_settlement_evm_cumulative_amount_mismatch',
    )
    // the replayed deposit at Tollgate: verify refuses it, settle answers the first deposit, no second
    const deposit = JSON.parse(Buffer.from(buyer.sent[0]!, 'base64').toString())
    t.match(await (await post('/verify', call(deposit))).json(), {
      isValid: false,
      invalidReason: 'invalid_batch_settlement_evm_deposit_simulation_failed',
    })
    const first = await deps.db.selectFrom('facilitator_settlements').select('tx_hash').executeTakeFirstOrThrow()
    t.match(await (await post('/settle', call(deposit))).json(), { success: true, transaction: first.tx_hash })
    t.equal(await usdcOf(payer.address), 1_000_000n - DEPOSIT, 'one deposit')
    // a voucher raised after signing / signed by another key
    const voucher = JSON.parse(Buffer.from(buyer.sent.at(-1)!, 'base64').toString())
    const raised = structuredClone(voucher)
    raised.payload.voucher.maxClaimableAmount = '9000'
    t.match(await (await post('/verify', call(raised))).json(), {
      isValid: false,
      invalidReason: 'invalid_batch_settlement_evm_voucher_signature',
    })
    const forged = structuredClone(voucher)
    const other = toClientEvmSigner(privateKeyToAccount(generatePrivateKey()))
    forged.payload.voucher = await signVoucher(other, channelId as `0x${string}`, '7000', network)
    const header = Buffer.from(JSON.stringify(forged)).toString('base64')
    t.equal((await fetch(url, { headers: { 'payment-signature': header } })).status, 402, 'the server refuses it')
    t.match(await (await post('/verify', call(forged))).json(), {
      isValid: false,
      invalidReason: 'invalid_batch_settlement_evm_voucher_signature',
    })
    // the untampered voucher verifies at Tollgate, with the channel's state
    t.match(await (await post('/verify', call(voucher))).json(), {
      isValid: true,
      extra: { channelId, balance: String(DEPOSIT), totalClaimed: '0' },
    })
  })

  /** The channel manager's `settle` of the seller's receiver, as it builds it (amount 0, no timeout). */
  const settleOf = () =>
    call({
      x402Version: 2,
      accepted: {
        scheme: 'batch-settlement',
        network,
        asset: DEVNET_USDC_ADDRESS,
        amount: '0',
        payTo,
        maxTimeoutSeconds: 0,
        extra: {},
      },
      payload: { type: 'settle', receiver: payTo, token: DEVNET_USDC_ADDRESS },
    } as never)

  await t.test('another seller’s key cannot claim this channel', async (t) => {
    const intruder = await userWithKey(deps)
    const manager = scheme.createChannelManager(keyed(intruder.apiKey), network, DEVNET_USDC_ADDRESS)
    await t.rejects(manager.claim(), /facilitator_channel_not_yours/)
    const s = await post('/settle', settleOf(), intruder.apiKey)
    t.match(await s.json(), { success: false, errorReason: 'facilitator_channel_not_yours' })
  })

  await t.test('the seller’s claim and settle through Tollgate move exactly the charged sum', async (t) => {
    const charged = BigInt(calls) * PRICE
    const manager = scheme.createChannelManager(facilitator, network, DEVNET_USDC_ADDRESS)
    const claims = await manager.claim()
    t.equal(claims.length, 1, 'one claim batch')
    t.match(claims[0], { vouchers: 1, transaction: /^0x[0-9a-f]{64}$/ })
    // two settles at once: one transaction, one answer
    const settle = settleOf()
    const [a, b] = await Promise.all([post('/settle', settle), post('/settle', settle)])
    const [ja, jb] = [await a.json(), await b.json()]
    t.match(ja, { success: true, transaction: /^0x[0-9a-f]{64}$/, amount: String(charged) })
    t.same(jb, ja, 'the second answer is the first')
    t.equal(await usdcOf(payTo), charged, `the receiver got exactly ${charged}`)
    // a repeat after the transaction mined (the same claimed total, settled here): the first answer
    // again, nothing sent; so for the manager's own settle (two at once may meet either way on the chain)
    t.same(await (await post('/settle', settle)).json(), ja, 'a later repeat answers the first settle')
    t.same(await manager.settle(), { transaction: ja.transaction }, "the manager's settle: the same transaction")
    t.equal(await usdcOf(payTo), charged, 'and nothing more moved')
    const rows = await deps.db
      .selectFrom('facilitator_settlements')
      .select(['action', 'status', 'value'])
      .orderBy('created_at')
      .execute()
    t.same(
      rows.map((r) => [r.action, r.status, r.value]),
      [
        ['deposit', 'settled', String(DEPOSIT)],
        ['claim', 'settled', String(charged)],
        ['settle', 'settled', String(charged)],
      ],
    )
    t.equal(await usdcOf(payer.address), 1_000_000n - DEPOSIT)
  })

  await t.test('the buyer pays on after the claim; the cooperative refund returns the rest', async (t) => {
    const res = await buyer.pay(url)
    t.equal(res.status, 200, await res.clone().text())
    calls++
    const manager = scheme.createChannelManager(facilitator, network, DEVNET_USDC_ADDRESS)
    const refunds = await manager.refund()
    t.equal(refunds.length, 1)
    t.match(refunds[0], { transaction: /^0x[0-9a-f]{64}$/ })
    const charged = BigInt(calls) * PRICE
    t.equal(await usdcOf(payer.address), 1_000_000n - charged, 'the buyer got back all it was not charged')
    // the refund claimed the last call first (one multicall): the receiver settles it
    t.same(await manager.getClaimableVouchers(), [], 'nothing left to claim')
    const settled = await manager.settle()
    t.match(settled, { transaction: /^0x[0-9a-f]{64}$/ })
    t.equal(await usdcOf(payTo), charged, 'the receiver holds every charged call')
    const refund = await deps.db
      .selectFrom('facilitator_settlements')
      .select(['status', 'value'])
      .where('action', '=', 'refund')
      .executeTakeFirstOrThrow()
    t.same(refund, { status: 'settled', value: String(DEPOSIT - charged) })
  })

  await t.test('two settles of one deposit at once: one deposit, one answer', async (t) => {
    const second = await newPayer(platform, 1_000_000n)
    const accepted = decodeRequired((await fetch(url)).headers.get('payment-required')).accepts[0]!
    const made = await batchBuyer(platform, second.key).scheme.createPaymentPayload(2, accepted as never)
    const body = call({ x402Version: 2, accepted, payload: made.payload } as never)
    t.match(await (await post('/verify', body)).json(), { isValid: true })
    const [a, b] = await Promise.all([post('/settle', body), post('/settle', body)])
    const [ja, jb] = [await a.json(), await b.json()]
    t.match(ja, { success: true, transaction: /^0x[0-9a-f]{64}$/, amount: String(DEPOSIT) })
    t.same(jb, ja, 'the second answer is the first')
    t.equal(await usdcOf(second.address), 1_000_000n - DEPOSIT, 'deposited once')
    const rows = await deps.db
      .selectFrom('facilitator_settlements')
      .select('tx_hash')
      .where('action', '=', 'deposit')
      .where('payer', '=', second.address.toLowerCase())
      .execute()
    t.same(rows, [{ tx_hash: ja.transaction }], 'one row, one transaction')
  })

  await t.test('facilitator key required', async (t) => {
    for (const path of ['/verify', '/settle']) {
      const none = await fetch(`${facilitatorUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      })
      t.equal(none.status, 401)
      t.equal((await none.json()).code, 'facilitator_key_required')
    }
  })
})
