import { randomBytes } from 'node:crypto'
import type { PrivateKeyAccount } from 'viem/accounts'
import { eip3009Types } from '../../src/chain/usdc-abi.js'
import type { Challenge } from '../../src/x402/challenge.js'

export interface AuthorizationOverrides {
  to?: string
  value?: bigint | string
  validAfter?: bigint | string
  validBefore?: bigint | string
  nonce?: `0x${string}`
  chainId?: number
  verifyingContract?: `0x${string}`
}

/** Decodes the v2 PAYMENT-REQUIRED header of a 402 response. */
export function decodeRequired(header: string | null | undefined): Challenge['v2'] {
  return JSON.parse(Buffer.from(String(header), 'base64').toString('utf8'))
}

/** Signs an EIP-3009 TransferWithAuthorization for the first requirement of a v2 challenge. */
export async function signFor(account: PrivateKeyAccount, required: Challenge['v2'], o: AuthorizationOverrides = {}) {
  const req = required.accepts[0]
  const now = Math.floor(Date.now() / 1000)
  const authorization = {
    from: account.address,
    to: (o.to ?? req.payTo) as `0x${string}`,
    value: String(o.value ?? req.amount),
    validAfter: String(o.validAfter ?? now - 600),
    validBefore: String(o.validBefore ?? now + req.maxTimeoutSeconds),
    nonce: o.nonce ?? (`0x${randomBytes(32).toString('hex')}` as `0x${string}`),
  }
  const signature = await account.signTypedData({
    domain: {
      name: req.extra.name,
      version: req.extra.version,
      chainId: o.chainId ?? Number(req.network.split(':')[1]),
      verifyingContract: o.verifyingContract ?? (req.asset as `0x${string}`),
    },
    types: { TransferWithAuthorization: eip3009Types.TransferWithAuthorization },
    primaryType: 'TransferWithAuthorization',
    message: {
      ...authorization,
      value: BigInt(authorization.value),
      validAfter: BigInt(authorization.validAfter),
      validBefore: BigInt(authorization.validBefore),
    },
  })
  return { signature, authorization }
}

export function v2Header(
  required: Challenge['v2'],
  payload: { signature: string; authorization: object },
  accepted?: object,
): string {
  return Buffer.from(
    JSON.stringify({ x402Version: 2, resource: required.resource, accepted: accepted ?? required.accepts[0], payload }),
  ).toString('base64')
}

export function v1Header(network: string, payload: { signature: string; authorization: object }): string {
  return Buffer.from(JSON.stringify({ x402Version: 1, scheme: 'exact', network, payload })).toString('base64')
}
