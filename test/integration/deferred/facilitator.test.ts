/**
 * The deferred facilitator endpoints (edgeandnode/x402 scheme_deferred_evm_facilitator.md) on the
 * web app: the spec's example requests as vectors (their addresses are not this escrow's: 400
 * naming it), the response shapes of its examples, a real flush and flush-all signed by a buyer,
 * and every refusal naming its problem.
 */
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { createPublicClient, getAddress, http, type Hex } from 'viem'
import { buildWebApp } from '../../../src/http/web-app.js'
import { deferredEscrowAbi } from '../../../src/schemes/deferred/escrow-abi.js'
import {
  depositAuthorizationTypedData,
  flushAllAuthorizationTypedData,
  flushAuthorizationTypedData,
  permitTypedData,
  type DeferredVoucher,
} from '../../../src/schemes/deferred/typed-data.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { deferredBuyer, deferredHeader, payDeferredCalls, voucherWire } from '../../helpers/deferred-buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')
const ECHO = '/tollgate/toolbox/echo?msg=hi'

const platform = await startTestPlatform(t, { proxy: { handlersDir: fixtures } })
const { deps, proxy, devnet } = platform
const web = await buildWebApp(deps, { logger: false })
t.teardown(() => web.close())
const seller = getAddress(devnet.accounts.receiver.address)
const escrow = getAddress(devnet.deferredEscrowAddress)
const asset = getAddress(devnet.usdcAddress)
const chainId = devnet.chainId
const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl) })
await deps.db
  .updateTable('endpoints')
  .set({ schemes: ['exact', 'deferred'] })
  .where('slug', '=', 'echo')
  .execute()
await announceRegistryChange(deps)
await until(
  'the proxy offers deferred',
  async () => decodeRequired((await proxy.inject(ECHO)).headers['payment-required'] as string).accepts.length === 2,
)

// the spec's examples
const SPEC_BUYER = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C'
const SPEC_GET =
  '/deferred/buyers/0x209693Bc6afc0C5328bA36FaF03C514EF312287C?seller=0xA1c7Bf3d421e8A54D39FbBE13f9f826E5B2C8e3D&asset=0x081827b8c3aa05287b5aa2bc3051fbe638f33152&escrow=0x7cB1A5A2a2C9e91B76914C0A7b7Fb3AefF3BCA27&chainId=84532'
const SPEC_FLUSH = {
  flushAuthorization: {
    buyer: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
    seller: '0xA1c7Bf3d421e8A54D39FbBE13f9f826E5B2C8e3D',
    asset: '0x081827b8c3aa05287b5aa2bc3051fbe638f33152',
    nonce: '0x0000000000000000000000000000000000000000000000000000000000000000',
    expiry: 1740759400,
    signature: '0xbfdc3d0a...',
  },
  escrow: '0x7cB1A5A2a2C9e91B76914C0A7b7Fb3AefF3BCA27',
  chainId: 84532,
}

async function paidBuyer(calls: number) {
  const buyer = await deferredBuyer(devnet, 10n ** 6n)
  await buyer.deposit(seller, 50_000n)
  const last = await payDeferredCalls(proxy, buyer, ECHO, calls)
  return { buyer, last }
}
const ours = (buyer: string) =>
  `/deferred/buyers/${buyer}?seller=${seller}&asset=${asset}&escrow=${escrow}&chainId=${chainId}`

t.test('GET /deferred/buyers/:buyer: the spec example shape, with and without a voucher', async (t) => {
  const { buyer, last } = await paidBuyer(3)
  const r = await web.inject(ours(buyer.address))
  t.equal(r.statusCode, 200, r.body)
  const body = r.json()
  t.same(Object.keys(body).sort(), ['assetAllowance', 'assetPermitNonce', 'balance', 'voucher'])
  t.equal(body.balance, '50000')
  t.equal(typeof body.assetAllowance, 'string')
  t.same(body.voucher, {
    id: last!.id,
    buyer: buyer.address,
    seller,
    valueAggregate: String(last!.valueAggregate),
    asset,
    timestamp: Number(last!.timestamp),
    nonce: 2,
    escrow,
    chainId,
    signature: await buyer.sign(last!),
  })
  const fresh = await deferredBuyer(devnet, 0n)
  const none = await web.inject(ours(fresh.address))
  t.same(none.json(), { balance: '0', assetAllowance: '0', assetPermitNonce: '0' }, 'no voucher available')
})

t.test('GET /deferred/buyers/:buyer refuses bad parameters with 400 naming them', async (t) => {
  const spec = await web.inject(SPEC_GET)
  t.equal(spec.statusCode, 400)
  t.match(spec.json(), { error: /^Invalid parameters: escrow must be 0x/ }, "the spec example's escrow is not ours")
  const cases: Array<[string, RegExp]> = [
    [`/deferred/buyers/0x12?seller=${seller}&asset=${asset}&escrow=${escrow}&chainId=${chainId}`, /buyer/],
    [`/deferred/buyers/${SPEC_BUYER}?asset=${asset}&escrow=${escrow}&chainId=${chainId}`, /seller is required/],
    [`/deferred/buyers/${SPEC_BUYER}?seller=nope&asset=${asset}&escrow=${escrow}&chainId=${chainId}`, /seller/],
    [`/deferred/buyers/${SPEC_BUYER}?seller=${seller}&asset=${asset}&escrow=${escrow}&chainId=x`, /chainId/],
    [`/deferred/buyers/${SPEC_BUYER}?seller=${seller}&asset=${asset}&escrow=${escrow}&chainId=1`, /chainId must be/],
  ]
  for (const [url, problem] of cases) {
    const r = await web.inject(url)
    t.equal(r.statusCode, 400, url)
    t.match(r.json().error, problem)
  }
})

t.test('GET /deferred/vouchers/available and /deferred/vouchers/:id/:nonce', async (t) => {
  const { buyer, last } = await paidBuyer(2)
  const available = await web.inject(`/deferred/vouchers/available/${buyer.address}/${seller}`)
  t.equal(available.statusCode, 200)
  t.match(available.json(), { voucher: { id: last!.id, nonce: 1 }, signature: /^0x/ })
  const one = await web.inject(`/deferred/vouchers/${last!.id}/0`)
  t.match(one.json(), { voucher: { id: last!.id, nonce: 0, valueAggregate: '1000' } })
  t.equal((await web.inject(`/deferred/vouchers/${last!.id}/9`)).statusCode, 404)
  t.equal((await web.inject(`/deferred/vouchers/available/${SPEC_BUYER}/${seller}`)).statusCode, 404)
  t.match((await web.inject(`/deferred/vouchers/0x12/0`)).json(), { error: /id must be 32 bytes/ })
})

t.test('POST /deferred/buyers/:buyer/flush: a flush and a flush-all, sent by a relayer', async (t) => {
  const buyer = await deferredBuyer(devnet, 10n ** 6n)
  await buyer.deposit(seller, 7_000n)
  const { timestamp } = await pub.getBlock()
  const auth = {
    buyer: buyer.address,
    seller,
    asset,
    nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
    expiry: timestamp + 600n,
  }
  const signature = await buyer.account.signTypedData(flushAuthorizationTypedData(auth, chainId, escrow))
  const r = await web.inject({
    method: 'POST',
    url: `/deferred/buyers/${buyer.address}/flush`,
    payload: { flushAuthorization: { ...auth, expiry: Number(auth.expiry), signature }, escrow, chainId },
  })
  t.equal(r.statusCode, 200, r.body)
  t.match(r.json(), { success: true, transaction: /^0x[0-9a-f]{64}$/, payer: buyer.address })
  const account = await pub.readContract({
    address: escrow,
    abi: deferredEscrowAbi,
    functionName: 'getAccount',
    args: [buyer.address, seller, asset],
  })
  t.equal(account.thawingAmount, 7_000n, 'the balance started thawing')
  const replay = await web.inject({
    method: 'POST',
    url: `/deferred/buyers/${buyer.address}/flush`,
    payload: { flushAuthorization: { ...auth, expiry: Number(auth.expiry), signature }, escrow, chainId },
  })
  t.equal(replay.statusCode, 400)
  t.match(replay.json(), {
    success: false,
    errorReason: 'invalid_deferred_evm_payload_flush_authorization_nonce_used',
    transaction: '',
    payer: buyer.address,
  })

  const allAuth = {
    buyer: buyer.address,
    nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
    expiry: timestamp + 600n,
  }
  const allSig = await buyer.account.signTypedData(flushAllAuthorizationTypedData(allAuth, chainId, escrow))
  const all = await web.inject({
    method: 'POST',
    url: `/deferred/buyers/${buyer.address}/flush`,
    payload: { flushAuthorization: { ...allAuth, expiry: Number(allAuth.expiry), signature: allSig }, escrow, chainId },
  })
  t.equal(all.statusCode, 200, all.body)
  t.match(all.json(), { success: true, payer: buyer.address })
})

t.test('POST /deferred/buyers/:buyer/flush refuses with the spec error shape, naming the problem', async (t) => {
  const buyer = await deferredBuyer(devnet, 0n)
  const { timestamp } = await pub.getBlock()
  const auth = {
    buyer: buyer.address,
    seller,
    asset,
    nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
    expiry: timestamp + 600n,
  }
  const good = {
    ...auth,
    expiry: Number(auth.expiry),
    signature: await buyer.account.signTypedData(flushAuthorizationTypedData(auth, chainId, escrow)),
  }
  const post = (buyerInPath: string, payload: unknown) =>
    web.inject({ method: 'POST', url: `/deferred/buyers/${buyerInPath}/flush`, payload: payload as object })
  const spec = await post(SPEC_BUYER, SPEC_FLUSH)
  t.equal(spec.statusCode, 400)
  t.match(spec.json(), {
    success: false,
    errorReason: 'invalid_deferred_evm_payload_flush_authorization',
    errorMessage: /escrow must be/,
    transaction: '',
    payer: SPEC_BUYER,
  })
  const stranger = await deferredBuyer(devnet, 0n)
  const cases: Array<[string, unknown, string, RegExp]> = [
    [
      buyer.address,
      { ...SPEC_FLUSH, escrow, chainId },
      'invalid_deferred_evm_payload_flush_authorization',
      /buyer in the path/,
    ],
    [
      buyer.address,
      { escrow, chainId },
      'invalid_deferred_evm_payload_flush_authorization',
      /flushAuthorization is required/,
    ],
    [
      buyer.address,
      { flushAuthorization: { ...good, nonce: '0x12' }, escrow, chainId },
      'invalid_deferred_evm_payload_flush_authorization',
      /nonce/,
    ],
    [
      buyer.address,
      { flushAuthorization: { ...good, seller: undefined }, escrow, chainId },
      'invalid_deferred_evm_payload_flush_authorization',
      /both/,
    ],
    [
      buyer.address,
      { flushAuthorization: { ...good, signature: '0xbfdc3d0a...' }, escrow, chainId },
      'invalid_deferred_evm_payload_flush_authorization',
      /signature must be 0x hex/,
    ],
    [
      buyer.address,
      { flushAuthorization: good, escrow, chainId: 1 },
      'invalid_deferred_evm_payload_flush_authorization',
      /chainId/,
    ],
    [
      buyer.address,
      { flushAuthorization: { ...good, expiry: Number(timestamp) - 10 }, escrow, chainId },
      'invalid_deferred_evm_payload_flush_authorization_expired',
      /expired/,
    ],
    [
      buyer.address,
      {
        flushAuthorization: {
          ...good,
          signature: await stranger.account.signTypedData(flushAuthorizationTypedData(auth, chainId, escrow)),
        },
        escrow,
        chainId,
      },
      'invalid_deferred_evm_payload_flush_authorization_signature',
      /not the buyer's/,
    ],
  ]
  for (const [who, payload, reason, message] of cases) {
    const r = await post(who, payload)
    t.equal(r.statusCode, 400, JSON.stringify(payload).slice(0, 120))
    t.match(r.json(), { success: false, errorReason: reason, errorMessage: message, transaction: '' })
  }
  t.equal((await post('0x12', SPEC_FLUSH)).statusCode, 400, 'a buyer that is no address')
})

// POST /deferred/vouchers: the spec's request body (x402Version 1, `recipient`, an aggregation `extra`)
function specStoreBody(v: DeferredVoucher, signature: Hex, o: { amount?: string; payload?: object } = {}) {
  return {
    paymentPayload: {
      x402Version: 1,
      network: deps.config.chain.network,
      scheme: 'deferred',
      payload: { signature, voucher: voucherWire(v), ...o.payload },
    },
    paymentRequirements: {
      x402Version: 1,
      network: deps.config.chain.network,
      scheme: 'deferred',
      recipient: seller,
      amount: o.amount ?? '1000',
      asset,
      extra: { type: 'aggregation', voucher: { id: v.id, escrow } },
    },
  }
}
const storeVoucher = (payload: unknown) =>
  web.inject({ method: 'POST', url: '/deferred/vouchers', payload: payload as object })
const price = async () => {
  const required = decodeRequired((await proxy.inject(ECHO)).headers['payment-required'] as string)
  return required.accepts.find((a) => a.scheme === 'deferred')!
}
const collectedOnChain = (buyer: Hex, id: Hex) =>
  pub.readContract({
    address: escrow,
    abi: deferredEscrowAbi,
    functionName: 'getVoucherCollected',
    args: [buyer, seller, asset, id],
  })

t.test('POST /deferred/vouchers stores a voucher verified as the hot path does (201, the spec shape)', async (t) => {
  const { buyer, last } = await paidBuyer(2)
  const req = await price()
  const next = buyer.voucher(req, last)
  const signature = await buyer.sign(next)
  const r = await storeVoucher(specStoreBody(next, signature))
  t.equal(r.statusCode, 201, r.body)
  t.same(r.json(), {
    id: next.id,
    buyer: buyer.address,
    seller,
    valueAggregate: String(next.valueAggregate),
    asset,
    timestamp: Number(next.timestamp),
    nonce: 2,
    escrow,
    chainId,
    signature,
  })
  t.match((await web.inject(`/deferred/vouchers/${next.id}/2`)).json(), { voucher: { nonce: 2 }, signature })
  t.match((await web.inject(ours(buyer.address))).json(), { voucher: { nonce: 2 } }, 'it is the head now')

  // the proxy continues from it: its Redis head moved with the store
  const onto = buyer.voucher(req, next)
  const headers = { 'payer-identifier': buyer.address }
  const required = decodeRequired((await proxy.inject({ url: ECHO, headers })).headers['payment-required'] as string)
  const call = await proxy.inject({
    url: ECHO,
    headers: {
      ...headers,
      'payment-signature': deferredHeader(required, req, {
        voucher: voucherWire(onto),
        signature: await buyer.sign(onto),
      }),
    },
  })
  t.equal(call.statusCode, 200, call.body)

  const again = await storeVoucher(specStoreBody(next, signature))
  t.equal(again.statusCode, 400, 'the same voucher again')
  t.match(again.json(), {
    isValid: false,
    invalidReason: 'invalid_deferred_evm_payload_voucher_stale',
    payer: buyer.address,
  })
})

t.test(
  'POST /deferred/vouchers with the spec deposit form: the deposit lands, then the voucher is stored',
  async (t) => {
    const buyer = await deferredBuyer(devnet, 10n ** 6n)
    const req = await price()
    const v = buyer.voucher(req)
    const { timestamp } = await pub.getBlock()
    const auth = {
      buyer: buyer.address,
      seller,
      asset,
      amount: 5_000n,
      nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
      expiry: timestamp + 600n,
    }
    const permit = {
      owner: buyer.address,
      spender: escrow,
      value: 5_000n,
      nonce: 0n,
      deadline: timestamp + 600n,
    }
    const token = { name: deps.config.chain.usdc.name, version: deps.config.chain.usdc.version }
    const body = specStoreBody(v, await buyer.sign(v), {
      payload: {
        depositAuthorization: {
          permit: {
            ...permit,
            value: '5000',
            nonce: '0',
            deadline: Number(permit.deadline),
            domain: token,
            signature: await buyer.account.signTypedData(
              permitTypedData(permit, { ...token, chainId, address: asset }),
            ),
          },
          depositAuthorization: {
            ...auth,
            amount: '5000',
            expiry: Number(auth.expiry),
            signature: await buyer.account.signTypedData(depositAuthorizationTypedData(auth, chainId, escrow)),
          },
        },
      },
    })
    const r = await storeVoucher(body)
    t.equal(r.statusCode, 201, r.body)
    t.match(r.json(), { id: v.id, nonce: 0, valueAggregate: '1000' })
    const account = await web.inject(ours(buyer.address))
    t.match(account.json(), { balance: '5000', voucher: { id: v.id, nonce: 0 } }, 'deposited, then stored')
  },
)

t.test('POST /deferred/vouchers refuses with the spec verify shape, naming the problem', async (t) => {
  const spec = await storeVoucher({
    paymentPayload: {
      x402Version: 1,
      network: 'base-sepolia',
      scheme: 'deferred',
      payload: {
        signature: '0x4b3f8e...',
        voucher: {
          id: '0x9f8d3e4a2c7b9d04dcd11c9f4c2b22b0a6f87671e7b8c3a2ea95b5dbdf4040bc',
          buyer: SPEC_BUYER,
          seller: '0xA1c7Bf3d421e8A54D39FbBE13f9f826E5B2C8e3D',
          valueAggregate: '6000000',
          asset: '0x081827b8c3aa05287b5aa2bc3051fbe638f33152',
          timestamp: 1740673100,
          nonce: 3,
          escrow: '0x7cB1A5A2a2C9e91B76914C0A7b7Fb3AefF3BCA27',
          chainId: 84532,
        },
      },
    },
    paymentRequirements: {
      x402Version: 1,
      network: 'base-sepolia',
      scheme: 'deferred',
      recipient: '0xA1c7Bf3d421e8A54D39FbBE13f9f826E5B2C8e3D',
      amount: '1000000',
      asset: '0x081827b8c3aa05287b5aa2bc3051fbe638f33152',
      extra: { type: 'aggregation' },
    },
  })
  t.equal(spec.statusCode, 400, "the spec's example: its asset is not this platform's")
  t.match(spec.json(), { isValid: false, invalidReason: 'invalid_payment_requirements', payer: SPEC_BUYER })

  const { buyer, last } = await paidBuyer(1)
  const req = await price()
  const stranger = await deferredBuyer(devnet, 0n)
  const next = buyer.voucher(req, last)
  const good = await buyer.sign(next)
  const overdrawn = buyer.voucher(req, last, { valueAggregate: last!.valueAggregate + 1_000_000n })
  const cases: Array<[unknown, string, RegExp]> = [
    [[], 'invalid_payload', /JSON object/],
    [{ paymentRequirements: {} }, 'invalid_payload', /paymentPayload is required/],
    [
      {
        ...specStoreBody(next, good),
        paymentRequirements: { ...specStoreBody(next, good).paymentRequirements, scheme: 'exact' },
      },
      'unsupported_scheme',
      /deferred/,
    ],
    [specStoreBody(next, good, { amount: '0' }), 'invalid_payment_requirements', /amount/],
    [
      {
        ...specStoreBody(next, good),
        paymentRequirements: { ...specStoreBody(next, good).paymentRequirements, recipient: SPEC_BUYER },
      },
      'invalid_payment_requirements',
      /offers no deferred endpoint/,
    ],
    [specStoreBody(next, await stranger.sign(next)), 'invalid_deferred_evm_payload_signature', /./],
    [
      specStoreBody(next, good, { amount: '999' }),
      'invalid_deferred_evm_payload_voucher_value',
      /expected valueAggregate/,
    ],
    [
      specStoreBody(overdrawn, await buyer.sign(overdrawn), { amount: String(1_000_000n) }),
      'invalid_deferred_evm_insufficient_escrow_balance',
      /./,
    ],
    [
      specStoreBody({ ...next, nonce: 5n }, await buyer.sign({ ...next, nonce: 5n })),
      'invalid_deferred_evm_payload_voucher_stale',
      /nonce 1/,
    ],
  ]
  for (const [payload, reason, message] of cases) {
    const r = await storeVoucher(payload)
    t.equal(r.statusCode, 400, `${reason}: ${r.body.slice(0, 200)}`)
    t.match(r.json(), { isValid: false, invalidReason: reason, invalidMessage: message })
  }
  t.equal((await storeVoucher(specStoreBody(next, good))).statusCode, 201, 'and the good one is still taken')
})

t.test(
  'POST /deferred/vouchers/:id/:nonce/settle collects now, once (idempotent), through the collector',
  async (t) => {
    const { buyer, last } = await paidBuyer(3)
    const url = `/deferred/vouchers/${last!.id}/2/settle`
    const r = await web.inject({ method: 'POST', url, payload: { gasPrice: '20000000000', gasLimit: '150000' } })
    t.equal(r.statusCode, 200, r.body)
    t.match(r.json(), {
      success: true,
      transactionHash: /^0x[0-9a-f]{64}$/,
      collectedAmount: '3000',
      network: deps.config.chain.network,
    })
    t.equal(await collectedOnChain(buyer.address, last!.id), 3000n, 'the escrow paid the whole aggregate')
    const payments = await deps.db
      .selectFrom('payments')
      .select(['status', 'tx_hash'])
      .where('payer', '=', buyer.address.toLowerCase())
      .execute()
    t.same(
      payments.map((p) => [p.status, p.tx_hash]),
      payments.map(() => ['settled', r.json().transactionHash]),
      "the voucher's three payments are settled with that transaction",
    )
    const again = await web.inject({ method: 'POST', url })
    t.equal(again.statusCode, 200)
    t.same(again.json(), {
      success: true,
      transactionHash: null,
      collectedAmount: '0',
      network: deps.config.chain.network,
      totalCollected: '3000',
    })

    // a later voucher of the same id within the interval: no second transaction yet
    const stored = buyer.voucher(await price(), last)
    t.equal((await storeVoucher(specStoreBody(stored, await buyer.sign(stored)))).statusCode, 201)
    const soon = await web.inject({ method: 'POST', url: `/deferred/vouchers/${last!.id}/3/settle` })
    t.equal(soon.statusCode, 429)
    t.match(soon.json(), { success: false, error: /collected less than 60 s ago/ })
    t.equal(await collectedOnChain(buyer.address, last!.id), 3000n)
  },
)

t.test('POST /deferred/vouchers/:id/:nonce/settle: a stored voucher without calls; bad input', async (t) => {
  const buyer = await deferredBuyer(devnet, 10n ** 6n)
  await buyer.deposit(seller, 10_000n)
  const v = buyer.voucher(await price())
  t.equal((await storeVoucher(specStoreBody(v, await buyer.sign(v)))).statusCode, 201)
  const r = await web.inject({ method: 'POST', url: `/deferred/vouchers/${v.id}/0/settle` })
  t.equal(r.statusCode, 200, r.body)
  t.match(r.json(), { success: true, collectedAmount: '1000' })
  t.equal(await collectedOnChain(buyer.address, v.id), 1000n)
  const stored = await web.inject(`/deferred/vouchers/${v.id}/0`)
  t.equal(stored.statusCode, 200)
  const row = await deps.db
    .selectFrom('deferred_vouchers')
    .select('collected')
    .where('voucher_id', '=', v.id)
    .executeTakeFirstOrThrow()
  t.equal(String(row.collected), '1000', "the store's collected follows the chain")

  const missing = await web.inject({ method: 'POST', url: `/deferred/vouchers/0x${'ab'.repeat(32)}/0/settle` })
  t.equal(missing.statusCode, 400)
  // the spec's fields, and the platform's error shape beside them
  t.same(missing.json(), {
    success: false,
    error: 'Voucher not found',
    statusCode: 400,
    code: 'invalid_parameter',
    message: 'Voucher not found',
  })
  const bad = await web.inject({ method: 'POST', url: `/deferred/vouchers/0x12/0/settle` })
  t.equal(bad.statusCode, 400)
  t.match(bad.json(), { success: false, error: /id must be 32 bytes/ })
  const badNonce = await web.inject({ method: 'POST', url: `/deferred/vouchers/${v.id}/-1/settle` })
  t.match(badNonce.json(), { success: false, error: /nonce/ })
})
