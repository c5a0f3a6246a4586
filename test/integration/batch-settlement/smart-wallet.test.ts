/**
 * `batch-settlement` on the platform's hosted endpoints with an ERC-1271 payer: the channel's payer
 * is a smart wallet (test/fixtures/smart-wallet/TestSmartWallet.sol), its `payerAuthorizer` zero,
 * paid by the official client given the wallet as its signer. Its deposit authorization and its
 * vouchers are checked by the wallet (the shared ERC-1271 checker), as the token and the contract
 * check them on chain; a signature the wallet does not accept is refused with the spec's code.
 */
import { signVoucher } from '@x402/evm/batch-settlement/client'
import t from 'tap'
import { erc20Abi, getAddress, zeroAddress, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { DEVNET_USDC_ADDRESS, mintUsdc } from '../../../src/chain/devnet.js'
import { batchBuyerFor, receiptOf } from '../../helpers/batch-buyer.js'
import { evmClients } from '../../helpers/evm-chain.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { paidPath } from '../../helpers/settlement.js'
import { deploySmartWallet, walletSig, walletSigner } from '../../helpers/smart-wallet.js'

const MASTER = '31'.repeat(32)
const FUNDS = 1_000_000n

t.test('batch-settlement: a smart-wallet payer (ERC-1271) pays the platform’s hosted endpoints', async (t) => {
  const platform = await startTestPlatform(t, { env: { TOLLGATE_MASTER_KEY: MASTER } })
  const { devnet, proxyUrl } = platform
  const url = `${proxyUrl}${paidPath}`
  const network = `eip155:${devnet.chainId}`
  const { pub } = await evmClients(devnet)
  const usdcOf = (a: Hex) =>
    pub.readContract({ address: DEVNET_USDC_ADDRESS, abi: erc20Abi, functionName: 'balanceOf', args: [a] })
  const owner = privateKeyToAccount(generatePrivateKey())
  const wallet = getAddress(await deploySmartWallet(platform, owner.address))
  await mintUsdc(devnet.rpcUrl, wallet, FUNDS)
  const buyer = batchBuyerFor(platform, walletSigner(wallet, owner, pub.readContract.bind(pub) as never), {
    payerAuthorizer: zeroAddress,
    depositPolicy: { depositMultiplier: 30 },
  })
  const payloadOf = (header: string) => JSON.parse(Buffer.from(header, 'base64').toString())

  // the deposit (30 x the price), its authorization the wallet's, then vouchers
  const first = await buyer.pay(url)
  t.equal(first.status, 200, await first.clone().text())
  const deposit = payloadOf(buyer.sent[0]!)
  t.match(deposit.payload.channelConfig, { payer: wallet, payerAuthorizer: zeroAddress })
  t.ok(deposit.payload.deposit.authorization.erc3009Authorization.signature.length > 132, 'the wallet’s format')
  t.match(receiptOf(first).transaction, /^0x[0-9a-f]{64}$/, 'the deposit transaction')
  t.equal(await usdcOf(wallet), FUNDS - 30_000n, 'the wallet deposited')
  let last = first
  for (let i = 0; i < 3; i++) {
    last = await buyer.pay(url)
    t.equal(last.status, 200, `voucher call ${i + 1}: ${await last.clone().text()}`)
    t.equal(receiptOf(last).transaction, '')
  }
  t.equal(receiptOf(last).extra?.channelState?.chargedCumulativeAmount, '4000', 'four calls charged')

  // a voucher in the wallet's format around another key: the wallet answers no
  const voucher = payloadOf(buyer.sent.at(-1)!)
  const channelId = voucher.payload.voucher.channelId as Hex
  const stranger = privateKeyToAccount(generatePrivateKey())
  const forged = structuredClone(voucher)
  forged.payload.voucher = await signVoucher(walletSigner(wallet, stranger), channelId, '5000', network)
  const header = (p: unknown) => Buffer.from(JSON.stringify(p)).toString('base64')
  const refusedVoucher = await fetch(url, { headers: { 'payment-signature': header(forged) } })
  t.equal(refusedVoucher.status, 402)
  t.equal(
    decodeRequired(refusedVoucher.headers.get('payment-required')).error,
    'invalid_batch_settlement_evm_voucher_signature',
  )

  // a top-up whose authorization is another key's in the wallet's format: refused, nothing moves
  const topUp = structuredClone(deposit)
  topUp.payload.voucher = await signVoucher(walletSigner(wallet, owner), channelId, '5000', network)
  const auth = topUp.payload.deposit.authorization.erc3009Authorization
  auth.salt = `0x${'cd'.repeat(32)}`
  auth.signature = walletSig(await stranger.signMessage({ message: 'not an authorization' }))
  const refusedDeposit = await fetch(url, { headers: { 'payment-signature': header(topUp) } })
  t.equal(refusedDeposit.status, 402)
  t.equal(
    decodeRequired(refusedDeposit.headers.get('payment-required')).error,
    'invalid_batch_settlement_evm_receive_authorization_signature',
  )
  t.equal(await usdcOf(wallet), FUNDS - 30_000n, 'no second deposit')
})
