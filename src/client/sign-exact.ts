/**
 * Signs an x402 `exact` EVM payment (EIP-3009 TransferWithAuthorization) with the native
 * secp256k1 binding over our own EIP-712 digest: ~20x faster than viem's signTypedData, which
 * matters on the agent payment hot path. test/integration/buyer/settles.test.ts checks the result with
 * the proxy's verifier and on chain.
 */
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { makeDomainSeparator, transferAuthDigest } from '../chain/transfer-auth-digest.js'
import { PAYMENT_IDENTIFIER } from '../x402/payment-identifier.js'
import type { ExactEvmPayload, HexString } from '../x402/types.js'
import type { ParsedChallenge, Requirement } from './challenge.js'

const secp = createRequire(import.meta.url)('secp256k1') as {
  ecdsaSign(msg: Uint8Array, key: Uint8Array): { signature: Uint8Array; recid: number }
}
const domains = new Map<string, Uint8Array>()

export interface ExactTerms {
  chainId: number
  asset: string
  token: { name: string; version: string }
  payTo: string
  amount: bigint
  maxTimeoutSeconds: number
}

/**
 * validAfter = now - 600 and validBefore = now + maxTimeoutSeconds, as the official clients do.
 *
 * @example
 *   const payload = signExact(keyBytes, from, terms, Math.floor(Date.now() / 1000))
 */
export function signExact(privateKey: Uint8Array, from: string, t: ExactTerms, nowSeconds: number): ExactEvmPayload {
  const dk = `${t.chainId}:${t.asset.toLowerCase()}:${t.token.name}:${t.token.version}`
  let ds = domains.get(dk)
  if (!ds) {
    ds = makeDomainSeparator({
      name: t.token.name,
      version: t.token.version,
      chainId: t.chainId,
      verifyingContract: t.asset,
    })
    domains.set(dk, ds)
  }
  const auth = {
    from,
    to: t.payTo,
    value: t.amount,
    validAfter: BigInt(nowSeconds - 600),
    validBefore: BigInt(nowSeconds + t.maxTimeoutSeconds),
    nonce: `0x${randomBytes(32).toString('hex')}`,
  }
  const { signature, recid } = secp.ecdsaSign(transferAuthDigest(ds, auth), privateKey)
  return {
    signature: `0x${Buffer.from(signature).toString('hex')}${(27 + recid).toString(16)}` as HexString,
    authorization: {
      from: from as HexString,
      to: t.payTo as HexString,
      value: String(auth.value),
      validAfter: String(auth.validAfter),
      validBefore: String(auth.validBefore),
      nonce: auth.nonce as HexString,
    },
  }
}

/**
 * The retry header for a signed payment (an `exact` authorization or a `deferred` voucher):
 * `X-PAYMENT` (v1) or `PAYMENT-SIGNATURE` (v2, echoing the requirement verbatim). A v2 challenge
 * that declares `payment-identifier` gets `paymentId` in the echoed declaration's `info.id` (x402
 * safe retries); v1 has no extensions to carry it.
 */
export function paymentHeader(
  ch: ParsedChallenge,
  req: Requirement,
  payload: ExactEvmPayload | Record<string, unknown>,
  paymentId?: string,
): { header: 'X-PAYMENT' | 'PAYMENT-SIGNATURE'; value: string; paymentId?: string } {
  if (req.version === 1) {
    return {
      header: 'X-PAYMENT',
      value: Buffer.from(
        JSON.stringify({ x402Version: 1, scheme: req.scheme, network: req.network, payload }),
      ).toString('base64'),
    }
  }
  const body: Record<string, unknown> = { x402Version: 2, resource: ch.resource, accepted: req.raw, payload }
  let extensions = ch.extensions
  const declared = extensions?.[PAYMENT_IDENTIFIER]
  const carried = paymentId !== undefined && declaresPaymentIdentifier(ch)
  if (carried)
    extensions = {
      ...extensions,
      [PAYMENT_IDENTIFIER]: {
        ...(declared as object),
        info: { ...(declared as { info: object }).info, id: paymentId },
      },
    }
  if (extensions !== undefined) body.extensions = extensions
  return {
    header: 'PAYMENT-SIGNATURE',
    value: Buffer.from(JSON.stringify(body)).toString('base64'),
    ...(carried ? { paymentId } : {}),
  }
}

/** The challenge is v2 and declares the `payment-identifier` extension (an object with `info`). */
export function declaresPaymentIdentifier(ch: ParsedChallenge): boolean {
  const declared = ch.extensions?.[PAYMENT_IDENTIFIER] as { info?: unknown } | undefined
  return (
    ch.version === 2 &&
    typeof declared === 'object' &&
    declared !== null &&
    typeof declared.info === 'object' &&
    declared.info !== null &&
    !Array.isArray(declared.info)
  )
}

/** A new `payment-identifier`: `pay_` and 32 hex digits, as the extension recommends. */
export function newPaymentId(): string {
  return `pay_${randomBytes(16).toString('hex')}`
}
