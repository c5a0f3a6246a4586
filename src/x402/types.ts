/**
 * x402 wire types, v1 (`X-PAYMENT`, JSON 402 body) and v2 (`PAYMENT-REQUIRED` /
 * `PAYMENT-SIGNATURE` / `PAYMENT-RESPONSE` headers), for the `exact` scheme on EVM with
 * EIP-3009 `transferWithAuthorization`.
 *
 * Field names follow coinbase/x402 `typescript/packages/core/src/types` (v2, v1) and the
 * legacy `x402` package schemas, which are what the official clients parse.
 */

export type HexString = `0x${string}`

/** v1 network names we serve (legacy x402 `NetworkSchema` values). */
export type NetworkV1 = 'base' | 'base-sepolia'

/** v2 network ids, CAIP-2 (`eip155:<chainId>`). */
export type NetworkV2 = `eip155:${number}`

export type HttpMethod = 'GET' | 'HEAD' | 'DELETE' | 'POST' | 'PUT' | 'PATCH' | 'OPTIONS'

/** EIP-712 domain name and version of the token; the client signs with these. */
export interface TokenEip712Info {
  name: string
  version: string
}

/**
 * v1 `outputSchema` as the legacy middleware sends it (it is a request structure, not an
 * output schema): `{ input: { type: 'http', method, discoverable, ... }, output }`.
 */
export interface OutputSchemaV1 {
  input: {
    type: 'http'
    method: HttpMethod
    discoverable: boolean
    queryParams?: Record<string, unknown>
    bodyType?: 'json'
    bodyFields?: Record<string, unknown>
  }
  output?: Record<string, unknown>
}

/** One entry of a v1 402 body's `accepts`. */
export interface PaymentRequirementsV1 {
  scheme: 'exact'
  network: NetworkV1
  /** atomic units, decimal string */
  maxAmountRequired: string
  /** absolute URL of the resource */
  resource: string
  description: string
  mimeType: string
  payTo: string
  maxTimeoutSeconds: number
  asset: string
  outputSchema?: OutputSchemaV1
  extra: TokenEip712Info
}

/** v1 402 body. */
export interface PaymentRequiredV1 {
  x402Version: 1
  error: string
  /** ours: the human message for a refusal reason in `error` */
  message?: string
  accepts: PaymentRequirementsV1[]
}

export interface ResourceInfo {
  url: string
  description?: string
  mimeType?: string
}

/** One entry of a v2 `PaymentRequired.accepts`; the client echoes it verbatim as `accepted`. */
export interface PaymentRequirementsV2 {
  /** `exact`, or another scheme an endpoint offers beside it (src/schemes/names.ts) */
  scheme: string
  network: NetworkV2
  /** atomic units, decimal string */
  amount: string
  asset: string
  payTo: string
  maxTimeoutSeconds: number
  /** the token's EIP-712 name and version; other schemes add their own fields (deferred: escrow, voucherStorage, ...) */
  extra: TokenEip712Info & Record<string, unknown>
}

/** v2 `PAYMENT-REQUIRED` header object (base64 of its JSON). */
export interface PaymentRequiredV2 {
  x402Version: 2
  error?: string
  resource: ResourceInfo
  accepts: PaymentRequirementsV2[]
  /** e.g. `bazaar` discovery info; clients echo these back in the payment payload */
  extensions?: Record<string, unknown>
}

/** EIP-3009 authorization as sent on the wire: decimal strings and 0x-hex. */
export interface ExactEvmAuthorization {
  from: HexString
  to: HexString
  value: string
  validAfter: string
  validBefore: string
  /** 32 bytes */
  nonce: HexString
}

export interface ExactEvmPayload {
  signature: HexString
  authorization: ExactEvmAuthorization
}

/** v1 `X-PAYMENT` header object. */
export interface PaymentPayloadV1 {
  x402Version: 1
  scheme: string
  network: string
  payload: ExactEvmPayload
}

/**
 * The `accepted` requirements of a v2 payload as decoded: shape-checked, not yet compared
 * with what we issued (verify-requirements does that).
 */
export interface AcceptedRequirementsV2 {
  scheme: string
  network: string
  amount: string
  asset: string
  payTo: string
  maxTimeoutSeconds: number
  extra?: Record<string, unknown>
  [key: string]: unknown
}

/** v2 `PAYMENT-SIGNATURE` header object. */
export interface PaymentPayloadV2 {
  x402Version: 2
  resource?: ResourceInfo
  accepted: AcceptedRequirementsV2
  payload: ExactEvmPayload
  extensions?: Record<string, unknown>
}

export type PaymentPayload = PaymentPayloadV1 | PaymentPayloadV2

/**
 * `PAYMENT-RESPONSE` (v2) / `X-PAYMENT-RESPONSE` (v1) object. In async settlement the
 * transaction hash is not known yet when the response leaves: `transaction` is then '' and
 * the buyer looks the settlement up by `paymentId`.
 */
export interface SettlementResponse {
  success: boolean
  transaction: string
  network: string
  payer: string
  errorReason?: string
  /** ours: the platform's payment id */
  paymentId?: string
  /** `upto`: the amount actually charged (atomic units), as the official upto facilitator reports it */
  amount?: string
  /** scheme-specific (`batch-settlement`: chargedAmount, channelState) */
  extra?: Record<string, unknown>
}

/** Authorization after verification: bigints and lower-case hex. */
export interface NormalizedAuthorization {
  from: HexString
  to: HexString
  value: bigint
  validAfter: bigint
  validBefore: bigint
  nonce: HexString
}
