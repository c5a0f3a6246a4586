import { decryptSecret, encryptSecret, reencryptSecret } from '../../secrets/wallet-crypto.js'
import { invalid } from '../accounts/validate.js'

/**
 * What `endpoints.upstream_config` holds (jsonb). Secret values (forwarded header values, the
 * signing secret) are AES-GCM envelopes bound to the endpoint id and their role.
 */
export interface StoredUpstreamConfig {
  version: 1
  forward_headers: Array<{ name: string; value: string }>
  required_headers: string[]
  timeout_ms: number
  rate_limit: { requests: number; per_seconds: number } | null
  signing_secret: string
}

/** The decrypted form the proxy forwards with (matches src/proxy/upstream.ts UpstreamOptions). */
export interface UpstreamSettings {
  timeoutMs: number
  headers: Record<string, string>
  signingSecret: string
  requiredHeaders: string[]
  rateLimit: { requests: number; perSeconds: number } | undefined
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/
// Headers a seller may not set or require: they belong to HTTP, to x402 or to Tollgate.
const RESERVED = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'x-payment',
  'payment-signature',
  'x-payment-response',
  'payment-response',
  'x-tollgate-signature',
  'x-tollgate-payment-id',
])
export const DEFAULT_UPSTREAM_TIMEOUT_MS = 10_000
/** The longest `timeout_ms` a seller may set; the settlement sweep waits past it before voiding. */
export const MAX_UPSTREAM_TIMEOUT_MS = 60_000

const headerAad = (endpointId: string, name: string) => `endpoint:${endpointId}:header:${name}`
const signingAad = (endpointId: string) => `endpoint:${endpointId}:signing_secret`

export interface UpstreamInput {
  forward_headers?: unknown
  required_headers?: unknown
  timeout_ms?: unknown
  rate_limit?: unknown
}

/** Validates the seller's input and encrypts the secret values. `previous` keeps what the input leaves out. */
export function buildUpstreamConfig(
  masterKey: Buffer,
  endpointId: string,
  input: UpstreamInput,
  signingSecret: string | undefined,
  previous?: StoredUpstreamConfig,
): StoredUpstreamConfig {
  let forward = previous?.forward_headers ?? []
  if (input.forward_headers !== undefined) {
    const fh = input.forward_headers
    if (typeof fh !== 'object' || fh === null || Array.isArray(fh))
      throw invalid('upstream.forward_headers', 'expected an object of header name to value')
    forward = Object.entries(fh as Record<string, unknown>).map(([name, value]) => {
      const n = name.toLowerCase()
      if (!HEADER_NAME.test(n) || RESERVED.has(n))
        throw invalid(`upstream.forward_headers.${name}`, 'not an allowed header name')
      if (typeof value !== 'string' || value.length > 4096 || /[\r\n\0]/.test(value))
        throw invalid(`upstream.forward_headers.${name}`, 'expected a header value string of at most 4096 characters')
      return { name: n, value: encryptSecret(masterKey, value, headerAad(endpointId, n)) }
    })
    if (forward.length > 20) throw invalid('upstream.forward_headers', 'at most 20 headers')
  }
  let required = previous?.required_headers ?? []
  if (input.required_headers !== undefined) {
    const rh = input.required_headers
    if (
      !Array.isArray(rh) ||
      rh.length > 20 ||
      rh.some((h) => typeof h !== 'string' || !HEADER_NAME.test(h) || RESERVED.has(h.toLowerCase()))
    ) {
      throw invalid('upstream.required_headers', 'expected an array of at most 20 header names')
    }
    required = [...new Set(rh.map((h: string) => h.toLowerCase()))]
  }
  let timeout = previous?.timeout_ms ?? DEFAULT_UPSTREAM_TIMEOUT_MS
  if (input.timeout_ms !== undefined) {
    if (
      !Number.isInteger(input.timeout_ms) ||
      (input.timeout_ms as number) < 100 ||
      (input.timeout_ms as number) > MAX_UPSTREAM_TIMEOUT_MS
    )
      throw invalid('upstream.timeout_ms', `expected an integer from 100 to ${MAX_UPSTREAM_TIMEOUT_MS}`)
    timeout = input.timeout_ms as number
  }
  let rateLimit = previous?.rate_limit ?? null
  if (input.rate_limit !== undefined) {
    const rl = input.rate_limit as { requests?: unknown; per_seconds?: unknown } | null
    if (rl === null) rateLimit = null
    else {
      if (
        typeof rl !== 'object' ||
        !Number.isInteger(rl.requests) ||
        (rl.requests as number) < 1 ||
        (rl.requests as number) > 1_000_000
      )
        throw invalid('upstream.rate_limit.requests', 'expected an integer from 1 to 1000000')
      if (!Number.isInteger(rl.per_seconds) || (rl.per_seconds as number) < 1 || (rl.per_seconds as number) > 86_400)
        throw invalid('upstream.rate_limit.per_seconds', 'expected an integer from 1 to 86400')
      rateLimit = { requests: rl.requests as number, per_seconds: rl.per_seconds as number }
    }
  }
  const signing =
    signingSecret !== undefined
      ? encryptSecret(masterKey, signingSecret, signingAad(endpointId))
      : previous?.signing_secret
  if (!signing) throw new Error('an upstream endpoint needs a signing secret')
  return {
    version: 1,
    forward_headers: forward,
    required_headers: required,
    timeout_ms: timeout,
    rate_limit: rateLimit,
    signing_secret: signing,
  }
}

/** For the proxy: the stored config with its secrets decrypted. Never log the result. */
export function decodeUpstreamConfig(
  stored: unknown,
  endpointId: string,
  masterKeys: readonly Buffer[],
): UpstreamSettings {
  const c = stored as StoredUpstreamConfig
  const headers: Record<string, string> = {}
  for (const h of c.forward_headers ?? [])
    headers[h.name] = decryptSecret(masterKeys, h.value, headerAad(endpointId, h.name))
  return {
    timeoutMs: c.timeout_ms ?? DEFAULT_UPSTREAM_TIMEOUT_MS,
    headers,
    signingSecret: decryptSecret(masterKeys, c.signing_secret, signingAad(endpointId)),
    requiredHeaders: c.required_headers ?? [],
    rateLimit: c.rate_limit ? { requests: c.rate_limit.requests, perSeconds: c.rate_limit.per_seconds } : undefined,
  }
}

/** What a response may show: header names, never values. */
export function publicUpstreamConfig(stored: unknown) {
  const c = stored as StoredUpstreamConfig | null
  if (!c) return null
  return {
    forward_headers: c.forward_headers.map((h) => h.name),
    required_headers: c.required_headers,
    timeout_ms: c.timeout_ms,
    rate_limit: c.rate_limit,
    signing_secret_set: Boolean(c.signing_secret),
  }
}

/** Master-key rotation of one endpoint's secrets; undefined when nothing changed. */
export function rotateUpstreamSecrets(
  stored: unknown,
  endpointId: string,
  oldKeys: readonly Buffer[],
  newKey: Buffer,
): StoredUpstreamConfig | undefined {
  const c = stored as StoredUpstreamConfig
  if (!c?.signing_secret) return undefined
  const next: StoredUpstreamConfig = {
    ...c,
    forward_headers: c.forward_headers.map((h) => ({
      name: h.name,
      value: reencryptSecret(oldKeys, newKey, h.value, headerAad(endpointId, h.name)),
    })),
    signing_secret: reencryptSecret(oldKeys, newKey, c.signing_secret, signingAad(endpointId)),
  }
  return JSON.stringify(next) === JSON.stringify(c) ? undefined : next
}
