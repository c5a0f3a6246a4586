import t from 'tap'
import { decodePaymentResponseHeader, wrapFetchWithPaymentFromConfig } from '@x402/fetch'
import { ExactEvmScheme } from '@x402/evm'
import { wrapFetchWithPayment, decodeXPaymentResponse } from 'x402-fetch'
import { createWalletClient, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { baseSepolia } from 'viem/chains'
import type { Devnet } from '../../src/chain/devnet.js'
import { withDevnet } from '../helpers/devnet.js'
import { startTestPlatform } from '../helpers/platform.js'

// one chain for both platforms below (each has its own schema and Redis prefix)
const devnet = await withDevnet(t)

/** The demo payer with each official client, default settings: `v2` is @x402/fetch, `v1` is x402-fetch. */
function officialClients(chain: Devnet) {
  const payer = privateKeyToAccount(chain.accounts.demoPayer.privateKey)
  return {
    payer,
    v2: wrapFetchWithPaymentFromConfig(fetch, {
      schemes: [{ network: 'eip155:84532', client: new ExactEvmScheme(payer) }],
    }),
    v1: wrapFetchWithPayment(
      fetch,
      createWalletClient({ account: payer, transport: http(chain.rpcUrl), chain: baseSepolia }) as never,
    ),
  }
}

t.test('official x402 clients pay a hosted endpoint unmodified', async (t) => {
  const platform = await startTestPlatform(t, { devnet })
  const { payer, v1, v2 } = officialClients(devnet)
  const url = `${platform.proxyUrl}/tollgate/toolbox/hash-generator?text=abc&algorithms=sha256`

  t.test('@x402/fetch (v2) with default settings', async (t) => {
    const res = await v2(url, { method: 'GET' })
    const text = await res.text()
    t.equal(res.status, 200, text)
    t.match(text, 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    const header = res.headers.get('payment-response')
    t.ok(header, 'PAYMENT-RESPONSE header present')
    const decoded = decodePaymentResponseHeader(header!)
    t.equal(decoded.success, true)
    t.equal(decoded.payer?.toLowerCase(), payer.address.toLowerCase())
    t.equal(decoded.network, 'eip155:84532')
    const row = await platform.deps.db
      .selectFrom('payments')
      .selectAll()
      .where('payer', '=', payer.address.toLowerCase())
      .where('x402_version', '=', 2)
      .executeTakeFirstOrThrow()
    t.equal(row.status, 'served')
    t.equal(row.value, '1000')
  })

  t.test('x402-fetch (v1) with default settings', async (t) => {
    const res = await v1(url, { method: 'GET' })
    const text = await res.text()
    t.equal(res.status, 200, text)
    t.match(text, 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    const header = res.headers.get('x-payment-response')
    t.ok(header, 'X-PAYMENT-RESPONSE header present')
    const decoded = decodeXPaymentResponse(header!)
    t.equal(decoded.success, true)
    t.equal(decoded.network, 'base-sepolia')
    const row = await platform.deps.db
      .selectFrom('payments')
      .selectAll()
      .where('payer', '=', payer.address.toLowerCase())
      .where('x402_version', '=', 1)
      .executeTakeFirstOrThrow()
    t.equal(row.status, 'served')
  })

  t.test('POST with a JSON body through @x402/fetch', async (t) => {
    const res = await v2(`${platform.proxyUrl}/tollgate/toolbox/hash-generator`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'abc', algorithms: ['sha256'] }),
    })
    t.equal(res.status, 200, await res.clone().text())
    t.match(await res.text(), 'ba7816bf')
  })
})

// A busy proxy recovers signers on a worker thread; the clients must not see a difference.
t.test('official x402 clients pay when every signer is recovered on a worker thread', async (t) => {
  const platform = await startTestPlatform(t, {
    devnet,
    env: { X402_RECOVERY_THREADS: '1', X402_RECOVERY_OFFLOAD: 'always' },
  })
  const { payer, v1, v2 } = officialClients(devnet)
  const url = `${platform.proxyUrl}/tollgate/toolbox/hash-generator?text=abc&algorithms=sha256`
  for (const [name, pay] of [
    ['@x402/fetch (v2)', v2],
    ['x402-fetch (v1)', v1],
  ] as const) {
    const res = await pay(url, { method: 'GET' })
    const text = await res.text()
    t.equal(res.status, 200, `${name}: ${text}`)
    t.match(text, 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', name)
  }
  const stats = platform.proxy.createSignerRecovery!.stats
  t.equal(stats.recoveredInWorker, 2, 'both signers were recovered on the worker thread')
  t.equal(stats.recoveredInline + stats.recoveredAfterFailure, 0, 'none on the main thread')
  const rows = await platform.deps.db
    .selectFrom('payments')
    .select(['status', 'x402_version'])
    .where('payer', '=', payer.address.toLowerCase())
    .orderBy('x402_version')
    .execute()
  t.same(rows, [
    { status: 'served', x402_version: 1 },
    { status: 'served', x402_version: 2 },
  ])
})
