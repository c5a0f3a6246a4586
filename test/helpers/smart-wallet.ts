import { readFileSync } from 'node:fs'
import solc from 'solc'
import { createWalletClient, encodeAbiParameters, http, type Abi, type Address, type Hex } from 'viem'
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import type { ClientEvmSigner } from '@x402/evm'
import type { TestPlatform } from './platform.js'

type Compiled = { abi: Abi; bytecode: Hex }

let compiled: { wallet: Compiled; factory: Compiled } | undefined

/**
 * TestSmartWallet and its factory (test/fixtures/smart-wallet/TestSmartWallet.sol), compiled with
 * the solc package once per process (no artifact to keep in sync).
 */
export function smartWalletContracts(): { wallet: Compiled; factory: Compiled } {
  if (compiled) return compiled
  const source = readFileSync(new URL('../fixtures/smart-wallet/TestSmartWallet.sol', import.meta.url), 'utf8')
  const input = {
    language: 'Solidity',
    sources: { 'TestSmartWallet.sol': { content: source } },
    settings: { evmVersion: 'cancun', outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
  }
  const out = JSON.parse(solc.compile(JSON.stringify(input)))
  const errors = (out.errors ?? []).filter((e: { severity: string }) => e.severity === 'error')
  if (errors.length) throw new Error(errors.map((e: { formattedMessage: string }) => e.formattedMessage).join('\n'))
  const pick = (name: string): Compiled => ({
    abi: out.contracts['TestSmartWallet.sol'][name].abi,
    bytecode: `0x${out.contracts['TestSmartWallet.sol'][name].evm.bytecode.object}`,
  })
  compiled = { wallet: pick('TestSmartWallet'), factory: pick('TestSmartWalletFactory') }
  return compiled
}

/** The TestSmartWallet signature format: abi.encode(ownerIndex 0, ecdsa), longer than 65 bytes. */
export const walletSig = (ecdsa: Hex): Hex => encodeAbiParameters([{ type: 'uint256' }, { type: 'bytes' }], [0n, ecdsa])

/**
 * The wallet as an official `@x402/evm` client's signer: `owner` signs the typed data, the wallet's
 * format wraps it (what its ERC-1271 `isValidSignature` accepts for `owner`).
 */
export function walletSigner(
  wallet: Address,
  owner: PrivateKeyAccount,
  readContract?: ClientEvmSigner['readContract'],
): ClientEvmSigner {
  return {
    address: wallet,
    signTypedData: async (m) => walletSig(await owner.signTypedData(m as never)),
    ...(readContract ? { readContract } : {}),
  }
}

/** A TestSmartWallet owned by `owner`, deployed by the devnet faucet; its address. */
export async function deploySmartWallet(platform: Pick<TestPlatform, 'deps' | 'devnet'>, owner: Address) {
  const { devnet, deps } = platform
  const deployer = createWalletClient({
    account: privateKeyToAccount(devnet.accounts.faucet.privateKey),
    chain: devnet.chain,
    transport: http(devnet.rpcUrl),
  })
  const { abi, bytecode } = smartWalletContracts().wallet
  const hash = await deployer.deployContract({ abi, bytecode, args: [owner] })
  return (await deps.chain.waitForTransactionReceipt({ hash })).contractAddress!
}
