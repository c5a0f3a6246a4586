import { readFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import solc from 'solc'
import t from 'tap'
import { createWalletClient, encodeAbiParameters, http, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, sign } from 'viem/accounts'
import { mintUsdc } from '../../src/chain/devnet.js'
import { ERC6492_MAGIC_SUFFIX } from '../../src/chain/contract-signature.js'
import { makeDomainSeparator, transferAuthDigest } from '../../src/chain/transfer-auth-digest.js'
import { usdcAbi } from '../../src/chain/usdc-abi.js'
import { createSettler } from '../../src/services/settlement/settler.js'
import { decodeRequired, v2Header } from '../helpers/pay.js'
import { startTestPlatform } from '../helpers/platform.js'

/** TestSmartWallet compiled now with the solc package (no artifact to keep in sync). */
function compileWallet(): { abi: unknown[]; bytecode: Hex } {
  const source = readFileSync(new URL('../fixtures/smart-wallet/TestSmartWallet.sol', import.meta.url), 'utf8')
  const input = {
    language: 'Solidity',
    sources: { 'TestSmartWallet.sol': { content: source } },
    settings: { evmVersion: 'cancun', outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
  }
  const out = JSON.parse(solc.compile(JSON.stringify(input)))
  const errors = (out.errors ?? []).filter((e: { severity: string }) => e.severity === 'error')
  if (errors.length) throw new Error(errors.map((e: { formattedMessage: string }) => e.formattedMessage).join('\n'))
  const c = out.contracts['TestSmartWallet.sol'].TestSmartWallet
  return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` }
}

const path = '/tollgate/toolbox/hash-generator?text=abc&algorithms=sha256'

t.test('a deployed ERC-1271 smart wallet pays through the RPC slow path and its payment settles', async (t) => {
  const platform = await startTestPlatform(t)
  const { deps, devnet, proxy } = platform
  const deployer = createWalletClient({ account: privateKeyToAccount(devnet.accounts.faucet.privateKey), chain: devnet.chain, transport: http(devnet.rpcUrl) })
  const ownerKey = generatePrivateKey()
  const owner = privateKeyToAccount(ownerKey)
  const { abi, bytecode } = compileWallet()
  const hash = await deployer.deployContract({ abi, bytecode, args: [owner.address] })
  const receipt = await deps.chain.waitForTransactionReceipt({ hash })
  const wallet = receipt.contractAddress!
  await mintUsdc(devnet.rpcUrl, wallet, 1_000_000n)

  const first = await proxy.inject(path)
  t.equal(first.statusCode, 402)
  const required = decodeRequired(first.headers['payment-required'] as string)
  const req = required.accepts[0]
  const ds = makeDomainSeparator({ name: req.extra.name, version: req.extra.version, chainId: devnet.chain.id, verifyingContract: req.asset })
  const now = Math.floor(Date.now() / 1000)
  /** a payment from `from`, signed by `key` and wrapped as the wallet expects */
  const payment = async (from: string, key: Hex, wrap = (s: Hex) => encodeAbiParameters([{ type: 'uint256' }, { type: 'bytes' }], [0n, s])) => {
    const authorization = { from, to: req.payTo, value: req.amount, validAfter: String(now - 600), validBefore: String(now + 120), nonce: `0x${randomBytes(32).toString('hex')}` }
    const digest = transferAuthDigest(ds, { ...authorization, value: BigInt(authorization.value), validAfter: BigInt(authorization.validAfter), validBefore: BigInt(authorization.validBefore) })
    const ecdsa = await sign({ hash: `0x${Buffer.from(digest).toString('hex')}`, privateKey: key, to: 'hex' })
    return { signature: wrap(ecdsa), authorization }
  }
  const count = async () => Number((await deps.db.selectFrom('payments').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n)

  const good = await payment(wallet, ownerKey)
  t.ok(good.signature.length > 132, 'a signature longer than 65 bytes')
  const paid = await proxy.inject({ url: path, headers: { 'payment-signature': v2Header(required, good) } })
  t.equal(paid.statusCode, 200, paid.body)
  const row = await deps.db.selectFrom('payments').selectAll().where('payer', '=', wallet.toLowerCase()).executeTakeFirstOrThrow()
  t.equal(row.status, 'served')
  t.equal(row.signature, good.signature, 'the wallet signature is kept for settlement')

  // refusals, each with its reason and no payment row
  const before = await count()
  const reasonOf = (r: Awaited<ReturnType<typeof proxy.inject>>) => decodeRequired(r.headers['payment-required'] as string).error
  const stranger = await proxy.inject({ url: path, headers: { 'payment-signature': v2Header(required, await payment(wallet, generatePrivateKey())) } })
  t.equal(stranger.statusCode, 402)
  t.equal(reasonOf(stranger), 'invalid_exact_evm_payload_signature', 'the wallet says no to a stranger')
  const eoa = privateKeyToAccount(generatePrivateKey()).address
  const undeployed = await proxy.inject({ url: path, headers: { 'payment-signature': v2Header(required, await payment(eoa, ownerKey)) } })
  t.equal(reasonOf(undeployed), 'invalid_exact_evm_payload_undeployed_smart_wallet', 'no contract at the payer address')
  const counterfactual = await proxy.inject({ url: path, headers: { 'payment-signature': v2Header(required, await payment(wallet, ownerKey, (s) => `0x${'00'.repeat(64)}${s.slice(2)}${ERC6492_MAGIC_SUFFIX}` as Hex)) } })
  t.equal(reasonOf(counterfactual), 'invalid_exact_evm_payload_undeployed_smart_wallet', 'ERC-6492 wrapped signatures are refused with a reason')
  const garbage = await proxy.inject({ url: path, headers: { 'payment-signature': v2Header(required, await payment(wallet, ownerKey, () => `0x${'ab'.repeat(70)}` as Hex)) } })
  t.equal(reasonOf(garbage), 'invalid_exact_evm_payload_signature', 'an undecodable wrapper is invalid, not an error')
  t.equal(await count(), before, 'no refused payment was recorded')

  const receiver = devnet.accounts.receiver.address
  const balance = () => deps.chain.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [receiver] })
  const b0 = await balance()
  const stats = await createSettler(deps).runOnce(60_000)
  t.ok(stats.settled >= 1)
  const settled = await deps.db.selectFrom('payments').select(['status', 'tx_hash']).where('id', '=', row.id).executeTakeFirstOrThrow()
  t.equal(settled.status, 'settled', 'settled through the bytes-signature overload')
  t.ok(settled.tx_hash)
  t.equal(await balance() - b0, BigInt(req.amount), 'the receiver got the payment from the smart wallet')
})
