import { randomBytes } from 'node:crypto'
import t from 'tap'
import {
  createWalletClient,
  encodeFunctionData,
  http,
  serializeErc6492Signature,
  zeroAddress,
  type Address,
  type Hex,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount, sign } from 'viem/accounts'
import { mintUsdc } from '../../../src/chain/devnet.js'
import { checkContractSignature, ERC6492_MAGIC_SUFFIX } from '../../../src/chain/contract-signature.js'
import { makeDomainSeparator, transferAuthDigest } from '../../../src/chain/transfer-auth-digest.js'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { createPayerCredit } from '../../../src/ledger/payer-credit.js'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { decodeRequired, signFor, v2Header } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { deploySmartWallet, smartWalletContracts, walletSig } from '../../helpers/smart-wallet.js'

const compiled = smartWalletContracts()

const path = '/tollgate/toolbox/hash-generator?text=abc&algorithms=sha256'

t.test('a deployed ERC-1271 smart wallet pays through the RPC slow path and its payment settles', async (t) => {
  const platform = await startTestPlatform(t)
  const { deps, devnet, proxy } = platform
  const ownerKey = generatePrivateKey()
  const wallet = await deploySmartWallet(platform, privateKeyToAccount(ownerKey).address)
  await mintUsdc(devnet.rpcUrl, wallet, 1_000_000n)

  const first = await proxy.inject(path)
  t.equal(first.statusCode, 402)
  const required = decodeRequired(first.headers['payment-required'] as string)
  const req = required.accepts[0]
  const ds = makeDomainSeparator({
    name: req.extra.name,
    version: req.extra.version,
    chainId: devnet.chain.id,
    verifyingContract: req.asset,
  })
  const now = Math.floor(Date.now() / 1000)
  /** a payment from `from`, signed by `key` and wrapped as the wallet expects */
  const payment = async (from: string, key: Hex, wrap = walletSig) => {
    const authorization = {
      from,
      to: req.payTo,
      value: req.amount,
      validAfter: String(now - 600),
      validBefore: String(now + 120),
      nonce: `0x${randomBytes(32).toString('hex')}`,
    }
    const digest = transferAuthDigest(ds, {
      ...authorization,
      value: BigInt(authorization.value),
      validAfter: BigInt(authorization.validAfter),
      validBefore: BigInt(authorization.validBefore),
    })
    const ecdsa = await sign({ hash: `0x${Buffer.from(digest).toString('hex')}`, privateKey: key, to: 'hex' })
    return { signature: wrap(ecdsa), authorization }
  }
  const count = async () =>
    Number(
      (
        await deps.db
          .selectFrom('payments')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    )

  const good = await payment(wallet, ownerKey)
  t.ok(good.signature.length > 132, 'a signature longer than 65 bytes')
  const paid = await proxy.inject({ url: path, headers: { 'payment-signature': v2Header(required, good) } })
  t.equal(paid.statusCode, 200, paid.body)
  const row = await deps.db
    .selectFrom('payments')
    .selectAll()
    .where('payer', '=', wallet.toLowerCase())
    .executeTakeFirstOrThrow()
  t.equal(row.status, 'served')
  t.equal(row.signature, good.signature, 'the wallet signature is kept for settlement')

  // refusals, each with its reason and no payment row
  const before = await count()
  const reasonOf = (r: Awaited<ReturnType<typeof proxy.inject>>) =>
    decodeRequired(r.headers['payment-required'] as string).error
  const stranger = await proxy.inject({
    url: path,
    headers: { 'payment-signature': v2Header(required, await payment(wallet, generatePrivateKey())) },
  })
  t.equal(stranger.statusCode, 402)
  t.equal(reasonOf(stranger), 'invalid_exact_evm_payload_signature', 'the wallet says no to a stranger')
  const eoa = privateKeyToAccount(generatePrivateKey()).address
  // the credit check comes before the RPC check: an unfunded (or replayed) payment costs no chain call
  const unfunded = await proxy.inject({
    url: path,
    headers: { 'payment-signature': v2Header(required, await payment(eoa, ownerKey)) },
  })
  t.equal(
    reasonOf(unfunded),
    'invalid_exact_evm_insufficient_balance',
    'an unfunded payer is refused before its signature is checked over RPC',
  )
  await mintUsdc(devnet.rpcUrl, eoa, 10_000n)
  await createPayerCredit(deps).setBalance(devnet.usdcAddress.toLowerCase(), eoa.toLowerCase(), 10_000n)
  const undeployed = await proxy.inject({
    url: path,
    headers: { 'payment-signature': v2Header(required, await payment(eoa, ownerKey)) },
  })
  t.equal(reasonOf(undeployed), 'invalid_exact_evm_payload_undeployed_smart_wallet', 'no contract at the payer address')
  const counterfactual = await proxy.inject({
    url: path,
    headers: {
      'payment-signature': v2Header(
        required,
        await payment(wallet, ownerKey, (s) => `0x${'00'.repeat(64)}${s.slice(2)}${ERC6492_MAGIC_SUFFIX}` as Hex),
      ),
    },
  })
  t.equal(
    reasonOf(counterfactual),
    'invalid_exact_evm_payload_signature',
    'an ERC-6492 wrapper that does not decode is invalid',
  )
  const garbage = await proxy.inject({
    url: path,
    headers: {
      'payment-signature': v2Header(required, await payment(wallet, ownerKey, () => `0x${'ab'.repeat(70)}` as Hex)),
    },
  })
  t.equal(reasonOf(garbage), 'invalid_exact_evm_payload_signature', 'an undecodable wrapper is invalid, not an error')
  t.equal(await count(), before, 'no refused payment was recorded')

  const receiver = devnet.accounts.receiver.address
  const balance = () =>
    deps.chain.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [receiver] })
  const b0 = await balance()
  const stats = await createSettler(deps).runOnce(60_000)
  t.ok(stats.settled >= 1)
  const settled = await deps.db
    .selectFrom('payments')
    .select(['status', 'tx_hash'])
    .where('id', '=', row.id)
    .executeTakeFirstOrThrow()
  t.equal(settled.status, 'settled', 'settled through the bytes-signature overload')
  t.ok(settled.tx_hash)
  t.equal((await balance()) - b0, BigInt(req.amount), 'the receiver got the payment from the smart wallet')
})

t.test(
  'a smart wallet not deployed yet pays with an ERC-6492 signature; settlement deploys it before its transfers',
  async (t) => {
    const platform = await startTestPlatform(t)
    const { deps, devnet, proxy } = platform
    const deployer = createWalletClient({
      account: privateKeyToAccount(devnet.accounts.faucet.privateKey),
      chain: devnet.chain,
      transport: http(devnet.rpcUrl),
    })
    const deployed = await deps.chain.waitForTransactionReceipt({
      hash: await deployer.deployContract({ ...compiled.factory }),
    })
    const factory = deployed.contractAddress!
    const ownerKey = generatePrivateKey()
    const owner = privateKeyToAccount(ownerKey)
    const addressFor = (salt: bigint) =>
      deps.chain.readContract({
        address: factory,
        abi: compiled.factory.abi,
        functionName: 'getAddress',
        args: [owner.address, salt],
      }) as Promise<Address>
    const wallet = await addressFor(7n)
    t.equal(await deps.chain.getCode({ address: wallet }), undefined, 'the wallet has no code yet')
    await mintUsdc(devnet.rpcUrl, wallet, 1_000_000n)
    const eoa = privateKeyToAccount(generatePrivateKey())
    await mintUsdc(devnet.rpcUrl, eoa.address, 1_000_000n)

    const first = await proxy.inject(path)
    const required = decodeRequired(first.headers['payment-required'] as string)
    const req = required.accepts[0]
    const ds = makeDomainSeparator({
      name: req.extra.name,
      version: req.extra.version,
      chainId: devnet.chain.id,
      verifyingContract: req.asset,
    })
    const now = Math.floor(Date.now() / 1000)
    const deployCall = (salt: bigint) =>
      encodeFunctionData({ abi: compiled.factory.abi, functionName: 'createAccount', args: [owner.address, salt] })
    /** a payment from the wallet signed by `key`, wrapped in ERC-6492 with the factory call for `salt` */
    const payment = async (key: Hex, o: { salt?: bigint; factory?: Address; factoryData?: Hex } = {}) => {
      const authorization = {
        from: wallet,
        to: req.payTo,
        value: req.amount,
        validAfter: String(now - 600),
        validBefore: String(now + 120),
        nonce: `0x${randomBytes(32).toString('hex')}`,
      }
      const digest = transferAuthDigest(ds, {
        ...authorization,
        value: BigInt(authorization.value),
        validAfter: BigInt(authorization.validAfter),
        validBefore: BigInt(authorization.validBefore),
      })
      const ecdsa = await sign({ hash: `0x${Buffer.from(digest).toString('hex')}`, privateKey: key, to: 'hex' })
      const signature = serializeErc6492Signature({
        address: o.factory ?? factory,
        data: o.factoryData ?? deployCall(o.salt ?? 7n),
        signature: walletSig(ecdsa),
      })
      return { signature, authorization, digest }
    }
    const pay = async ({ signature, authorization }: { signature: string; authorization: object }) =>
      proxy.inject({ url: path, headers: { 'payment-signature': v2Header(required, { signature, authorization }) } })
    const reasonOf = (r: Awaited<ReturnType<typeof proxy.inject>>) =>
      decodeRequired(r.headers['payment-required'] as string).error
    const count = async () =>
      Number(
        (
          await deps.db
            .selectFrom('payments')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .where('payer', '=', wallet.toLowerCase())
            .executeTakeFirstOrThrow()
        ).n,
      )

    // refusals first, each with its reason and no payment row
    t.equal(
      reasonOf(await pay(await payment(generatePrivateKey()))),
      'invalid_exact_evm_payload_signature',
      'the would-be wallet says no to a stranger',
    )
    t.equal(
      reasonOf(await pay(await payment(ownerKey, { salt: 8n }))),
      'invalid_exact_evm_payload_signature',
      'a factory call that deploys another wallet proves nothing',
    )
    t.equal(
      reasonOf(await pay(await payment(ownerKey, { factory: zeroAddress }))),
      'invalid_exact_evm_payload_undeployed_smart_wallet',
      'a wrapper with no factory cannot deploy the wallet',
    )
    t.equal(
      reasonOf(await pay(await payment(ownerKey, { factory: eoa.address }))),
      'invalid_exact_evm_payload_signature',
      'a "factory" with no code deploys nothing',
    )
    const costly = (work: bigint) =>
      encodeFunctionData({
        abi: compiled.factory.abi,
        functionName: 'createAccountAfter',
        args: [work, owner.address, 7n],
      })
    t.equal(
      reasonOf(await pay(await payment(ownerKey, { factoryData: costly(60n) }))),
      'invalid_exact_evm_payload_signature',
      'a deployment over the gas cap is refused (the relayer would pay for it)',
    )
    t.equal(await count(), 0, 'no refused payment was recorded')
    const cheap = await payment(ownerKey, { factoryData: costly(2n) })
    t.equal(
      await checkContractSignature(deps.chain, wallet, cheap.digest, cheap.signature, { counterfactual: true }),
      'valid',
      'the same factory path under the cap passes',
    )
    const asked = await payment(ownerKey)
    t.equal(
      await checkContractSignature(deps.chain, wallet, asked.digest, asked.signature, { counterfactual: false }),
      'counterfactual',
      'a platform that does not accept them says so',
    )

    // two payments from the undeployed wallet, one from an EOA: all served, nothing deployed yet
    const paid = await Promise.all([
      pay(await payment(ownerKey)),
      pay(await payment(ownerKey)),
      pay(await signFor(eoa, required)),
    ])
    for (const r of paid) t.equal(r.statusCode, 200, r.body)
    t.equal(await count(), 2)
    t.equal(await deps.chain.getCode({ address: wallet }), undefined, 'paying does not deploy the wallet')

    const receiver = devnet.accounts.receiver.address
    const balance = () =>
      deps.chain.readContract({
        address: devnet.usdcAddress,
        abi: usdcAbi,
        functionName: 'balanceOf',
        args: [receiver],
      })
    const b0 = await balance()
    const stats = await createSettler(deps).runOnce(60_000)
    t.equal(stats.settled, 3, 'the wallet is deployed once and all three transfers settle')
    t.equal(stats.batches, 1, 'in one batch')
    t.ok((await deps.chain.getCode({ address: wallet }))?.length, 'the batch deployed the wallet')
    t.equal((await balance()) - b0, 3n * BigInt(req.amount))
    const rows = await deps.db
      .selectFrom('payments')
      .select(['status', 'signature'])
      .where('payer', '=', wallet.toLowerCase())
      .execute()
    t.same(
      rows.map((r) => r.status),
      ['settled', 'settled'],
    )
    t.ok(
      rows.every((r) => r.signature.endsWith(ERC6492_MAGIC_SUFFIX)),
      'the wrapped signature is what the payer sent, kept as it was',
    )

    // deployed now: a wrapped signature is checked against the wallet itself, and settles with no factory call
    const later = await pay(await payment(ownerKey))
    t.equal(later.statusCode, 200, later.body)
    t.equal(
      reasonOf(await pay(await payment(generatePrivateKey()))),
      'invalid_exact_evm_payload_signature',
      'the deployed wallet says no to a stranger',
    )
    const again = await createSettler(deps).runOnce(60_000)
    t.equal(again.settled, 1)
    t.equal((await balance()) - b0, 4n * BigInt(req.amount))
  },
)
