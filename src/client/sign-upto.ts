/**
 * Signs an x402 `upto` EVM payment (coinbase/x402 `specs/schemes/upto/scheme_upto_evm.md`, the
 * payload `@x402/evm`'s UptoEvmScheme sends): a Permit2 `PermitWitnessTransferFrom` for the
 * requirement's maximum, spender the x402 upto proxy, witness `{to: payTo, facilitator:
 * extra.facilitatorAddress, validAfter}`. The wallet must have approved Permit2 for the asset
 * (once; `permit2Approval` below says whether it has). Verified by the proxy's own verifier in
 * test/integration/buyer/agent-upto.test.ts.
 */
import { randomBytes } from 'node:crypto'
import { getAddress, hexToBigInt, type Address, type Hex, type LocalAccount } from 'viem'
import { PERMIT2_ADDRESS, UPTO_PROXY_ADDRESS } from '../chain/permit2.js'
import { UPTO_WITNESS_TYPES, uptoNonceHex } from '../schemes/upto/typed-data.js'
import type { Requirement } from './challenge.js'

const ADDRESS = /^0x[0-9a-fA-F]{40}$/

/** A v2 `upto` requirement this client can sign: Permit2 transfer method and a facilitator named. */
export function isPayableUpto(r: Requirement): boolean {
  const extra = r.raw.extra as Record<string, unknown> | undefined
  return (
    r.scheme === 'upto' &&
    r.version === 2 &&
    r.chainId !== undefined &&
    typeof extra?.facilitatorAddress === 'string' &&
    ADDRESS.test(extra.facilitatorAddress) &&
    (extra.assetTransferMethod === undefined || extra.assetTransferMethod === 'permit2')
  )
}

export interface SignedUpto {
  payload: Record<string, unknown>
  /** the Permit2 nonce as 32-byte hex (the proxy's ledger nonce for this payment) */
  nonce: Hex
  validAfter: bigint
  deadline: bigint
}

/**
 * validAfter = now - 600 and deadline = now + maxTimeoutSeconds, as for `exact`; a random
 * 256-bit Permit2 nonce.
 *
 * @example
 *   const s = await signUpto(account, req, Math.floor(Date.now() / 1000))
 *   paymentHeader(challenge, req, s.payload)
 */
export async function signUpto(account: LocalAccount, r: Requirement, nowSeconds: number): Promise<SignedUpto> {
  if (!isPayableUpto(r)) throw new TypeError('not a payable upto requirement (v2, Permit2, facilitatorAddress)')
  const facilitator = getAddress((r.raw.extra as { facilitatorAddress: string }).facilitatorAddress)
  const nonce = hexToBigInt(`0x${randomBytes(32).toString('hex')}`)
  const validAfter = BigInt(nowSeconds - 600)
  const deadline = BigInt(nowSeconds + r.maxTimeoutSeconds)
  const message = {
    permitted: { token: getAddress(r.asset), amount: r.amount },
    spender: UPTO_PROXY_ADDRESS as Address,
    nonce,
    deadline,
    witness: { to: getAddress(r.payTo), facilitator, validAfter },
  }
  const signature = await account.signTypedData({
    domain: { name: 'Permit2', chainId: r.chainId!, verifyingContract: PERMIT2_ADDRESS },
    types: UPTO_WITNESS_TYPES,
    primaryType: 'PermitWitnessTransferFrom',
    message,
  })
  return {
    payload: {
      signature,
      permit2Authorization: {
        from: account.address,
        permitted: { token: message.permitted.token, amount: r.amount.toString() },
        spender: message.spender,
        nonce: nonce.toString(),
        deadline: deadline.toString(),
        witness: { to: message.witness.to, facilitator, validAfter: validAfter.toString() },
      },
    },
    nonce: uptoNonceHex(nonce),
    validAfter,
    deadline,
  }
}
