/**
 * `upto` from a deployed ERC-1271 smart wallet (test/fixtures/smart-wallet/TestSmartWallet.sol):
 * its Permit2 signature (longer than 65 bytes) is checked by the wallet through RPC, the call is
 * served and charged what the seller reports, and the settlement batch moves exactly that amount
 * (Permit2 asks the wallet again on chain). Signatures the wallet does not accept, and a long
 * signature from a payer with no contract, are refused `invalid_permit2_signature`: 402, nothing
 * recorded or charged.
 */
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { uptoPermit2WitnessTypes } from '@x402/evm'
import { UptoEvmScheme } from '@x402/evm/upto/client'
import {
  createTestClient,
  createWalletClient,
  erc20Abi,
  hashTypedData,
  http,
  maxUint256,
  parseEther,
  parseEventLogs,
  type Address,
  type Hex,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount, sign } from 'viem/accounts'
import { mintUsdc } from '../../../src/chain/devnet.js'
import { PERMIT2_ADDRESS } from '../../../src/chain/permit2.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { createPublishing } from '../../../src/services/publishing/publishing.js'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { meteredUpstream } from '../../helpers/metered.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer, walletFor } from '../../helpers/settlement.js'
import { deploySmartWallet, walletSig } from '../../helpers/smart-wallet.js'

interface Auth {
  from: string
  permitted: { token: string; amount: string }
  spender: string
  nonce: string
  deadline: string
  witness: { to: string; facilitator: string; validAfter: string }
}

t.test('upto: an ERC-1271 smart wallet pays a usage-priced call, settled for the actual charge', async (t) => {
  const origin = await meteredUpstream(t)
  const platform = await startTestPlatform(t, {
    env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true', TOLLGATE_MASTER_KEY: '27'.repeat(32) },
  })
  const { deps, devnet } = platform
  const db = deps.db
  const usdc = deps.config.chain.usdc.address
  const receiver = devnet.accounts.receiver.address
  const user = await createUsers(deps).create(`upto-1271-${Date.now()}@example.com`, 'correct horse battery staple')
  const pub = createPublishing(deps)
  await pub.claimNamespace({ userId: user.id }, { namespace: 'meter', display_name: 'Meter' })
  await pub.createService({ userId: user.id }, 'meter', { name: 'svc', pay_to: receiver })
  await pub.createEndpoint({ userId: user.id }, 'meter', 'svc', {
    slug: 'metered',
    methods: ['GET'],
    price: '5000',
    upstream_url: origin,
    schemes: ['exact', 'upto'],
  })
  const { app } = await platform.startProxy({ allowPrivateNetwork: true })
  const path = '/meter/svc/metered'
  const required = decodeRequired((await app.inject(path)).headers['payment-required'] as string)
  const upto = required.accepts.find((a: { scheme: string }) => a.scheme === 'upto')!
  t.ok(upto, 'upto is offered')

  // the wallet holds the USDC and approves Permit2 itself (the devnet lets the test act as the contract)
  const ownerKey = generatePrivateKey()
  const owner = privateKeyToAccount(ownerKey)
  const wallet = await deploySmartWallet(platform, owner.address)
  await mintUsdc(devnet.rpcUrl, wallet, 100_000n)
  const anvil = createTestClient({ mode: 'anvil', transport: http(devnet.rpcUrl) })
  await anvil.setBalance({ address: wallet, value: parseEther('1') })
  await anvil.impersonateAccount({ address: wallet })
  const approval = await createWalletClient({
    account: wallet,
    chain: devnet.chain,
    transport: http(devnet.rpcUrl),
  }).writeContract({ address: usdc, abi: erc20Abi, functionName: 'approve', args: [PERMIT2_ADDRESS, maxUint256] })
  await deps.chain.waitForTransactionReceipt({ hash: approval })
  await anvil.stopImpersonatingAccount({ address: wallet })

  /**
   * The official client's authorization with `from` = the wallet, its EIP-712 digest signed by
   * `key` and wrapped as the wallet expects (`wrap`).
   */
  async function payload(from: Address, key: Hex, wrap: (ecdsa: Hex) => Hex = walletSig) {
    const made = (await new UptoEvmScheme(owner).createPaymentPayload(2, upto)).payload as {
      permit2Authorization: Auth
    }
    const a = { ...made.permit2Authorization, from, nonce: BigInt(`0x${randomBytes(32).toString('hex')}`).toString() }
    const hash = hashTypedData({
      domain: { name: 'Permit2', chainId: devnet.chainId, verifyingContract: PERMIT2_ADDRESS },
      types: uptoPermit2WitnessTypes,
      primaryType: 'PermitWitnessTransferFrom',
      message: {
        permitted: { token: a.permitted.token as Hex, amount: BigInt(a.permitted.amount) },
        spender: a.spender as Hex,
        nonce: BigInt(a.nonce),
        deadline: BigInt(a.deadline),
        witness: {
          to: a.witness.to as Hex,
          facilitator: a.witness.facilitator as Hex,
          validAfter: BigInt(a.witness.validAfter),
        },
      },
    })
    return { signature: wrap(await sign({ hash, privateKey: key, to: 'hex' })), permit2Authorization: a }
  }
  const send = (p: object, query = '?charge=1234') =>
    app.inject({
      url: path + query,
      headers: {
        'payment-signature': Buffer.from(
          JSON.stringify({ x402Version: 2, resource: required.resource, accepted: upto, payload: p }),
        ).toString('base64'),
      },
    })
  async function refused(name: string, p: object, reason: string) {
    const res = await send(p)
    t.equal(res.statusCode, 402, `${name}: 402`)
    const body = decodeRequired(res.headers['payment-required'] as string) as { error?: string }
    t.match(body.error ?? '', new RegExp(`^${reason}`), `${name}: ${reason}`)
  }
  const rowsOf = (payer: string) =>
    db
      .selectFrom('payments')
      .select(['id', 'status', 'value', 'max_value', 'signature', 'tx_hash'])
      .where('payer', '=', payer.toLowerCase())
      .execute()

  // refusals first: the wallet says no, or there is no wallet to ask
  await refused('signed by a stranger', await payload(wallet, generatePrivateKey()), 'invalid_permit2_signature')
  await refused(
    'a signature the wallet cannot decode',
    await payload(wallet, ownerKey, () => `0x${'ab'.repeat(70)}`),
    'invalid_permit2_signature',
  )
  const eoa = await newPayer(platform, 100_000n)
  await walletFor(platform, eoa.key).writeContract({
    address: usdc,
    abi: erc20Abi,
    functionName: 'approve',
    args: [PERMIT2_ADDRESS, maxUint256],
  })
  await refused(
    'a smart-wallet signature from a payer with no contract',
    await payload(eoa.address, ownerKey),
    'invalid_permit2_signature',
  )
  t.same(await rowsOf(wallet), [], 'nothing recorded for the refused wallet payments')
  t.same(await rowsOf(eoa.address), [], 'nor for the payer with no contract')

  const before = { wallet: await balanceOf(wallet), receiver: await balanceOf(receiver) }
  const good = await payload(wallet, ownerKey)
  t.ok(good.signature.length > 132, 'a signature longer than 65 bytes')
  const paid = await send(good)
  t.equal(paid.statusCode, 200, paid.body)
  const receipt = JSON.parse(Buffer.from(paid.headers['payment-response'] as string, 'base64').toString())
  t.equal(receipt.amount, '1234', 'the receipt carries the actual charge')
  const [row] = await rowsOf(wallet)
  t.match(row, { status: 'served', value: '1234', max_value: '5000', signature: good.signature })

  const settler = createSettler(deps, { batchSize: 50 })
  for (let i = 0; i < 5; i++) {
    await settler.runOnce()
    const [r] = await rowsOf(wallet)
    if (r?.status !== 'served' && r?.status !== 'settling') break
  }
  const [settled] = await rowsOf(wallet)
  t.equal(settled?.status, 'settled', 'settled through the upto proxy; Permit2 asked the wallet')
  const logs = (await deps.chain.getTransactionReceipt({ hash: settled!.tx_hash as Hex })).logs
  const transfers = parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs }).filter(
    (e) => e.args.from.toLowerCase() === wallet.toLowerCase(),
  )
  t.same(
    transfers.map((e) => [e.args.to.toLowerCase(), e.args.value]),
    [[receiver.toLowerCase(), 1234n]],
    'one transfer from the wallet, of the actual charge',
  )
  t.equal(before.wallet - (await balanceOf(wallet)), 1234n, 'the wallet paid the charge, nothing for the refusals')
  t.equal((await balanceOf(receiver)) - before.receiver, 1234n, 'the seller got it')

  function balanceOf(a: Address) {
    return deps.chain.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [a] })
  }
})
