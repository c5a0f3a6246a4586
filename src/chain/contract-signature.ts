/**
 * The slow path for smart-wallet payers: a signature longer than 65 bytes cannot be recovered
 * locally, so the wallet contract is asked through RPC (ERC-1271 `isValidSignature`), exactly
 * the check USDC's `transferWithAuthorization(..., bytes signature)` makes when it settles.
 *
 * ERC-6492 signatures (`abi.encode(factory, factoryCalldata, innerSignature)` + the magic
 * suffix) come from wallets that may not be deployed yet. A deployed wallet is asked about the
 * inner signature. An undeployed one is checked in a single `eth_call` through Multicall3: the
 * factory call deploys the wallet in that call's scratch state, then the wallet is asked. The
 * settler makes the same factory call in the settlement batch before the transfer
 * (src/services/settlement/chain-ops.ts), so what was checked here is what settles.
 */
import {
  BaseError,
  ContractFunctionRevertedError,
  decodeFunctionResult,
  encodeFunctionData,
  parseErc6492Signature,
  zeroAddress,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem'
import { MULTICALL3_ADDRESS, multicall3Abi } from './multicall3-abi.js'

/** The 32-byte suffix marking an ERC-6492 wrapped signature. */
export const ERC6492_MAGIC_SUFFIX = '6492649264926492649264926492649264926492649264926492649264926492'
const ERC1271_MAGIC = '0x1626ba7e'
/** Gas for the whole check of an undeployed wallet (its deployment included): a factory that needs more is refused. */
export const COUNTERFACTUAL_CHECK_GAS = 1_000_000n

const erc1271Abi = [
  {
    type: 'function',
    name: 'isValidSignature',
    stateMutability: 'view',
    inputs: [
      { name: 'hash', type: 'bytes32' },
      { name: 'signature', type: 'bytes' },
    ],
    outputs: [{ name: 'magicValue', type: 'bytes4' }],
  },
] as const

/** An ERC-6492 wrapper taken apart: the factory call that deploys `from`, and the wallet's own signature. */
export interface Erc6492Parts {
  factory: Address
  factoryData: Hex
  signature: Hex
}

export const isErc6492 = (signature: string): boolean => signature.toLowerCase().endsWith(ERC6492_MAGIC_SUFFIX)

/**
 * The parts of an ERC-6492 signature; null for one that is not wrapped or does not decode.
 * A zero factory or empty factory calldata decodes, but carries no way to deploy the wallet.
 */
export function parseErc6492(signature: Hex): Erc6492Parts | null {
  if (!isErc6492(signature)) return null
  try {
    const { address, data, signature: inner } = parseErc6492Signature(signature)
    if (!address || !data) return null
    return { factory: address, factoryData: data, signature: inner }
  } catch {
    return null
  }
}

/** The signature USDC is given at settlement: the wallet's own, unwrapped from ERC-6492 if wrapped. */
export function innerSignature(signature: Hex): Hex {
  return parseErc6492(signature)?.signature ?? signature
}

/** Whether the wrapper can deploy its wallet (a non-zero factory and some calldata). */
export const canDeploy = (parts: Erc6492Parts): boolean =>
  parts.factory.toLowerCase() !== zeroAddress && parts.factoryData !== '0x'

/**
 * - `valid` / `invalid`: the wallet's answer;
 * - `undeployed`: no contract at the payer and no way to deploy one;
 * - `counterfactual`: an ERC-6492 wallet not deployed yet, when the caller does not accept those.
 */
export type ContractSignatureCheck = 'valid' | 'invalid' | 'undeployed' | 'counterfactual'

/**
 * Asks `wallet` whether `signature` is its signature over `digest`. Resolves 'invalid' when the
 * wallet answers anything but the ERC-1271 magic value or reverts; rejects only when the chain
 * cannot be reached (the caller answers 503, never "invalid"). Wallets not deployed yet are
 * checked through their ERC-6492 factory call when `counterfactual` is true.
 *
 * @example
 *   const r = await checkContractSignature(deps.chain, auth.from, digest, payload.signature, { counterfactual: true })
 */
export async function checkContractSignature(
  client: PublicClient,
  wallet: Address,
  digest: Uint8Array,
  signature: Hex,
  opts: { counterfactual: boolean },
): Promise<ContractSignatureCheck> {
  const hash: Hex = `0x${Buffer.from(digest).toString('hex')}`
  const wrapped = isErc6492(signature)
  const parts = wrapped ? parseErc6492(signature) : null
  if (wrapped && !parts) return 'invalid'
  if (await isDeployed(client, wallet)) return askWallet(client, wallet, hash, parts ? parts.signature : signature)
  if (!parts || !canDeploy(parts)) return 'undeployed'
  if (!opts.counterfactual) return 'counterfactual'
  return askUndeployedWallet(client, wallet, hash, parts)
}

async function askWallet(
  client: PublicClient,
  wallet: Address,
  hash: Hex,
  signature: Hex,
): Promise<ContractSignatureCheck> {
  try {
    const magic = await client.readContract({
      address: wallet,
      abi: erc1271Abi,
      functionName: 'isValidSignature',
      args: [hash, signature],
    })
    return magic.toLowerCase() === ERC1271_MAGIC ? 'valid' : 'invalid'
  } catch (err) {
    if (saysNo(err)) return 'invalid'
    throw err
  }
}

/** One eth_call: Multicall3 runs the factory call, then asks the freshly deployed wallet. */
async function askUndeployedWallet(
  client: PublicClient,
  wallet: Address,
  hash: Hex,
  parts: Erc6492Parts,
): Promise<ContractSignatureCheck> {
  const ask = encodeFunctionData({ abi: erc1271Abi, functionName: 'isValidSignature', args: [hash, parts.signature] })
  const data = encodeFunctionData({
    abi: multicall3Abi,
    functionName: 'aggregate3',
    args: [
      [
        { target: parts.factory, allowFailure: true, callData: parts.factoryData },
        { target: wallet, allowFailure: true, callData: ask },
      ],
    ],
  })
  let out: Hex | undefined
  try {
    out = (await client.call({ to: MULTICALL3_ADDRESS, data, gas: COUNTERFACTUAL_CHECK_GAS })).data
  } catch (err) {
    if (saysNo(err)) return 'invalid'
    throw err
  }
  if (!out) return 'invalid'
  const results = decodeFunctionResult({ abi: multicall3Abi, functionName: 'aggregate3', data: out })
  const answer = results[1]
  // a wallet the factory did not deploy answers success with no data: not the magic value
  if (!answer?.success || answer.returnData.length < 10) return 'invalid'
  return answer.returnData.slice(0, 10).toLowerCase() === ERC1271_MAGIC ? 'valid' : 'invalid'
}

/** A revert, an out-of-gas or an undecodable answer is the chain saying no; a transport failure is not. */
function saysNo(err: unknown): boolean {
  if (!(err instanceof BaseError)) return false
  return Boolean(
    err.walk((e) => {
      const name = (e as Error).name
      return (
        e instanceof ContractFunctionRevertedError ||
        name === 'AbiDecodingZeroDataError' ||
        name === 'PositionOutOfBoundsError' ||
        name === 'ExecutionRevertedError' ||
        name === 'InsufficientFundsError' ||
        name === 'IntrinsicGasTooLowError'
      )
    }),
  )
}

// A deployed contract stays deployed: remember positive answers (bounded).
const deployed = new Set<string>()
const MAX_REMEMBERED = 10_000

async function isDeployed(client: PublicClient, wallet: Address): Promise<boolean> {
  const key = wallet.toLowerCase()
  if (deployed.has(key)) return true
  const code = await client.getCode({ address: wallet })
  if (!code || code === '0x') return false
  if (deployed.size >= MAX_REMEMBERED) deployed.clear()
  deployed.add(key)
  return true
}
