/**
 * `batch-settlement` end to end on the devnet (the dev-chain x402BatchSettlement at its canonical
 * address), paid by the official `@x402/evm` client scheme through `@x402/fetch`, unmodified: the
 * deposit before the first call, 20 voucher calls, a replayed voucher refused, a fresh client with
 * the same key recovering from the corrective 402 by itself, a voucher signed by another key
 * refused, parallel calls on one channel never charged twice, and a Redis copy lost.
 */
import { signVoucher } from '@x402/evm/batch-settlement/client'
import { toClientEvmSigner } from '@x402/evm'
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer, paidPath } from '../../helpers/settlement.js'
import { batchBuyer, receiptOf } from '../../helpers/batch-buyer.js'

const MASTER = '31'.repeat(32)

t.test('batch-settlement: the official client pays the platform’s hosted endpoints', async (t) => {
  const platform = await startTestPlatform(t, { env: { TOLLGATE_MASTER_KEY: MASTER } })
  const { deps, proxyUrl } = platform
  const db = deps.db
  const url = `${proxyUrl}${paidPath}`
  const key = await db.selectFrom('platform_keys').selectAll().executeTakeFirstOrThrow()

  // offered by default on a hosted endpoint, beside exact, with the spec's extra
  const required = decodeRequired((await fetch(url)).headers.get('payment-required'))
  const offer = required.accepts.find((a) => a.scheme === 'batch-settlement')!
  t.same(required.accepts[0]!.scheme, 'exact', 'exact first')
  t.match(offer, {
    amount: '1000',
    extra: { withdrawDelay: 900, name: deps.config.chain.usdc.name, version: deps.config.chain.usdc.version },
  })
  t.equal(String(offer.extra!.receiverAuthorizer).toLowerCase(), key.address, 'receiverAuthorizer: the platform key')

  const payer = await newPayer(platform, 1_000_000n)
  const a = batchBuyer(platform, payer.key)

  // the first call deposits (30 x the price), submitted by our relayer before the answer
  const first = await a.pay(url)
  t.equal(first.status, 200, await first.clone().text())
  const r0 = receiptOf(first)
  t.match(r0.transaction, /^0x[0-9a-f]{64}$/, 'the receipt carries the deposit transaction')
  t.equal(r0.amount, '30000', 'and the deposited amount')
  t.match(r0.extra, { chargedAmount: '1000', channelState: { chargedCumulativeAmount: '1000', balance: '30000' } })
  const channelId = String(r0.extra!.channelState!.channelId)
  const deposits = await db.selectFrom('batch_transactions').selectAll().where('kind', '=', 'deposit').execute()
  t.same(
    deposits.map((d) => [d.status, d.tx_hash]),
    [['confirmed', r0.transaction]],
    'the deposit is recorded',
  )

  // 20 voucher calls: no transaction each, the cumulative amount moves by the price
  for (let i = 2; i <= 21; i++) {
    const res = await a.pay(url)
    t.equal(res.status, 200, `call ${i}`)
    const r = receiptOf(res)
    if (r.transaction !== '' || r.extra?.channelState?.chargedCumulativeAmount !== String(i * 1000))
      t.fail(`call ${i}: ${JSON.stringify(r)}`)
  }
  const ch = await db
    .selectFrom('batch_channels')
    .selectAll()
    .where('channel_id', '=', channelId)
    .executeTakeFirstOrThrow()
  t.match(ch, { charged: '21000', signed_max_claimable: '21000', balance: '30000', payer: payer.address.toLowerCase() })
  t.ok(ch.oldest_unclaimed_at, 'unclaimed since the first charge: the claim worker starts from it')
  const rows = await db
    .selectFrom('payments')
    .select(['status', 'value', 'scheme'])
    .where('payer', '=', payer.address.toLowerCase())
    .execute()
  t.equal(rows.length, 21, 'each call is in the payments history')
  t.ok(
    rows.every((r) => r.scheme === 'batch-settlement' && r.status === 'served' && r.value === '1000'),
    'served, 1000 each',
  )

  // a replayed voucher: refused with the corrective 402, nothing charged
  const replay = await fetch(url, { headers: { 'payment-signature': a.sent.at(-1)! } })
  t.equal(replay.status, 402)
  const corrective = decodeRequired(replay.headers.get('payment-required'))
  t.equal(corrective.error, 'invalid_batch_settlement_evm_cumulative_amount_mismatch')
  const fix = corrective.accepts.find((x) => x.scheme === 'batch-settlement')!.extra!
  t.match(fix, {
    channelState: { channelId, chargedCumulativeAmount: '21000' },
    voucherState: { signedMaxClaimable: '21000' },
  })

  // a fresh client with the same key (no local state): recovers from the corrective 402 by itself
  const fresh = batchBuyer(platform, payer.key)
  const again = await fresh.pay(url)
  t.equal(again.status, 200, 'recovered and paid')
  t.equal(receiptOf(again).extra?.channelState?.chargedCumulativeAmount, '22000')
  t.equal(fresh.sent.length, 2, 'one stale voucher, one corrected')

  // a voucher for the right amount signed by another key: refused
  const other = privateKeyToAccount(generatePrivateKey())
  const forged = JSON.parse(Buffer.from(fresh.sent.at(-1)!, 'base64').toString())
  const v = await signVoucher(toClientEvmSigner(other), channelId as `0x${string}`, '23000', offer.network)
  forged.payload.voucher = v
  const refused = await fetch(url, {
    headers: { 'payment-signature': Buffer.from(JSON.stringify(forged)).toString('base64') },
  })
  t.equal(
    decodeRequired(refused.headers.get('payment-required')).error,
    'invalid_batch_settlement_evm_voucher_signature',
  )

  // parallel calls on one channel: each served call charged once, never more
  const statuses = await Promise.all(Array.from({ length: 6 }, () => fresh.pay(url).then((r) => r.status)))
  const served = statuses.filter((s) => s === 200).length
  t.ok(served >= 1, `served ${served} of 6 (${statuses.join(',')})`)
  const after = await db
    .selectFrom('batch_channels')
    .select('charged')
    .where('channel_id', '=', channelId)
    .executeTakeFirstOrThrow()
  const paid = await db
    .selectFrom('payments')
    .select((eb) => eb.fn.sum<string>('value').as('sum'))
    .where('payer', '=', payer.address.toLowerCase())
    .where('status', '=', 'served')
    .executeTakeFirstOrThrow()
  t.equal(after.charged, String((22 + served) * 1000), 'the channel moved by the served calls only')
  t.equal(paid.sum, after.charged, 'payments history = the channel charge')

  // Redis lost: the channel is rebuilt from Postgres
  const keys = await deps.redis.keys(deps.key('bsch', '*'))
  t.ok(keys.length >= 1)
  await deps.redis.del(...keys)
  const rebuilt = await fresh.pay(url)
  t.equal(rebuilt.status, 200, await rebuilt.clone().text())
  t.equal(receiptOf(rebuilt).extra?.channelState?.chargedCumulativeAmount, String((23 + served) * 1000))

  // a buyer without the funds it deposits: refused before anything is served or charged
  const poor = await newPayer(platform, 10n)
  const broke = await batchBuyer(platform, poor.key).pay(url)
  t.equal(broke.status, 402)
  t.equal(
    decodeRequired(broke.headers.get('payment-required')).error,
    'invalid_batch_settlement_evm_insufficient_balance',
  )
  const poorRows = await db
    .selectFrom('payments')
    .select('id')
    .where('payer', '=', poor.address.toLowerCase())
    .execute()
  t.equal(poorRows.length, 0, 'nothing recorded')
})
