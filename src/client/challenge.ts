/**
 * Reads a 402 challenge as a buyer: the v1 JSON body (`{x402Version:1, accepts}`) or the v2
 * `PAYMENT-REQUIRED` header (base64 JSON), into one normalized list of requirements. Shared by
 * the platform's agent payment API, the fetch wrapper and the CLI.
 */
import type { ResourceInfo } from '../x402/types.js'

export class ChallengeError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ChallengeError'
  }
}

export interface Requirement {
  version: 1 | 2
  scheme: string
  /** as sent: `base-sepolia` (v1) or `eip155:84532` (v2) */
  network: string
  /** undefined when the network is not one we know */
  chainId: number | undefined
  amount: bigint
  asset: string
  payTo: string
  maxTimeoutSeconds: number
  /** EIP-712 token name/version, when the server sent them */
  extra: { name: string; version: string } | undefined
  /** v1: per requirement; v2: the challenge resource */
  resourceUrl: string | undefined
  description: string | undefined
  mimeType: string | undefined
  /** the endpoint's input description (v1 outputSchema.input, v2 extensions.bazaar) */
  inputSchema: unknown
  /** the requirement verbatim: v2 clients echo it back as `accepted` */
  raw: Record<string, unknown>
}

export interface ParsedChallenge {
  version: 1 | 2
  resource: ResourceInfo | undefined
  extensions: Record<string, unknown> | undefined
  accepts: Requirement[]
}

/** Longest challenge we read (a v2 header with discovery extensions is a few KB). */
export const MAX_CHALLENGE_BYTES = 32 * 1024
const V1_CHAIN_IDS: Record<string, number> = { base: 8453, 'base-sepolia': 84532 }
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/
const UINT_RE = /^(?:0|[1-9][0-9]{0,76})$/

/**
 * @example
 *   parseChallenge(res.headers.get('payment-required') ?? await res.json())
 */
export function parseChallenge(input: unknown): ParsedChallenge {
  let obj: unknown = input
  if (typeof input === 'string') {
    if (input.length > MAX_CHALLENGE_BYTES)
      throw new ChallengeError(`the challenge is larger than ${MAX_CHALLENGE_BYTES} bytes`)
    try {
      obj = JSON.parse(Buffer.from(input, 'base64').toString('utf8'))
    } catch {
      throw new ChallengeError(
        'the challenge string is not base64 of JSON (expected the PAYMENT-REQUIRED header value)',
      )
    }
  }
  if (!isObject(obj))
    throw new ChallengeError('the challenge must be the v1 402 body object or the v2 PAYMENT-REQUIRED header string')
  const version = obj.x402Version
  if (version !== 1 && version !== 2) throw new ChallengeError('x402Version must be 1 or 2')
  if (!Array.isArray(obj.accepts) || obj.accepts.length === 0 || obj.accepts.length > 32)
    throw new ChallengeError('accepts must be a non-empty array of at most 32 requirements')
  let resource: ResourceInfo | undefined
  if (version === 2) {
    if (!isObject(obj.resource) || typeof obj.resource.url !== 'string')
      throw new ChallengeError('a v2 challenge needs resource.url')
    resource = obj.resource as unknown as ResourceInfo
  }
  const extensions = version === 2 && isObject(obj.extensions) ? obj.extensions : undefined
  const accepts = obj.accepts.map((r, i) => readRequirement(r, i, version, resource, extensions))
  return { version, resource, extensions, accepts }
}

function readRequirement(
  r: unknown,
  i: number,
  version: 1 | 2,
  resource: ResourceInfo | undefined,
  extensions: Record<string, unknown> | undefined,
): Requirement {
  const bad = (what: string) => new ChallengeError(`accepts[${i}].${what}`)
  if (!isObject(r)) throw bad('must be an object')
  const amount = version === 1 ? r.maxAmountRequired : r.amount
  if (typeof amount !== 'string' || !UINT_RE.test(amount))
    throw bad(`${version === 1 ? 'maxAmountRequired' : 'amount'} must be a decimal integer string`)
  if (typeof r.scheme !== 'string') throw bad('scheme must be a string')
  if (typeof r.network !== 'string' || r.network.length > 64) throw bad('network must be a string')
  if (typeof r.payTo !== 'string' || !ADDRESS_RE.test(r.payTo)) throw bad('payTo must be an address')
  if (typeof r.asset !== 'string' || r.asset.length > 128) throw bad('asset must be a string')
  const t = r.maxTimeoutSeconds
  if (typeof t !== 'number' || !Number.isSafeInteger(t) || t <= 0)
    throw bad('maxTimeoutSeconds must be a positive integer')
  const extra =
    isObject(r.extra) && typeof r.extra.name === 'string' && typeof r.extra.version === 'string'
      ? { name: r.extra.name, version: r.extra.version }
      : undefined
  const resourceUrl = version === 1 ? (typeof r.resource === 'string' ? r.resource : undefined) : resource?.url
  const v2net = /^eip155:([0-9]{1,12})$/.exec(r.network)
  const chainId = version === 1 ? V1_CHAIN_IDS[r.network] : v2net ? Number(v2net[1]) : undefined
  const input1 = isObject(r.outputSchema) ? r.outputSchema.input : undefined
  const bazaar = extensions && isObject(extensions.bazaar) ? extensions.bazaar : undefined
  return {
    version,
    scheme: r.scheme,
    network: r.network,
    chainId,
    amount: BigInt(amount),
    asset: r.asset,
    payTo: r.payTo,
    maxTimeoutSeconds: t,
    extra,
    resourceUrl,
    description: typeof r.description === 'string' ? r.description : resource?.description,
    mimeType: typeof r.mimeType === 'string' ? r.mimeType : resource?.mimeType,
    inputSchema: version === 1 ? input1 : bazaarInput(bazaar),
    raw: r,
  }
}

/**
 * The input a v2 challenge's Bazaar extension declares, shaped like v1's `outputSchema.input`:
 * its `info.input` (type, method) with the query or body schema from `schema` in place of the
 * example values; `info` or `schema` alone when the other is missing.
 */
function bazaarInput(bazaar: Record<string, unknown> | undefined): unknown {
  if (!bazaar) return undefined
  const info = isObject(bazaar.info) && isObject(bazaar.info.input) ? bazaar.info.input : undefined
  const schema = isObject(bazaar.schema) ? bazaar.schema : undefined
  const input =
    schema && isObject(schema.properties) && isObject(schema.properties.input) ? schema.properties.input : undefined
  const props = input && isObject(input.properties) ? input.properties : undefined
  const field =
    props && isObject(props.queryParams) ? 'queryParams' : props && isObject(props.body) ? 'body' : undefined
  if (!field) return info ?? schema
  return { ...(info ?? {}), [field]: props![field] }
}

/** One challenge a 402 offers, parsed, with the value it was read from (sent on to the platform as is). */
export interface OfferedChallenge {
  parsed: ParsedChallenge
  /** the v1 body object or the v2 `PAYMENT-REQUIRED` header string */
  raw: unknown
}

/**
 * Every readable challenge of a 402, v1 first: spec 4.4 has the client library pay with
 * `X-PAYMENT`, so a v1 requirement is paid before a v2 one; v2 (`PAYMENT-SIGNATURE`) is for servers
 * that offer v2 alone, and for those whose v2 challenge declares `payment-identifier` (Tollgate's
 * proxy): only a v2 payment carries the id that makes a retry after a lost answer safe, so that one
 * comes first. Unreadable values are skipped (an `@x402/express` 402 has a `{}` body).
 *
 * @example
 *   const offered = offeredChallenges(res.headers.get('payment-required'), await res.json().catch(() => undefined))
 */
export function offeredChallenges(header: string | null | undefined, body: unknown): OfferedChallenge[] {
  const out: OfferedChallenge[] = []
  for (const raw of [body, header]) {
    if (raw === null || raw === undefined) continue
    try {
      out.push({ parsed: parseChallenge(raw), raw })
    } catch (err) {
      if (!(err instanceof ChallengeError)) throw err
    }
  }
  const rank = (c: OfferedChallenge) =>
    c.parsed.version === 2 && isObject(c.parsed.extensions?.['payment-identifier']) ? 0 : c.parsed.version
  return out.sort((a, b) => rank(a) - rank(b))
}

/** True when `called` is the challenge's resource (same origin and path; query and fragment ignored). */
export function sameResource(called: string, resourceUrl: string | undefined): boolean {
  if (resourceUrl === undefined) return true
  try {
    const a = new URL(called)
    const b = new URL(resourceUrl)
    return a.origin === b.origin && a.pathname.replace(/\/+$/, '') === b.pathname.replace(/\/+$/, '')
  } catch {
    return false
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
