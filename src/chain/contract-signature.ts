/**
 * The slow path for smart-wallet payers: a signature longer than 65 bytes cannot be recovered
 * locally, so the wallet contract is asked through RPC (ERC-1271 `isValidSignature`), exactly
 * the check USDC's `transferWithAuthorization(..., bytes signature)` makes when it settles.
 *
 * ERC-6492 signatures (wallets not deployed yet, signature wrapped with the factory call) are
 * recognised and refused: settling them would need the wallet deployed first.
 */
import { BaseError, ContractFunctionRevertedError, type Address, type Hex, type PublicClient } from 'viem'

/** The 32-byte suffix marking an ERC-6492 wrapped signature. */
export const ERC6492_MAGIC_SUFFIX = '6492649264926492649264926492649264926492649264926492649264926492'
const ERC1271_MAGIC = '0x1626ba7e'

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

export type ContractSignatureCheck = 'valid' | 'invalid' | 'undeployed' | 'counterfactual'

/**
 * Asks `wallet` whether `signature` is its signature over `digest`. Resolves 'invalid' when the
 * wallet answers anything but the ERC-1271 magic value or reverts; rejects only when the chain
 * cannot be reached (the caller answers 503, never "invalid").
 *
 * @example
 *   const r = await checkContractSignature(deps.chain, auth.from, digest, payload.signature)
 */
export async function checkContractSignature(client: PublicClient, wallet: Address, digest: Uint8Array, signature: Hex): Promise<ContractSignatureCheck> {
  if (signature.toLowerCase().endsWith(ERC6492_MAGIC_SUFFIX)) return 'counterfactual'
  if (!(await isDeployed(client, wallet))) return 'undeployed'
  try {
    const magic = await client.readContract({
      address: wallet,
      abi: erc1271Abi,
      functionName: 'isValidSignature',
      args: [`0x${Buffer.from(digest).toString('hex')}`, signature],
    })
    return magic.toLowerCase() === ERC1271_MAGIC ? 'valid' : 'invalid'
  } catch (err) {
    // a revert or an undecodable answer is the wallet saying no; a transport failure is not
    if (err instanceof BaseError && err.walk((e) => e instanceof ContractFunctionRevertedError || (e as Error).name === 'AbiDecodingZeroDataError' || (e as Error).name === 'PositionOutOfBoundsError')) return 'invalid'
    throw err
  }
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
