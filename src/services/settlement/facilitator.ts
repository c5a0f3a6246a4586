import { getAddress, type Hex } from 'viem'
import type { Config } from '../../config.js'
import type { Payment } from '../../db/database.js'

/**
 * The x402 facilitator HTTP API body for /verify and /settle, as `HTTPFacilitatorClient` of
 * @x402/core sends it: `{ x402Version, paymentPayload, paymentRequirements }`.
 */
export interface FacilitatorRequest {
  x402Version: number
  paymentPayload: Record<string, unknown>
  paymentRequirements: Record<string, unknown>
}

/** The facilitator's answer to /settle (SettleResponse of @x402/core). */
export interface FacilitatorSettleResponse {
  success: boolean
  errorReason?: string
  errorMessage?: string
  payer?: string
  transaction: string
  network: string
}

/** What one /settle call told us; `unreachable` means nothing is known (the chain decides later). */
export type FacilitatorOutcome =
  | { kind: 'submitted'; txHash: Hex; response: FacilitatorSettleResponse }
  | { kind: 'refused'; reason: string; response: FacilitatorSettleResponse }
  | { kind: 'unreachable'; error: string }

/**
 * Rebuilds the x402 payload and requirements of a stored payment (v1 or v2 wire shape), so an
 * external facilitator can settle it exactly as the client signed it.
 */
export function facilitatorRequest(p: Payment, config: Pick<Config, 'chain' | 'x402'>): FacilitatorRequest {
  const extra = { name: config.chain.usdc.name, version: config.chain.usdc.version }
  const payload = {
    signature: p.signature,
    authorization: {
      from: getAddress(p.payer),
      to: getAddress(p.pay_to),
      value: String(p.value),
      validAfter: String(p.valid_after),
      validBefore: String(p.valid_before),
      nonce: p.nonce,
    },
  }
  const scheme = p.scheme ?? 'exact'
  if (p.x402_version === 1) {
    // v1 names networks ('base-sepolia'); we store CAIP-2 ids
    const network = p.network === config.chain.caip2 ? config.chain.network : p.network
    const paymentRequirements = {
      scheme,
      network,
      maxAmountRequired: String(p.value),
      resource: p.resource,
      description: '',
      mimeType: '',
      payTo: getAddress(p.pay_to),
      maxTimeoutSeconds: config.x402.maxTimeoutSeconds,
      asset: getAddress(p.asset),
      extra,
    }
    return { x402Version: 1, paymentPayload: { x402Version: 1, scheme, network, payload }, paymentRequirements }
  }
  const paymentRequirements = {
    scheme,
    network: p.network,
    asset: getAddress(p.asset),
    amount: String(p.value),
    payTo: getAddress(p.pay_to),
    maxTimeoutSeconds: config.x402.maxTimeoutSeconds,
    extra,
  }
  return {
    x402Version: p.x402_version,
    paymentPayload: {
      x402Version: p.x402_version,
      resource: { url: p.resource },
      accepted: paymentRequirements,
      payload,
    },
    paymentRequirements,
  }
}

/**
 * A client of an external facilitator's `POST {url}/settle`. Network errors and 5xx answers
 * without a SettleResponse body are `unreachable`: the payment stays `settling` and the
 * authorizationState on chain decides its fate, never a guess.
 *
 * @example
 *   const out = await createFacilitatorClient('https://x402.org/facilitator').settle(payment, config)
 */
export function createFacilitatorClient(url: string, opts: { timeoutMs?: number; fetch?: typeof fetch } = {}) {
  const doFetch = opts.fetch ?? fetch
  const timeoutMs = opts.timeoutMs ?? 60_000
  return {
    url,
    async settle(p: Payment, config: Pick<Config, 'chain' | 'x402'>): Promise<FacilitatorOutcome> {
      let res: Response
      try {
        res = await doFetch(`${url}/settle`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(facilitatorRequest(p, config)),
          signal: AbortSignal.timeout(timeoutMs),
        })
      } catch (err) {
        return { kind: 'unreachable', error: (err as Error).message }
      }
      const text = await res.text()
      let body: Partial<FacilitatorSettleResponse> | undefined
      try {
        body = JSON.parse(text) as Partial<FacilitatorSettleResponse>
      } catch {
        body = undefined
      }
      if (!body || typeof body.success !== 'boolean')
        return { kind: 'unreachable', error: `facilitator answered ${res.status}: ${text.slice(0, 200)}` }
      const response = body as FacilitatorSettleResponse
      if (response.success && /^0x[0-9a-fA-F]{64}$/.test(response.transaction ?? ''))
        return { kind: 'submitted', txHash: response.transaction as Hex, response }
      return { kind: 'refused', reason: response.errorReason ?? 'unexpected_settle_error', response }
    },
  }
}

export type FacilitatorClient = ReturnType<typeof createFacilitatorClient>
