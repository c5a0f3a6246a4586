/**
 * `upto` from a deployed ERC-1271 smart wallet (test/fixtures/smart-wallet/TestSmartWallet.sol):
 * its Permit2 signature (longer than 65 bytes) is checked by the wallet through RPC, the call is
 * served and charged what the seller reports, and the settlement batch moves exactly that amount
 * (Permit2 asks the wallet again on chain). Signatures the wallet does not accept, and a long
 * signature from a payer with no contract, are refused `invalid_permit2_signature`: 402, nothing
 * recorded or charged. A wallet not deployed yet signs ERC-6492; the settlement batch deploys it
 * before the proxy's settle.
 */
import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { uptoPermit2WitnessTypes } from '@x402/evm'
import { UptoEvmScheme } from '@x402/evm/upto/client'
import {
  createTestClient,
  createWalletClient,
  erc20Abi,
  hashTypedData,
  encodeFunctionData,
  http,
  maxUint256,
  parseEther,
  parseEventLogs,
  serializeErc6492Signature,
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
import { newPayer } from '../../helpers/settlement.js'
import { deploySmartWallet, smartWalletContracts, walletSig } from '../../helpers/smart-wallet.js'

interface Auth {
  from: string
  permitted: { token: string; amount: string }
  spender: string
  nonce: string
  deadline: string
  witness: { to: string; facilitator: string; validAfter: string }
}

/**
 * A platform with a seller's metered endpoint (maximum 5000, `?charge=N` reports N) offering upto,
 * and what the tests do with it: payloads signed for a smart wallet, sending them, settling.
 */
async function meteredUpto(t: Test) {
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
  const anvil = createTestClient({ mode: 'anvil', transport: http(devnet.rpcUrl) })

  return {
    platform,
    receiver,
    /** USDC for `wallet`, and its Permit2 approval sent as the wallet (the devnet lets the test act as it) */
    async fund(wallet: Address, amount: bigint) {
      if (amount > 0n) await mintUsdc(devnet.rpcUrl, wallet, amount)
      await anvil.setBalance({ address: wallet, value: parseEther('1') })
      await anvil.impersonateAccount({ address: wallet })
      const approval = await createWalletClient({
        account: wallet,
        chain: devnet.chain,
        transport: http(devnet.rpcUrl),
      }).writeContract({ address: usdc, abi: erc20Abi, functionName: 'approve', args: [PERMIT2_ADDRESS, maxUint256] })
      await deps.chain.waitForTransactionReceipt({ hash: approval })
      await anvil.stopImpersonatingAccount({ address: wallet })
      // a wallet still to be deployed: CREATE2 refuses an address whose nonce is not 0 (EIP-684)
      if (!(await deps.chain.getCode({ address: wallet }))) await anvil.setNonce({ address: wallet, nonce: 0 })
    },
    /**
     * The official client's authorization (fresh nonce) with `from` = the wallet, its EIP-712 digest
     * signed by `key` and wrapped as the wallet expects (`wrap`).
     */
    async payload(from: Address, key: Hex, wrap: (ecdsa: Hex) => Hex = walletSig) {
      const made = (await new UptoEvmScheme(privateKeyToAccount(key)).createPaymentPayload(2, upto)).payload as {
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
    },
    /** the payload sent for a call the seller charges `charge` for */
    send: (p: object, charge = 1234) =>
      app.inject({
        url: `${path}?charge=${charge}`,
        headers: {
          'payment-signature': Buffer.from(
            JSON.stringify({ x402Version: 2, resource: required.resource, accepted: upto, payload: p }),
          ).toString('base64'),
        },
      }),
    /** the reason of a 402 */
    reasonOf: (res: { headers: Record<string, unknown> }) =>
      (decodeRequired(res.headers['payment-required'] as string) as { error?: string }).error ?? '',
    rowsOf: (payer: string) =>
      db
        .selectFrom('payments')
        .select(['id', 'status', 'value', 'max_value', 'signature', 'tx_hash'])
        .where('payer', '=', payer.toLowerCase())
        .execute(),
    balanceOf: (a: Address) =>
      deps.chain.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [a] }),
    /** settlement rounds until `payer` has nothing served or settling (at most 5) */
    async settle(payer: Address) {
      const settler = createSettler(deps, { batchSize: 50 })
      for (let i = 0; i < 5; i++) {
        await settler.runOnce()
        const open = await db
          .selectFrom('payments')
          .select('id')
          .where('payer', '=', payer.toLowerCase())
          .where('status', 'in', ['served', 'settling'])
          .execute()
        if (open.length === 0) return
      }
    },
    /** the USDC transfers out of `from` in a transaction */
    async transfersFrom(from: Address, txHash: Hex) {
      const { logs } = await deps.chain.getTransactionReceipt({ hash: txHash })
      return parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs })
        .filter((e) => e.args.from.toLowerCase() === from.toLowerCase())
        .map((e) => [e.args.to.toLowerCase(), e.args.value])
    },
  }
}

t.test('upto: an ERC-1271 smart wallet pays a usage-priced call, settled for the actual charge', async (t) => {
  const m = await meteredUpto(t)
  const ownerKey = generatePrivateKey()
  const wallet = await deploySmartWallet(m.platform, privateKeyToAccount(ownerKey).address)
  await m.fund(wallet, 100_000n)

  // refusals first: the wallet says no, or there is no wallet to ask
  const refused = async (name: string, p: object) => {
    const res = await m.send(p)
    t.equal(res.statusCode, 402, `${name}: 402`)
    t.match(m.reasonOf(res), /^invalid_permit2_signature/, `${name}: invalid_permit2_signature`)
  }
  await refused('signed by a stranger', await m.payload(wallet, generatePrivateKey()))
  await refused('a signature the wallet cannot decode', await m.payload(wallet, ownerKey, () => `0x${'ab'.repeat(70)}`))
  const eoa = await newPayer(m.platform, 100_000n)
  await m.fund(eoa.address, 0n) // funded by newPayer; approves Permit2
  await refused('a smart-wallet signature from a payer with no contract', await m.payload(eoa.address, ownerKey))
  t.same(await m.rowsOf(wallet), [], 'nothing recorded for the refused wallet payments')
  t.same(await m.rowsOf(eoa.address), [], 'nor for the payer with no contract')

  const before = { wallet: await m.balanceOf(wallet), receiver: await m.balanceOf(m.receiver) }
  const good = await m.payload(wallet, ownerKey)
  t.ok(good.signature.length > 132, 'a signature longer than 65 bytes')
  const paid = await m.send(good)
  t.equal(paid.statusCode, 200, paid.body)
  const receipt = JSON.parse(Buffer.from(paid.headers['payment-response'] as string, 'base64').toString())
  t.equal(receipt.amount, '1234', 'the receipt carries the actual charge')
  t.match(await m.rowsOf(wallet), [{ status: 'served', value: '1234', max_value: '5000', signature: good.signature }])

  await m.settle(wallet)
  const [settled] = await m.rowsOf(wallet)
  t.equal(settled?.status, 'settled', 'settled through the upto proxy; Permit2 asked the wallet')
  t.same(
    await m.transfersFrom(wallet, settled!.tx_hash as Hex),
    [[m.receiver.toLowerCase(), 1234n]],
    'one transfer from the wallet, of the actual charge',
  )
  t.equal(before.wallet - (await m.balanceOf(wallet)), 1234n, 'the wallet paid the charge, nothing for the refusals')
  t.equal((await m.balanceOf(m.receiver)) - before.receiver, 1234n, 'the seller got it')
})

t.test('upto: a smart wallet not deployed yet pays with ERC-6492; the batch deploys it, then settles', async (t) => {
  const m = await meteredUpto(t)
  const { deps, devnet } = m.platform
  const { factory: compiled } = smartWalletContracts()
  const deployer = createWalletClient({
    account: privateKeyToAccount(devnet.accounts.faucet.privateKey),
    chain: devnet.chain,
    transport: http(devnet.rpcUrl),
  })
  const factory = (await deps.chain.waitForTransactionReceipt({ hash: await deployer.deployContract(compiled) }))
    .contractAddress!
  const ownerKey = generatePrivateKey()
  const owner = privateKeyToAccount(ownerKey).address
  const wallet = (await deps.chain.readContract({
    address: factory,
    abi: compiled.abi,
    functionName: 'getAddress',
    args: [owner, 7n],
  })) as Address
  // a wallet whose address approved Permit2 before it had code (as a factory that approves on deployment would)
  await m.fund(wallet, 100_000n)
  t.equal(await deps.chain.getCode({ address: wallet }), undefined, 'no code yet')
  const wrapped = (ecdsa: Hex) =>
    serializeErc6492Signature({
      address: factory,
      data: encodeFunctionData({ abi: compiled.abi, functionName: 'createAccount', args: [owner, 7n] }),
      signature: walletSig(ecdsa),
    })

  const stranger = await m.send(await m.payload(wallet, generatePrivateKey(), wrapped))
  t.equal(stranger.statusCode, 402, 'a stranger: 402')
  t.match(m.reasonOf(stranger), /^invalid_permit2_signature/, 'the would-be wallet says no to a stranger')
  t.same(await m.rowsOf(wallet), [], 'nothing recorded')

  const paid = await m.send(await m.payload(wallet, ownerKey, wrapped), 777)
  t.equal(paid.statusCode, 200, paid.body)
  t.equal(await deps.chain.getCode({ address: wallet }), undefined, 'paying does not deploy the wallet')
  await m.settle(wallet)
  const [settled] = await m.rowsOf(wallet)
  t.equal(settled?.status, 'settled', 'settled in the batch that deployed the wallet')
  t.ok((await deps.chain.getCode({ address: wallet }))?.length, 'the batch deployed the wallet')
  t.same(
    await m.transfersFrom(wallet, settled!.tx_hash as Hex),
    [[m.receiver.toLowerCase(), 777n]],
    'one transfer from the wallet, of the actual charge',
  )
  t.equal(await m.balanceOf(wallet), 100_000n - 777n, 'the wallet paid the charge only')
})
