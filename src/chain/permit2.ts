/**
 * Permit2 and the x402 upto proxy: their canonical addresses (the same on every chain, and those
 * `@x402/evm` signs for), installed on the embedded dev chain by src/chain/devnet.ts.
 */
import type { PublicClient } from 'viem'
import artifacts from './contracts/artifacts.json' with { type: 'json' }

export const PERMIT2_ADDRESS = '0x000000000022D473030F116dDEE9F6B43aC78BA3' as const
export const UPTO_PROXY_ADDRESS = '0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002' as const

/** The proxy's `settle` (the ABI of `@x402/evm`'s x402UptoPermit2ProxyABI, the part we call). */
export const uptoProxyAbi = [
  {
    type: 'function',
    name: 'settle',
    stateMutability: 'nonpayable',
    inputs: [
      {
        name: 'permit',
        type: 'tuple',
        components: [
          {
            name: 'permitted',
            type: 'tuple',
            components: [
              { name: 'token', type: 'address' },
              { name: 'amount', type: 'uint256' },
            ],
          },
          { name: 'nonce', type: 'uint256' },
          { name: 'deadline', type: 'uint256' },
        ],
      },
      { name: 'amount', type: 'uint256' },
      { name: 'owner', type: 'address' },
      {
        name: 'witness',
        type: 'tuple',
        components: [
          { name: 'to', type: 'address' },
          { name: 'facilitator', type: 'address' },
          { name: 'validAfter', type: 'uint256' },
        ],
      },
      { name: 'signature', type: 'bytes' },
    ],
    outputs: [],
  },
] as const

/** Permit2's views the scheme and settlement read. */
export const permit2Abi = [
  {
    type: 'function',
    name: 'nonceBitmap',
    stateMutability: 'view',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'wordPos', type: 'uint256' },
    ],
    outputs: [{ type: 'uint256' }],
  },
  { type: 'function', name: 'DOMAIN_SEPARATOR', stateMutability: 'view', inputs: [], outputs: [{ type: 'bytes32' }] },
] as const

/** Whether a Permit2 signature-transfer nonce is spent, from its bitmap word. */
export function permit2NonceUsed(bitmap: bigint, nonce: bigint): boolean {
  return ((bitmap >> (nonce & 0xffn)) & 1n) === 1n
}

/** Our proxy's own event (beside the interface's): which payment settled, for how much. */
export const uptoSettledEvent = {
  type: 'event',
  name: 'UptoSettled',
  inputs: [
    { name: 'owner', type: 'address', indexed: true },
    { name: 'nonce', type: 'uint256', indexed: true },
    { name: 'to', type: 'address', indexed: true },
    { name: 'amount', type: 'uint256', indexed: false },
  ],
} as const

const error = (name: string) => ({ type: 'error', name, inputs: [] }) as const

/** The errors a settle call can revert with (the proxy's and Permit2's), to name a failure. */
export const uptoSettleErrors = [
  error('AmountExceedsPermitted'),
  error('InvalidDestination'),
  error('InvalidOwner'),
  error('PaymentTooEarly'),
  error('UnauthorizedFacilitator'),
  error('ReentrancyGuardReentrantCall'),
  error('InvalidNonce'),
  error('InvalidSigner'),
  error('InvalidSignature'),
  error('InvalidSignatureLength'),
  error('InvalidAmount'),
  error('InvalidContractSignature'),
  { type: 'error', name: 'SignatureExpired', inputs: [{ name: 'signatureDeadline', type: 'uint256' }] },
] as const

/**
 * How upto payments settle on a chain, from the code at the proxy's canonical address:
 * - `batch`: our proxy (the embedded dev chain's), which lets the facilitator settle through
 *   Multicall3, so upto payments share the settlement batches of exact ones;
 * - `direct`: any other proxy, such as the reference x402 upto proxy public chains run, which
 *   accepts only the facilitator itself as the caller: one transaction per payment;
 * - `absent`: no code there, nothing can settle (a call to an empty address "succeeds" and moves
 *   nothing, so nothing is sent).
 */
export type UptoSettlementPath = 'batch' | 'direct' | 'absent'

export async function uptoSettlementPath(client: Pick<PublicClient, 'getCode'>): Promise<UptoSettlementPath> {
  const code = (await client.getCode({ address: UPTO_PROXY_ADDRESS }))?.toLowerCase()
  if (!code || code === '0x') return 'absent'
  return code === artifacts.contracts.X402UptoPermit2Proxy.deployedBytecode.toLowerCase() ? 'batch' : 'direct'
}
