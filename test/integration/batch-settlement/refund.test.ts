/**
 * The cooperative refund of `batch-settlement` (the spec's "Cooperative refund flow") on the devnet,
 * asked by the official `@x402/evm` client's `refund` (BatchSettlementEvmScheme.refund, its
 * `refundChannel`), unmodified: a partial refund returns the amount asked, the charged amount is
 * claimed in the same transaction, the channel is used again, and the full refund returns exactly
 * the unclaimed rest. A second refund, a stale refund voucher and a voucher above what is left get
 * the spec's refusals; the client pays on by topping the channel up. Nothing of it is a payment row.
 */
import { signVoucher } from '@x402/evm/batch-settlement/client'
import { toClientEvmSigner } from '@x402/evm'
import t from 'tap'
import { createPublicClient, http, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { readChannel } from '../../../src/chain/batch-settlement/channel.js'
import { tokenBalance } from '../../../src/schemes/batch-settlement/chain.js'
import { batchBuyer, receiptOf } from '../../helpers/batch-buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer, paidPath } from '../../helpers/settlement.js'

type Json = Record<string, unknown>

t.test('batch-settlement: cooperative refunds asked by the official client', async (t) => {
  const platform = await startTestPlatform(t, { env: { TOLLGATE_MASTER_KEY: '35'.repeat(32) } })
  const { deps, proxyUrl } = platform
  const db = deps.db
  const url = `${proxyUrl}${paidPath}`
  const pub = createPublicClient({ transport: http(platform.devnet.rpcUrl) })
  const usdc = deps.config.chain.usdc.address as Hex
  const payer = await newPayer(platform, 1_000_000n)
  const held = () => tokenBalance(pub, usdc, payer.address)
  const a = batchBuyer(platform, payer.key)

  for (let i = 0; i < 3; i++) t.equal((await a.pay(url)).status, 200, `call ${i + 1}`)
  const channelId = String(
    (await db.selectFrom('batch_channels').select('channel_id').executeTakeFirstOrThrow()).channel_id,
  ) as Hex
  t.match(await readChannel(pub, channelId), { balance: 30_000n, totalClaimed: 0n, refundNonce: 0n })
  const before = await held()

  // the refunds' payloads, as the client sends them
  const sent: string[] = []
  const recording: typeof fetch = async (input, init) => {
    const req = new Request(input, init)
    const h = req.headers.get('payment-signature')
    if (h) sent.push(h)
    return fetch(req)
  }

  // partial: 5000 back, the 3000 charged claimed in the same transaction
  const partial = (await a.scheme.refund(url, { amount: '5000', fetch: recording })) as unknown as Json
  t.match(partial, { success: true, amount: '5000', transaction: /^0x[0-9a-f]{64}$/ })
  t.match((partial.extra as Json).channelState, {
    channelId,
    balance: '25000',
    totalClaimed: '3000',
    refundNonce: '1',
    chargedCumulativeAmount: '3000',
  })
  t.notOk((partial.extra as Json).chargedAmount, 'a refund charges nothing')
  t.equal(await held(), before + 5000n, 'the payer got 5000 back')
  t.match(await readChannel(pub, channelId), { balance: 25_000n, totalClaimed: 3000n, refundNonce: 1n })
  const tx1 = await db.selectFrom('batch_transactions').selectAll().where('kind', '=', 'refund').execute()
  t.match(
    tx1.map((r) => [r.status, r.amount, r.tx_hash]),
    [['confirmed', '5000', partial.transaction]],
    'recorded, decided from its receipt',
  )
  t.match(await db.selectFrom('batch_channels').selectAll().executeTakeFirstOrThrow(), {
    balance: '25000',
    total_claimed: '3000',
    refund_nonce: '1',
    charged: '3000',
  })

  // the channel is used again after a partial refund
  const next = await a.pay(url)
  t.equal(next.status, 200, await next.clone().text())
  t.match(receiptOf(next).extra?.channelState, { chargedCumulativeAmount: '4000', balance: '25000' })

  // a refund voucher that is not what was charged: the corrective 402, nothing moves
  const stale = JSON.parse(Buffer.from(sent.at(-1)!, 'base64').toString()) as Json
  const res = await fetch(url, { headers: { 'payment-signature': sent.at(-1)! } })
  t.equal(res.status, 402)
  const corr = decodeRequired(res.headers.get('payment-required'))
  t.equal(corr.error, 'invalid_batch_settlement_evm_cumulative_amount_mismatch', 'stale refund voucher (3000 < 4000)')
  t.match(corr.accepts.find((x) => x.scheme === 'batch-settlement')!.extra, {
    channelState: { chargedCumulativeAmount: '4000' },
  })

  // a partial refund above what is left: refused, the client does not retry it
  await t.rejects(
    a.scheme.refund(url, { amount: '21001', fetch: recording }),
    /invalid_batch_settlement_evm_refund_amount_invalid/,
  )

  // full: exactly the unclaimed rest (25000 - 4000 charged), the charge claimed
  const full = (await a.scheme.refund(url, { fetch: recording })) as unknown as Json
  t.match(full, { success: true, amount: '21000' })
  t.equal(await held(), before + 5000n + 21_000n, 'the payer got the rest back')
  const onChain = await readChannel(pub, channelId)
  t.match(onChain, { balance: 4000n, totalClaimed: 4000n, refundNonce: 2n }, 'nothing unclaimed is left')
  const refunds = await db
    .selectFrom('batch_transactions')
    .select(['status', 'amount'])
    .where('kind', '=', 'refund')
    .orderBy('created_at')
    .execute()
  t.same(
    refunds.map((r) => [r.status, r.amount]),
    [
      ['confirmed', '5000'],
      ['confirmed', '21000'],
    ],
  )

  // the same refund again: nothing refundable is left
  const again = await fetch(url, { headers: { 'payment-signature': sent.at(-1)! } })
  t.equal(again.status, 402)
  t.equal(decodeRequired(again.headers.get('payment-required')).error, 'invalid_batch_settlement_evm_refund_no_balance')
  // and the official client says so itself (it reads the channel from the chain)
  await t.rejects(a.scheme.refund(url, { fetch: recording }), /no remaining balance/)

  // a voucher after the refund: above what the channel holds
  const signer = toClientEvmSigner(privateKeyToAccount(payer.key))
  const voucher = await signVoucher(signer, channelId, '5000', String((stale.accepted as Json).network))
  const after = { ...stale, payload: { ...(stale.payload as Json), type: 'voucher', voucher } }
  delete (after.payload as Json).amount
  const v = await fetch(url, {
    headers: { 'payment-signature': Buffer.from(JSON.stringify(after)).toString('base64') },
  })
  t.equal(v.status, 402)
  t.equal(
    decodeRequired(v.headers.get('payment-required')).error,
    'invalid_batch_settlement_evm_cumulative_exceeds_balance',
  )

  // the official client pays on: it tops the channel up and is served
  const topped = await a.pay(url)
  t.equal(topped.status, 200, await topped.clone().text())
  t.match(receiptOf(topped), { amount: /^[1-9]/, extra: { channelState: { chargedCumulativeAmount: '5000' } } })

  // refunds are not payments
  const rows = await db
    .selectFrom('payments')
    .select('value')
    .where('payer', '=', payer.address.toLowerCase())
    .execute()
  t.equal(rows.length, 5, 'the five served calls only')
})
