import t from 'tap'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import { decodePaymentResponseHeader, wrapFetchWithPaymentFromConfig } from '@x402/fetch'
import { ExactEvmScheme } from '@x402/evm'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { deployAavePoolStandIn } from '../helpers/aave-pool-stand-in.js'
import { withDevnet } from '../helpers/devnet.js'
import { startTestPlatform } from '../helpers/platform.js'

t.test('hosted service B: a paid wallet score through the proxy with the official v2 client', async (t) => {
  const devnet = await withDevnet(t)
  const pool = await deployAavePoolStandIn(devnet)
  // WALLET_SCORE_RPC_URL is left to default to the platform's RPC (the devnet)
  const platform = await startTestPlatform(t, { devnet, env: { WALLET_SCORE_AAVE_POOL: pool.address } })
  const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)
  const scored = privateKeyToAccount(generatePrivateKey()).address
  await pool.setAccount(scored, { collateralUsd: 5_000, debtUsd: 4_300, availableUsd: 0, healthFactor: 1.05 })
  await pool.liquidate(scored)
  const url = `${platform.proxyUrl}/tollgate/wallet-score/wallet-behavior-score-query?address=${scored}`

  const challenge = await fetch(url)
  t.equal(challenge.status, 402)
  const required = decodePaymentRequiredHeader(challenge.headers.get('payment-required')!)
  t.equal(required.accepts[0]!.amount, '10000', 'priced at 0.01 USDC')
  t.equal(required.accepts[0]!.payTo.toLowerCase(), platform.devnet.accounts.receiver.address.toLowerCase())

  const pay = wrapFetchWithPaymentFromConfig(fetch, {
    schemes: [{ network: 'eip155:84532', client: new ExactEvmScheme(payer) }],
  })
  const res = await pay(url, { method: 'GET' })
  const text = await res.text()
  t.equal(res.status, 200, text)
  const out = JSON.parse(text)
  t.equal(out.address, scored)
  t.equal(out.pool, pool.address)
  t.equal(out.liquidations.count, 1)
  t.equal(out.account.healthFactor, 1.05)
  t.equal(out.classification, 'critical')
  t.equal(out.components.length, 5)

  const decoded = decodePaymentResponseHeader(res.headers.get('payment-response')!)
  t.equal(decoded.success, true)
  t.equal(decoded.payer?.toLowerCase(), payer.address.toLowerCase())
  const row = await platform.deps.db
    .selectFrom('payments')
    .innerJoin('endpoints', 'endpoints.id', 'payments.endpoint_id')
    .select(['payments.status', 'payments.value', 'payments.x402_version', 'endpoints.slug', 'endpoints.methods'])
    .where('payments.payer', '=', payer.address.toLowerCase())
    .executeTakeFirstOrThrow()
  t.match(row, { status: 'served', value: '10000', x402_version: 2, slug: 'wallet-behavior-score-query' })
  t.same(row.methods, ['GET'], 'service B is GET only')

  const post = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ address: scored }),
  })
  t.ok(
    post.status >= 400 && post.status < 500 && post.status !== 402,
    `POST is refused without a challenge: ${post.status}`,
  )

  const bad = await pay(`${platform.proxyUrl}/tollgate/wallet-score/wallet-behavior-score-query?address=0x123`, {
    method: 'GET',
  })
  const badBody = await bad.json()
  t.equal(bad.status, 400)
  t.match(JSON.stringify(badBody), /address/, 'names the field')
  // refused before any payment (or voided if one was made): the buyer is charged once in all
  const charged = await platform.deps.db
    .selectFrom('payments')
    .select(['status'])
    .where('payer', '=', payer.address.toLowerCase())
    .where('status', '!=', 'voided')
    .execute()
  t.same(
    charged.map((r) => r.status),
    ['served'],
    'the 400 cost the buyer nothing',
  )
})

t.test(
  'service B unconfigured: the challenge, then 503 before any payment is recorded; the test endpoint still works',
  async (t) => {
    const platform = await startTestPlatform(t)
    const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)
    const pay = wrapFetchWithPaymentFromConfig(fetch, {
      schemes: [{ network: 'eip155:84532', client: new ExactEvmScheme(payer) }],
    })
    const query = `tollgate/wallet-score/wallet-behavior-score-query?address=${payer.address}`
    const unpaid = await fetch(`${platform.proxyUrl}/${query}`)
    await unpaid.arrayBuffer()
    t.equal(unpaid.status, 402, 'published: an unpaid call gets the challenge (spec 4.3)')
    const res = await pay(`${platform.proxyUrl}/${query}`, { method: 'GET' })
    const text = await res.text()
    t.equal(res.status, 503, text)
    t.match(JSON.parse(text), {
      code: 'upstream_not_configured',
      message: /WALLET_SCORE_AAVE_POOL.*nothing was charged/,
    })

    const ok = await pay(`${platform.proxyUrl}/tollgate/wallet-score/wallet-behavior-score-test?preset=high`, {
      method: 'GET',
    })
    t.equal(ok.status, 200)
    t.match(await ok.json(), { hypothetical: true, classification: 'high', score: 60 })
    const rows = await platform.deps.db
      .selectFrom('payments')
      .select(['status', 'value'])
      .where('payer', '=', payer.address.toLowerCase())
      .orderBy('created_at')
      .execute()
    t.same(
      rows.map((r) => [r.status, r.value]),
      [['served', '10000']],
      'the unconfigured endpoint left no payment at all',
    )
  },
)
