import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import solc from 'solc'
import t from 'tap'
import { createSIWxPayload, encodeSIWxHeader, type SIWxExtensionInfo } from '@x402/extensions/sign-in-with-x'
import { createWalletClient, encodeAbiParameters, hashMessage, http, type Abi, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, sign } from 'viem/accounts'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'

/** TestSmartWallet compiled now with the solc package, as smart-wallet.test.ts does. */
function compileWallet(): { abi: Abi; bytecode: Hex } {
  const source = readFileSync(new URL('../../fixtures/smart-wallet/TestSmartWallet.sol', import.meta.url), 'utf8')
  const input = {
    language: 'Solidity',
    sources: { 'TestSmartWallet.sol': { content: source } },
    settings: { evmVersion: 'cancun', outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
  }
  const out = JSON.parse(solc.compile(JSON.stringify(input)))
  const c = out.contracts['TestSmartWallet.sol'].TestSmartWallet
  return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` }
}

/** the wallet's own signature format: abi.encode(ownerIndex 0, ecdsa) */
const walletSig = (ecdsa: Hex) => encodeAbiParameters([{ type: 'uint256' }, { type: 'bytes' }], [0n, ecdsa])

t.test('an ERC-1271 smart wallet signs in: the proxy asks the wallet contract', async (t) => {
  const platform = await startTestPlatform(t)
  const { deps, devnet } = platform
  const url = `${platform.proxyUrl}/tollgate/toolbox/hash-generator?text=abc&algorithms=sha256`
  const endpoint = await deps.db
    .updateTable('endpoints')
    .set({ access_minutes: 10 })
    .where('slug', '=', 'hash-generator')
    .returning('id')
    .executeTakeFirstOrThrow()
  await announceRegistryChange(deps, {})
  const challenge = async () => {
    const res = await fetch(url)
    return (
      decodeRequired(res.headers.get('payment-required')).extensions?.['sign-in-with-x'] as
        { info: SIWxExtensionInfo } | undefined
    )?.info
  }
  await until('the proxy to offer sign-in', async () => (await challenge()) !== undefined)

  const deployer = createWalletClient({
    account: privateKeyToAccount(devnet.accounts.faucet.privateKey),
    chain: devnet.chain,
    transport: http(devnet.rpcUrl),
  })
  const ownerKey = generatePrivateKey()
  const owner = privateKeyToAccount(ownerKey)
  const { abi, bytecode } = compileWallet()
  const hash = await deployer.deployContract({ abi, bytecode, args: [owner.address] })
  const wallet = (await deps.chain.waitForTransactionReceipt({ hash })).contractAddress!
  // the wallet holds access (as a served payment from it would have granted)
  await deps.db
    .insertInto('access_grants')
    .values({
      payer: wallet.toLowerCase(),
      scope_id: endpoint.id,
      payment_id: randomUUID(),
      expires_at: new Date(Date.now() + 600_000),
    })
    .execute()

  /** the official payload helper with a signer that signs as the wallet: the owner's ECDSA over the EIP-191 hash, wrapped */
  const proof = async (key: Hex) => {
    const signer = {
      address: wallet,
      signMessage: async ({ message }: { message: string }) =>
        walletSig(await sign({ hash: hashMessage(message), privateKey: key, to: 'hex' })),
    }
    const info = (await challenge())!
    const payload = await createSIWxPayload({ ...info, chainId: deps.config.chain.caip2, type: 'eip191' }, signer, url)
    return encodeSIWxHeader(payload)
  }
  const good = await proof(ownerKey)
  const served = await fetch(url, { headers: { 'SIGN-IN-WITH-X': good } })
  t.equal(served.status, 200, await served.clone().text())
  t.match(await served.text(), /ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad/, 'the sha256 of abc')
  const forged = await fetch(url, { headers: { 'SIGN-IN-WITH-X': await proof(generatePrivateKey()) } })
  t.equal(forged.status, 402)
  t.equal(
    ((await forged.json()) as { error: string }).error,
    'invalid_siwx_signature',
    'not the owner: the wallet says no',
  )
  const payments = await deps.db.selectFrom('payments').select('id').execute()
  t.equal(payments.length, 0, 'nothing paid')
})
