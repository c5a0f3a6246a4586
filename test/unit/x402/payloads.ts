/** Builders of well-formed x402 payment payloads and headers for the decoder and verifier tests. */
import type { Challenge } from '../../../src/x402/challenge.js'

export const NOW = 1_800_000_000

export const FROM = '0x857b06519E91e3A54538791bDbb0E22373e36b66'
export const SIG = `0x${'1b'.repeat(64)}1c`
export const NONCE = `0x${'ab'.repeat(32)}`

export function authorization(ch: Challenge, overrides: Record<string, unknown> = {}) {
  return {
    from: FROM,
    to: ch.requirementsV2.payTo,
    value: ch.requirementsV2.amount,
    validAfter: String(NOW - 600),
    validBefore: String(NOW + ch.terms.maxTimeoutSeconds),
    nonce: NONCE,
    ...overrides,
  }
}

export function v1Payload(
  ch: Challenge,
  authOverrides: Record<string, unknown> = {},
  overrides: Record<string, unknown> = {},
) {
  return {
    x402Version: 1,
    scheme: 'exact',
    network: ch.requirementsV1.network,
    payload: { signature: SIG, authorization: authorization(ch, authOverrides) },
    ...overrides,
  }
}

export function v2Payload(
  ch: Challenge,
  authOverrides: Record<string, unknown> = {},
  overrides: Record<string, unknown> = {},
) {
  return {
    x402Version: 2,
    resource: ch.v2.resource,
    accepted: structuredClone(ch.requirementsV2),
    payload: { signature: SIG, authorization: authorization(ch, authOverrides) },
    ...(ch.v2.extensions ? { extensions: ch.v2.extensions } : {}),
    ...overrides,
  }
}

export const b64 = (v: unknown): string => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64')
