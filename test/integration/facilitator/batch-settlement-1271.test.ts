/**
 * Facilitator mode, `batch-settlement`, an ERC-1271 payer (issue #34): the channel's payer is a
 * smart wallet (test/fixtures/smart-wallet/TestSmartWallet.sol) and its `payerAuthorizer` is the
 * zero address, so the spec has its vouchers checked by the payer contract (rule 6:
 * `SignatureChecker` against the payer) and its ERC-3009 deposit authorization checked by the token
 * the same way (USDC asks a contract `from` through ERC-1271). The seller runs the official
 * `@x402/express` middleware with the official batch-settlement server scheme and Tollgate as its
 * facilitator; the buyer is the official batch-settlement client, unmodified, given the wallet as
 * its signer (its typed-data signatures are the owner's key's, wrapped in the wallet's format) and
 * `payerAuthorizer: 0x0`. The server asks Tollgate's `/verify` for every such voucher.
 */
import type { Server } from 'node:http'
import express from 'express'
import t from 'tap'
import { erc20Abi, getAddress, zeroAddress, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { HTTPFacilitatorClient } from '@x402/core/server'
import { paymentMiddleware, x402ResourceServer } from '@x402/express'
import { BatchSettlementEvmScheme as BatchServerScheme } from '@x402/evm/batch-settlement/server'
import { signVoucher } from '@x402/evm/batch-settlement/client'
import { toClientEvmSigner } from '@x402/evm'
import { DEVNET_USDC_ADDRESS, mintUsdc } from '../../../src/chain/devnet.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { MASTER_KEY, userWithKey } from '../../helpers/accounts.js'
import { batchBuyerFor, receiptOf } from '../../helpers/batch-buyer.js'
import { evmClients } from '../../helpers/evm-chain.js'
import { closeListening, freePort, startTestPlatform } from '../../helpers/platform.js'
import { deploySmartWallet, walletSig, walletSigner } from '../../helpers/smart-wallet.js'

const PRICE = 1000n
const FUNDS = 1_000_000n

t.test('facilitator mode: a smart-wallet payer (ERC-1271) pays the official batch-settlement server', async (t) => {
  const platform = await startTestPlatform(t, { env: { TOLLGATE_MASTER_KEY: MASTER_KEY } })
  const { deps, devnet } = platform
  const network = `eip155:${devnet.chainId}` as const
  const web = await buildWebApp(deps, { logger: false })
  await web.listen({ host: '127.0.0.1', port: await freePort() })
  t.teardown(() => closeListening(web))
  const facilitatorUrl = `http://127.0.0.1:${(web.server.address() as { port: number }).port}/facilitator`
  const seller = await userWithKey(deps)
  const { pub } = await evmClients(devnet)
  const usdcOf = (a: Hex) =>
    pub.readContract({ address: DEVNET_USDC_ADDRESS, abi: erc20Abi, functionName: 'balanceOf', args: [a] })

  // the seller's own server: official middleware and batch-settlement server scheme, unmodified
  const payTo = privateKeyToAccount(generatePrivateKey()).address
  const facilitator = new HTTPFacilitatorClient({
    url: facilitatorUrl,
    createAuthHeaders: async () => {
      const h = { Authorization: `Bearer ${seller.apiKey}` }
      return { verify: h, settle: h, supported: h }
    },
  })
  // the server's calls to Tollgate's /verify, counted
  let verifies = 0
  const verify = facilitator.verify.bind(facilitator)
  facilitator.verify = (...args) => {
    verifies++
    return verify(...args)
  }
  const scheme = new BatchServerScheme(payTo)
  const app = express()
  app.use(
    paymentMiddleware(
      {
        'GET /weather': {
          accepts: { scheme: 'batch-settlement', price: '$0.001', network, payTo, maxTimeoutSeconds: 60 },
          description: 'weather',
        },
      },
      new x402ResourceServer(facilitator).register(network, scheme),
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
  const post = async (path: string, paymentPayload: { accepted: unknown }) => {
    const res = await fetch(`${facilitatorUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${seller.apiKey}` },
      body: JSON.stringify({ x402Version: 2, paymentPayload, paymentRequirements: paymentPayload.accepted }),
    })
    return res.json()
  }

  // the buyer: a smart wallet holding test USDC, paid from by the official client
  const owner = privateKeyToAccount(generatePrivateKey())
  const wallet = getAddress(await deploySmartWallet(platform, owner.address))
  await mintUsdc(devnet.rpcUrl, wallet, FUNDS)
  const { pay, sent } = batchBuyerFor(platform, walletSigner(wallet, owner, pub.readContract.bind(pub) as never), {
    payerAuthorizer: zeroAddress,
    depositPolicy: { depositMultiplier: 30 },
  })
  const payloadOf = (header: string) => JSON.parse(Buffer.from(header, 'base64').toString())
  // the server's minDeposit hint (10 x the price) caps the client's multiplier
  const DEPOSIT = 10n * PRICE
  let calls = 0
  let channelId = ''

  await t.test('deposit: the wallet’s ERC-3009 authorization, accepted through ERC-1271', async (t) => {
    const res = await pay(url)
    t.equal(res.status, 200, await res.clone().text())
    calls++
    const deposit = payloadOf(sent[0]!)
    t.match(deposit.payload, { type: 'deposit', channelConfig: { payer: wallet, payerAuthorizer: zeroAddress } })
    t.ok(deposit.payload.voucher.signature.length > 132, 'the voucher is the wallet’s (longer than 65 bytes)')
    t.ok(
      deposit.payload.deposit.authorization.erc3009Authorization.signature.length > 132,
      'the deposit authorization too',
    )
    const r = receiptOf(res)
    t.match(r.transaction, /^0x[0-9a-f]{64}$/, 'the deposit transaction, through Tollgate’s relayer')
    t.equal(r.amount, String(DEPOSIT))
    t.equal(await usdcOf(wallet), FUNDS - DEPOSIT, 'the wallet deposited')
    const bound = await deps.db.selectFrom('facilitator_batch_channels').selectAll().executeTakeFirstOrThrow()
    t.equal(bound.user_id, seller.userId, 'the channel is the seller’s')
    channelId = bound.channel_id
  })

  await t.test('vouchers: the server has each verified at Tollgate (ERC-1271), no transaction', async (t) => {
    const before = verifies
    for (let i = 0; i < 4; i++) {
      const res = await pay(url)
      t.equal(res.status, 200, `voucher call ${i + 1}: ${await res.clone().text()}`)
      calls++
      t.equal(receiptOf(res).transaction, '')
    }
    t.equal(verifies - before, 4, 'each voucher verified at Tollgate')
    const voucher = payloadOf(sent.at(-1)!)
    t.equal(voucher.payload.type, 'voucher')
    t.match(await post('/verify', voucher), {
      isValid: true,
      payer: wallet,
      extra: { channelId, balance: String(DEPOSIT), totalClaimed: '0' },
    })
    t.equal(await usdcOf(payTo), 0n, 'nothing moved to the receiver yet')
  })

  await t.test('a voucher or deposit signed by another key is refused with the spec’s code', async (t) => {
    const voucher = payloadOf(sent.at(-1)!)
    const max = voucher.payload.voucher.maxClaimableAmount as string
    const stranger = privateKeyToAccount(generatePrivateKey())
    // the wallet's format around a stranger's key: the wallet answers no
    const wrapped = structuredClone(voucher)
    wrapped.payload.voucher = await signVoucher(walletSigner(wallet, stranger), channelId as Hex, max, network)
    t.match(await post('/verify', wrapped), {
      isValid: false,
      invalidReason: 'invalid_batch_settlement_evm_voucher_signature',
    })
    // a plain 65-byte signature of the stranger's, and of the wallet's own owner (not the wallet's format)
    for (const key of [stranger, owner]) {
      const plain = structuredClone(voucher)
      plain.payload.voucher = await signVoucher(toClientEvmSigner(key), channelId as Hex, max, network)
      t.match(await post('/verify', plain), {
        isValid: false,
        invalidReason: 'invalid_batch_settlement_evm_voucher_signature',
      })
    }
    // a raised ceiling under the wallet's signature
    const raised = structuredClone(voucher)
    raised.payload.voucher.maxClaimableAmount = String(BigInt(max) + PRICE)
    t.match(await post('/verify', raised), {
      isValid: false,
      invalidReason: 'invalid_batch_settlement_evm_voucher_signature',
    })
    // a fresh deposit (top-up) whose authorization is a stranger's in the wallet's format: verify
    // and settle refuse it, nothing moves
    const deposit = payloadOf(sent[0]!)
    const forged = structuredClone(deposit)
    const auth = forged.payload.deposit.authorization.erc3009Authorization
    auth.salt = `0x${'ab'.repeat(32)}`
    auth.signature = walletSig(await stranger.signMessage({ message: 'not an authorization' }))
    t.match(await post('/verify', forged), {
      isValid: false,
      invalidReason: 'invalid_batch_settlement_evm_receive_authorization_signature',
    })
    t.match(await post('/settle', forged), {
      success: false,
      errorReason: 'invalid_batch_settlement_evm_receive_authorization_signature',
    })
    t.equal(await usdcOf(wallet), FUNDS - DEPOSIT, 'no second deposit')
  })

  await t.test('the seller’s claim and settle through Tollgate move exactly the charged sum', async (t) => {
    const charged = BigInt(calls) * PRICE
    const manager = scheme.createChannelManager(facilitator, network, DEVNET_USDC_ADDRESS)
    const claims = await manager.claim()
    t.equal(claims.length, 1, 'one claim batch')
    t.match(claims[0], { vouchers: 1, transaction: /^0x[0-9a-f]{64}$/ })
    t.match(await manager.settle(), { transaction: /^0x[0-9a-f]{64}$/ })
    t.equal(await usdcOf(payTo), charged, `the receiver got exactly ${charged}`)
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
  })

  await t.test('the cooperative refund returns the rest to the wallet', async (t) => {
    const manager = scheme.createChannelManager(facilitator, network, DEVNET_USDC_ADDRESS)
    const refunds = await manager.refund()
    t.equal(refunds.length, 1)
    t.match(refunds[0], { transaction: /^0x[0-9a-f]{64}$/ })
    const charged = BigInt(calls) * PRICE
    t.equal(await usdcOf(wallet), FUNDS - charged, 'the wallet got back all it was not charged')
    t.equal(await usdcOf(payTo), charged, 'the receiver holds every charged call')
  })
})
