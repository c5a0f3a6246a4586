/** The upto scheme's EIP-712 types and nonce form, shared by the proxy's verifier and our client (no server imports). */
import { toHex, type Hex } from 'viem'

/** The EIP-712 types the upto client signs (`uptoPermit2WitnessTypes` of `@x402/evm`). */
export const UPTO_WITNESS_TYPES = {
  PermitWitnessTransferFrom: [
    { name: 'permitted', type: 'TokenPermissions' },
    { name: 'spender', type: 'address' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
    { name: 'witness', type: 'Witness' },
  ],
  TokenPermissions: [
    { name: 'token', type: 'address' },
    { name: 'amount', type: 'uint256' },
  ],
  Witness: [
    { name: 'to', type: 'address' },
    { name: 'facilitator', type: 'address' },
    { name: 'validAfter', type: 'uint256' },
  ],
} as const

/** The ledger's nonce of an upto payment: the Permit2 nonce as 32-byte hex (unique per payer). */
export const uptoNonceHex = (nonce: bigint): Hex => toHex(nonce, { size: 32 })
