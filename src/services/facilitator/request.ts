/**
 * The body of the standard facilitator calls `POST /verify` and `POST /settle`, as
 * `HTTPFacilitatorClient` of @x402/core sends it: `{ x402Version, paymentPayload,
 * paymentRequirements }` (x402 v2). Read strictly: a body that is not that shape is the caller's
 * mistake (400 with the spec's `invalid_payload` / `invalid_payment_requirements` /
 * `invalid_x402_version` and a sentence naming the field); whether the payment is good is the
 * scheme's question (./exact.ts).
 */
import { isAddress } from 'viem'
import type { Config } from '../../config.js'
import type { PaymentTerms } from '../../x402/challenge.js'
import { decodeFacilitatorPayload, type PaymentEnvelope } from '../../x402/decode-payment.js'
import { refuse, type Refusal } from '../../x402/reasons.js'
import type { NetworkV1, NetworkV2, PaymentRequirementsV2 } from '../../x402/types.js'

/** the size budget of a paymentPayload (JSON), as a PAYMENT-SIGNATURE header's */
const MAX_PAYLOAD_BYTES = 16_384
const UINT_RE = /^(?:0|[1-9][0-9]{0,77})$/
const REQUIREMENT_KEYS = new Set(['scheme', 'network', 'amount', 'asset', 'payTo', 'maxTimeoutSeconds', 'extra'])

export interface FacilitatorCall {
  envelope: Extract<PaymentEnvelope, { version: 2 }>
  requirements: PaymentRequirementsV2
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype

const bad = (detail: string) => refuse('invalid_payment_requirements', `paymentRequirements.${detail}`)

function readRequirements(v: unknown): PaymentRequirementsV2 | Refusal {
  if (!isObject(v)) return refuse('invalid_payment_requirements', 'paymentRequirements must be an object')
  for (const k of Object.keys(v)) if (!REQUIREMENT_KEYS.has(k)) return bad(`${k.slice(0, 40)} is not a field of it`)
  if (typeof v.scheme !== 'string' || v.scheme === '') return bad('scheme must be a string')
  if (typeof v.network !== 'string' || v.network === '') return bad('network must be a string')
  if (typeof v.amount !== 'string' || !UINT_RE.test(v.amount)) return bad('amount must be a decimal integer string')
  if (typeof v.asset !== 'string' || !isAddress(v.asset, { strict: false })) return bad('asset must be a 0x address')
  if (typeof v.payTo !== 'string' || !isAddress(v.payTo, { strict: false })) return bad('payTo must be a 0x address')
  const t = v.maxTimeoutSeconds
  // 0: a batch-settlement server's claim and settle requirement (its channel manager's)
  if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t > 31_536_000)
    return bad('maxTimeoutSeconds must be a non-negative integer of seconds')
  if (v.extra !== undefined && !isObject(v.extra)) return bad('extra must be an object')
  return v as unknown as PaymentRequirementsV2
}

/**
 * The envelope of `paymentPayload` (its scheme's own `payload` still unread) and the requirements,
 * or the refusal to answer with 400.
 */
export function readFacilitatorCall(body: unknown): FacilitatorCall | Refusal {
  if (!isObject(body)) return refuse('invalid_payload', 'the body must be a JSON object')
  if (body.x402Version !== 2)
    return refuse('invalid_x402_version', 'this facilitator takes x402Version 2 (the v2 PaymentPayload)')
  if (body.paymentPayload === undefined) return refuse('invalid_payload', 'paymentPayload is required')
  const requirements = readRequirements(body.paymentRequirements)
  if ('ok' in requirements) return requirements
  // the envelope reader of a parsed v2 PaymentPayload (MCP's `_meta` carries the same object)
  const envelope = decodeFacilitatorPayload(body.paymentPayload, MAX_PAYLOAD_BYTES)
  if (!envelope.ok) return envelope
  if (envelope.version !== 2) return refuse('invalid_x402_version')
  return { envelope, requirements }
}

/** The terms `verifyRequirements` checks a payment against, from the seller's requirements. */
export function termsOf(r: PaymentRequirementsV2, config: Pick<Config, 'chain'>): PaymentTerms {
  const extra = (r.extra ?? {}) as Record<string, unknown>
  return {
    amount: BigInt(r.amount),
    payTo: r.payTo.toLowerCase() as `0x${string}`,
    asset: r.asset.toLowerCase() as `0x${string}`,
    networkV1: config.chain.network as NetworkV1,
    networkV2: r.network as NetworkV2,
    chainId: config.chain.chainId,
    token: {
      name: typeof extra.name === 'string' ? extra.name : config.chain.usdc.name,
      version: typeof extra.version === 'string' ? extra.version : config.chain.usdc.version,
    },
    maxTimeoutSeconds: r.maxTimeoutSeconds,
  }
}
