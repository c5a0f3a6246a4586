/**
 * The x402 v2 `sign-in-with-x` extension (specs/extensions/sign-in-with-x.md; the names, fields and
 * message format of `@x402/extensions/sign-in-with-x`): a 402 declares it in `extensions` with a
 * fresh challenge (`info`: domain, uri, nonce, issuedAt, ...) and the chains it accepts; a buyer
 * who already paid signs the challenge as a CAIP-122 / EIP-4361 (SIWE) message and sends the
 * proof, base64 JSON, in the `SIGN-IN-WITH-X` header instead of paying again.
 *
 * This module is the wire codec: the declaration, the header's payload, the message text that is
 * signed, and the checks of the message's fields (binding, validity window). Signature recovery and
 * "has this wallet paid" are the proxy's (proxy/paid-call/sign-in.ts).
 */
import { randomBytes } from 'node:crypto'
import { getAddress } from 'viem'
import type { ReasonCode } from './reasons.js'

/** The extension's key in `extensions`, and its request header (headers are case-insensitive). */
export const SIGN_IN_WITH_X = 'sign-in-with-x'
export const SIGN_IN_HEADER = 'SIGN-IN-WITH-X'
/** How old a signed message's `issuedAt` may be (the official server's default). */
export const SIGN_IN_MAX_AGE_MS = 5 * 60_000
/** How long a challenge's `expirationTime` lies ahead of its `issuedAt` (the spec's default). */
export const SIGN_IN_EXPIRATION_SECONDS = 300
/** How far ahead of this clock `issuedAt` and `notBefore` may lie: proxies behind one load balancer issue and check challenges on different clocks. */
export const SIGN_IN_CLOCK_SKEW_MS = 5_000
/** The largest header accepted (a payload with a few resources and an ERC-6492 signature fits). */
export const SIGN_IN_HEADER_MAX_BYTES = 16_384

const SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    domain: { type: 'string' },
    address: { type: 'string' },
    statement: { type: 'string' },
    uri: { type: 'string', format: 'uri' },
    version: { type: 'string' },
    chainId: { type: 'string' },
    type: { type: 'string' },
    nonce: { type: 'string' },
    issuedAt: { type: 'string', format: 'date-time' },
    expirationTime: { type: 'string', format: 'date-time' },
    notBefore: { type: 'string', format: 'date-time' },
    requestId: { type: 'string' },
    resources: { type: 'array', items: { type: 'string', format: 'uri' } },
    signature: { type: 'string' },
  },
  required: ['domain', 'address', 'uri', 'version', 'chainId', 'type', 'nonce', 'issuedAt', 'signature'],
} as const

/** What a challenge states that does not change between 402s. */
export interface SignInTerms {
  /** the public origin's host (`api.example.com`, with the port when there is one) */
  domain: string
  /** the resource's absolute URL */
  uri: string
  statement: string
  /** CAIP-2 ids of the EVM chains whose wallets may sign in */
  chainIds: readonly string[]
}

export interface SignInInfo {
  domain: string
  uri: string
  version: string
  nonce: string
  issuedAt: string
  expirationTime?: string
  notBefore?: string
  requestId?: string
  statement?: string
  resources?: string[]
}

export interface SignInDeclaration {
  info: SignInInfo
  supportedChains: { chainId: string; type: 'eip191' }[]
  schema: typeof SCHEMA
}

/** The signed proof a buyer sends (the header's JSON). */
export interface SignInPayload extends SignInInfo {
  address: string
  chainId: string
  type: string
  signatureScheme?: string
  signature: string
}

/**
 * A fresh declaration for one 402: a new 32-hex nonce and `issuedAt` now, as the official server
 * enriches its declaration per response.
 */
export function signInDeclaration(terms: SignInTerms, nowMs = Date.now()): SignInDeclaration {
  return {
    info: {
      domain: terms.domain,
      uri: terms.uri,
      version: '1',
      nonce: randomBytes(16).toString('hex'),
      issuedAt: new Date(nowMs).toISOString(),
      expirationTime: new Date(nowMs + SIGN_IN_EXPIRATION_SECONDS * 1000).toISOString(),
      statement: terms.statement,
      resources: [terms.uri],
    },
    supportedChains: terms.chainIds.map((chainId) => ({ chainId, type: 'eip191' as const })),
    schema: SCHEMA,
  }
}

/** A string field of the message: one line, bounded. */
const LINE_RE = /^[^\r\n]{1,2048}$/
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/
// EIP-4361: at least 8 alphanumeric characters
const NONCE_RE = /^[a-zA-Z0-9]{8,128}$/
const STRING_FIELDS = ['domain', 'address', 'uri', 'version', 'chainId', 'type', 'nonce', 'issuedAt', 'signature']
const OPTIONAL_FIELDS = ['statement', 'expirationTime', 'notBefore', 'requestId', 'signatureScheme']

/**
 * The header's payload, or what is wrong with it (a malformed header: not base64, not JSON, a
 * required field missing, a field that would not fit on its line of the message).
 *
 * @example
 *   const p = parseSignInHeader(req.headers['sign-in-with-x'])
 *   if (!p.ok) return refuse('invalid_siwx_header', p.detail)
 */
export function parseSignInHeader(
  header: string,
): { ok: true; payload: SignInPayload } | { ok: false; detail: string } {
  if (header.length > SIGN_IN_HEADER_MAX_BYTES)
    return { ok: false, detail: `larger than ${SIGN_IN_HEADER_MAX_BYTES} bytes` }
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(header.trim())) return { ok: false, detail: 'not base64' }
  let raw: unknown
  try {
    raw = JSON.parse(Buffer.from(header.trim(), 'base64').toString('utf8'))
  } catch {
    return { ok: false, detail: 'not base64 of a JSON object' }
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { ok: false, detail: 'not a JSON object' }
  const o = raw as Record<string, unknown>
  for (const f of STRING_FIELDS) {
    if (typeof o[f] !== 'string') return { ok: false, detail: `${f} must be a string` }
    if (f !== 'signature' && !LINE_RE.test(o[f])) return { ok: false, detail: `${f} must be one line of text` }
  }
  for (const f of OPTIONAL_FIELDS) {
    if (o[f] === undefined) continue
    if (typeof o[f] !== 'string' || !LINE_RE.test(o[f])) return { ok: false, detail: `${f} must be one line of text` }
  }
  if (o.resources !== undefined) {
    if (
      !Array.isArray(o.resources) ||
      o.resources.length > 32 ||
      o.resources.some((r) => typeof r !== 'string' || !LINE_RE.test(r))
    )
      return { ok: false, detail: 'resources must be an array of at most 32 URIs' }
  }
  if (!ADDRESS_RE.test(o.address as string))
    return { ok: false, detail: 'address must be a 0x-prefixed 20-byte hex address' }
  if (!NONCE_RE.test(o.nonce as string)) return { ok: false, detail: 'nonce must be 8-128 letters and digits' }
  return { ok: true, payload: o as unknown as SignInPayload }
}

/**
 * The EIP-4361 message a payload's signature is over, as `@x402/extensions` builds it (through the
 * `siwe` library's `prepareMessage`): the address checksummed, the chain id's number.
 */
export function signInMessage(p: SignInPayload): string {
  const chain = /^eip155:(\d{1,18})$/.exec(p.chainId)
  if (!chain) throw new Error(`not an EVM chain id: ${p.chainId}`)
  const head = `${p.domain} wants you to sign in with your Ethereum account:\n${getAddress(p.address.toLowerCase())}`
  const lines = [`URI: ${p.uri}`, `Version: ${p.version}`, `Chain ID: ${Number(chain[1])}`, `Nonce: ${p.nonce}`]
  lines.push(`Issued At: ${p.issuedAt}`)
  if (p.expirationTime) lines.push(`Expiration Time: ${p.expirationTime}`)
  if (p.notBefore) lines.push(`Not Before: ${p.notBefore}`)
  if (p.requestId !== undefined) lines.push(`Request ID: ${p.requestId}`)
  if (p.resources) lines.push(['Resources:', ...p.resources.map((r) => `- ${r}`)].join('\n'))
  const top = p.statement === undefined ? `${head}\n\n` : `${head}\n\n${p.statement}\n`
  return `${top}\n${lines.join('\n')}`
}

/** The checksum of a mixed-case address must hold (the `siwe` library refuses it otherwise). */
export function addressChecksumHolds(address: string): boolean {
  const body = address.slice(2)
  if (body === body.toLowerCase() || body === body.toUpperCase()) return true
  return getAddress(address.toLowerCase()) === address
}

/**
 * The payload's fields against what this endpoint's challenge states, in the official server's
 * order (validateSIWxMessage), plus the resource binding and the chain: undefined when they hold,
 * else the extension's reason code and a message.
 */
export function checkSignInFields(
  p: SignInPayload,
  terms: SignInTerms,
  nowMs: number,
): { reason: ReasonCode; detail: string } | undefined {
  if (p.domain !== terms.domain)
    return { reason: 'invalid_siwx_domain_mismatch', detail: `expected "${terms.domain}", got "${p.domain}"` }
  let uri: URL
  try {
    uri = new URL(p.uri)
  } catch {
    return { reason: 'invalid_siwx_uri_mismatch', detail: `"${p.uri}" is not a URL` }
  }
  const expected = new URL(terms.uri)
  if (uri.origin !== expected.origin || uri.pathname !== expected.pathname)
    return { reason: 'invalid_siwx_uri_mismatch', detail: `expected "${terms.uri}", got "${p.uri}"` }
  const issuedAt = Date.parse(p.issuedAt)
  if (Number.isNaN(issuedAt)) return { reason: 'invalid_siwx_issued_at', detail: 'issuedAt is not a date' }
  if (nowMs - issuedAt > SIGN_IN_MAX_AGE_MS)
    return { reason: 'invalid_siwx_issued_at_too_old', detail: `issued more than ${SIGN_IN_MAX_AGE_MS / 1000} s ago` }
  if (issuedAt > nowMs + SIGN_IN_CLOCK_SKEW_MS)
    return { reason: 'invalid_siwx_issued_at_in_future', detail: 'issuedAt is in the future' }
  if (p.expirationTime !== undefined) {
    const exp = Date.parse(p.expirationTime)
    if (Number.isNaN(exp)) return { reason: 'invalid_siwx_expiration_time', detail: 'expirationTime is not a date' }
    if (exp < nowMs) return { reason: 'invalid_siwx_expired', detail: `expired at ${p.expirationTime}` }
  }
  if (p.notBefore !== undefined) {
    const nb = Date.parse(p.notBefore)
    if (Number.isNaN(nb)) return { reason: 'invalid_siwx_not_before', detail: 'notBefore is not a date' }
    if (nowMs + SIGN_IN_CLOCK_SKEW_MS < nb)
      return { reason: 'invalid_siwx_not_yet_valid', detail: `not valid before ${p.notBefore}` }
  }
  if (!/^eip155:\d{1,18}$/.test(p.chainId))
    return p.chainId.startsWith('eip155:')
      ? { reason: 'invalid_siwx_chain_id', detail: `"${p.chainId}" is not eip155:<number>` }
      : { reason: 'invalid_siwx_unsupported_chain', detail: `"${p.chainId}": sign in with an EVM wallet` }
  if (!terms.chainIds.includes(p.chainId))
    return {
      reason: 'invalid_siwx_unsupported_chain',
      detail: `"${p.chainId}" is not accepted here; use ${terms.chainIds.join(' or ')}`,
    }
  return undefined
}
