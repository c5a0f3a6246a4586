import { isIP } from 'node:net'
import {
  HTTP_METHODS,
  isFilterNetwork,
  NETWORK_CAIP2,
  networkOfCaip2,
  type EndpointMethod,
  type FilterNetwork,
} from './types.js'

/** A catalog entry or bazaar submission after validation, ready to store. */
export interface ListingInput {
  id?: string
  name: string
  description: string | null
  category: string
  tags: string[]
  url: string | null
  logo_url: string | null
  docs_url: string | null
  platform_agent_address: string | null
  enabled: boolean
  contact: string | null
  endpoints: EndpointInput[]
  skills: SkillInput[]
}

export interface EndpointInput {
  id?: string
  url: string
  methods: EndpointMethod[]
  x402_enabled: boolean
  x402_protocol_version: 1 | 2
  /** always one the marketplace serves: given, or derived from pricing_config.networkCaip2ID */
  network: FilterNetwork
  description: string | null
  enabled: boolean
  amount: string
  currency: string
  network_caip2_id: string
  asset_address: string
  pay_to: string | null
  x402_schema: 'exact' | 'deferred' | null
}

export interface SkillInput {
  id?: string
  name: string
  instructions: unknown
  docs_url: string | null
  skillmd_url: string | null
}

export interface Problem {
  field: string
  reason: string
}

export type ListingMode = 'catalog' | 'bazaar'

/** Limits of one listing; generous for operators, tighter for anonymous submitters. */
const LIMITS = {
  catalog: { endpoints: 100, skills: 20, tags: 20 },
  bazaar: { endpoints: 20, skills: 5, tags: 10 },
} as const

const ID_RE = /^[a-z0-9][a-z0-9._-]{0,63}$/
const EVM_ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/
const CAIP2_RE = /^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/
const SCRIPT_RE = /<\s*\/?\s*script\b/i
const MARKUP_RE = /<\s*[a-z!/?][^>]*>|javascript\s*:|\bon[a-z]+\s*=/i
// control characters other than tab and newline
// eslint-disable-next-line no-control-regex
const CONTROL_RE = /[\u0000-\u0008\u000b-\u001f\u007f]/

const TOP_FIELDS: Record<ListingMode, string[]> = {
  catalog: [
    'id',
    'name',
    'description',
    'category',
    'tags',
    'url',
    'logo_url',
    'docs_url',
    'platform_agent_address',
    'enabled',
    'endpoints',
    'skills',
  ],
  bazaar: ['name', 'description', 'category', 'tags', 'url', 'logo_url', 'docs_url', 'contact', 'endpoints', 'skills'],
}
const ENDPOINT_FIELDS = [
  'id',
  'url',
  'methods',
  'x402_enabled',
  'x402_protocol_version',
  'network',
  'description',
  'enabled',
  'pricing_config',
]
const PRICING_FIELDS = [
  'amount',
  'amountAtomicUnit',
  'currency',
  'networkCaip2ID',
  'assetAddress',
  'payTo',
  'x402Schema',
]
const SKILL_FIELDS = ['id', 'name', 'instructions', 'docs_url', 'skillmd_url']

/**
 * Validate a listing body; returns the normalized input or every problem found, each naming its field.
 * Bazaar mode refuses ids, platform addresses, state fields, local/private URLs and most markup.
 *
 * @example
 *   const r = validateListing(request.body, 'bazaar')
 *   if (!r.ok) throw appError('invalid_submission', { detail: r.problems[0].reason }, { details: { problems: r.problems } })
 */
export function validateListing(
  body: unknown,
  mode: ListingMode,
): { ok: true; value: ListingInput } | { ok: false; problems: Problem[] } {
  const problems: Problem[] = []
  const bad = (field: string, reason: string) => void problems.push({ field, reason })
  const limits = LIMITS[mode]

  if (!isObject(body)) return { ok: false, problems: [{ field: 'body', reason: 'expected a JSON object' }] }
  unknownFields(body, TOP_FIELDS[mode], '', bad)

  const { text, url } = fieldChecks(mode, bad)

  const id =
    mode === 'catalog' && body.id !== undefined
      ? typeof body.id === 'string' && ID_RE.test(body.id)
        ? body.id
        : (bad('id', 'expected 1-64 of a-z 0-9 . _ - starting with a letter or digit'), undefined)
      : undefined
  const name = text(body.name, 'name', 100, { required: true }) ?? ''
  const description = text(body.description, 'description', 2000, { multiline: true })
  const category = checkCategory(body.category, text, bad) ?? ''
  const tags = checkTags(body.tags, limits.tags, text, bad)
  let platformAgentAddress: string | null = null
  if (body.platform_agent_address !== undefined && body.platform_agent_address !== null) {
    if (typeof body.platform_agent_address !== 'string' || !EVM_ADDRESS_RE.test(body.platform_agent_address))
      bad('platform_agent_address', 'expected a 0x-prefixed 20-byte hex address')
    else platformAgentAddress = body.platform_agent_address
  }
  let enabled = true
  if (body.enabled !== undefined && typeof body.enabled !== 'boolean') bad('enabled', 'expected a boolean')
  else if (body.enabled === false) enabled = false
  const contact = mode === 'bazaar' ? text(body.contact, 'contact', 200) : null
  const siteUrl = url(body.url, 'url')
  const logoUrl = url(body.logo_url, 'logo_url')
  const docsUrl = url(body.docs_url, 'docs_url')

  const checks: Checks = { mode, bad, text, url }
  const endpoints = checkEndpoints(body.endpoints, limits.endpoints, checks)
  const skills = checkSkills(body.skills, limits.skills, checks)

  if (problems.length > 0) return { ok: false, problems: dedupe(problems) }
  return {
    ok: true,
    value: {
      id,
      name,
      description,
      category,
      tags,
      url: siteUrl,
      logo_url: logoUrl,
      docs_url: docsUrl,
      platform_agent_address: platformAgentAddress,
      enabled,
      contact,
      endpoints,
      skills,
    },
  }
}

type Checks = { mode: ListingMode; bad: Bad } & ReturnType<typeof fieldChecks>

/** The endpoints of a listing: a non-empty array of at most `max`, ids unique. */
function checkEndpoints(v: unknown, max: number, checks: Checks): EndpointInput[] {
  const { bad } = checks
  const endpoints: EndpointInput[] = []
  if (!Array.isArray(v) || v.length === 0) bad('endpoints', 'expected a non-empty array')
  else if (v.length > max) bad('endpoints', `at most ${max} endpoints`)
  else
    v.forEach((e, i) => {
      const endpoint = checkEndpoint(e, `endpoints[${i}]`, checks)
      if (endpoint) endpoints.push(endpoint)
    })
  const epIds = endpoints.map((e) => e.id).filter(Boolean)
  if (new Set(epIds).size !== epIds.length) bad('endpoints', 'endpoint ids must be unique')
  return endpoints
}

/** One endpoint at path `p`, or undefined when it is not an object or has no pricing_config object. */
function checkEndpoint(e: unknown, p: string, checks: Checks): EndpointInput | undefined {
  const { mode, bad, text, url } = checks
  if (!isObject(e)) return (bad(p, 'expected an object'), undefined)
  unknownFields(e, ENDPOINT_FIELDS, `${p}.`, bad)
  const epId =
    e.id === undefined
      ? undefined
      : typeof e.id === 'string' && ID_RE.test(e.id) && mode === 'catalog'
        ? e.id
        : (bad(`${p}.id`, mode === 'bazaar' ? 'ids are assigned by the server' : 'expected 1-64 of a-z 0-9 . _ -'),
          undefined)
  const epUrl = url(e.url, `${p}.url`, true)
  const methods: EndpointMethod[] = []
  if (!Array.isArray(e.methods) || e.methods.length === 0)
    bad(`${p}.methods`, `expected a non-empty array of ${HTTP_METHODS.join(', ')}`)
  else
    for (const m of e.methods) {
      if (!(HTTP_METHODS as readonly unknown[]).includes(m)) {
        bad(`${p}.methods`, `expected only ${HTTP_METHODS.join(', ')}`)
        break
      }
      if (!methods.includes(m as EndpointMethod)) methods.push(m as EndpointMethod)
    }
  const version = e.x402_protocol_version ?? 2
  if (version !== 1 && version !== 2) bad(`${p}.x402_protocol_version`, 'expected 1 or 2')
  let network: FilterNetwork | undefined
  let networkOk = true
  if (e.network !== undefined && e.network !== null) {
    if (typeof e.network === 'string' && isFilterNetwork(e.network)) network = e.network
    else {
      bad(`${p}.network`, 'expected base or base-sepolia (the networks the marketplace lists)')
      networkOk = false
    }
  }
  for (const f of ['enabled', 'x402_enabled'] as const)
    if (e[f] !== undefined && typeof e[f] !== 'boolean') bad(`${p}.${f}`, 'expected a boolean')
  const epDescription = text(e.description, `${p}.description`, 500, { multiline: true })

  const head = {
    id: epId,
    url: epUrl ?? '',
    methods,
    x402_enabled: e.x402_enabled !== false,
    x402_protocol_version: version === 1 ? (1 as const) : (2 as const),
    description: epDescription,
    enabled: e.enabled !== false,
  }
  return checkPricing(e.pricing_config, head, network, networkOk, p, bad)
}

/** The pricing_config of the endpoint at `p`, completing its `head`. */
function checkPricing(
  pc: unknown,
  head: Pick<
    EndpointInput,
    'id' | 'url' | 'methods' | 'x402_enabled' | 'x402_protocol_version' | 'description' | 'enabled'
  >,
  network: FilterNetwork | undefined,
  networkOk: boolean,
  p: string,
  bad: Bad,
): EndpointInput | undefined {
  if (!isObject(pc)) return (bad(`${p}.pricing_config`, 'expected an object'), undefined)
  unknownFields(pc, PRICING_FIELDS, `${p}.pricing_config.`, bad)
  const amount = atomic(pc.amount)
  if (amount === null)
    bad(`${p}.pricing_config.amount`, 'expected a non-negative integer of atomic units (a decimal string)')
  if (pc.amountAtomicUnit !== undefined && atomic(pc.amountAtomicUnit) !== amount)
    bad(`${p}.pricing_config.amountAtomicUnit`, 'must equal amount (both are the price in atomic units)')
  const currency = pc.currency ?? 'USDC'
  if (typeof currency !== 'string' || !/^[A-Z0-9]{1,10}$/.test(currency))
    bad(`${p}.pricing_config.currency`, 'expected an upper-case ticker such as USDC')
  const served = checkNetwork(network, networkOk, pc.networkCaip2ID, p, bad)
  const addressOk = (a: unknown) => typeof a === 'string' && EVM_ADDRESS_RE.test(a)
  if (!addressOk(pc.assetAddress)) bad(`${p}.pricing_config.assetAddress`, 'expected a 0x-prefixed 20-byte hex address')
  if (pc.payTo !== undefined && pc.payTo !== null && !addressOk(pc.payTo))
    bad(`${p}.pricing_config.payTo`, 'expected a 0x-prefixed 20-byte hex address or null')
  const schema = pc.x402Schema ?? null
  if (schema !== null && schema !== 'exact' && schema !== 'deferred')
    bad(`${p}.pricing_config.x402Schema`, 'expected exact, deferred or null')
  return {
    id: head.id,
    url: head.url,
    methods: head.methods,
    x402_enabled: head.x402_enabled,
    x402_protocol_version: head.x402_protocol_version,
    // placeholders where a problem was reported (the listing is then refused)
    network: served ?? 'base',
    description: head.description,
    enabled: head.enabled,
    amount: amount ?? '0',
    currency: typeof currency === 'string' ? currency : 'USDC',
    network_caip2_id: served ? NETWORK_CAIP2[served] : '',
    asset_address: String(pc.assetAddress ?? ''),
    pay_to: typeof pc.payTo === 'string' ? pc.payTo : null,
    x402_schema: schema as EndpointInput['x402_schema'],
  }
}

/** The skills of a listing: absent, null or an array of at most `max`. */
function checkSkills(v: unknown, max: number, checks: Checks): SkillInput[] {
  const { bad } = checks
  const skills: SkillInput[] = []
  if (v === undefined || v === null) return skills
  if (!Array.isArray(v)) bad('skills', 'expected an array')
  else if (v.length > max) bad('skills', `at most ${max} skills`)
  else
    v.forEach((s, i) => {
      const skill = checkSkill(s, `skills[${i}]`, checks)
      if (skill) skills.push(skill)
    })
  return skills
}

/** One skill at path `p`, or undefined when it is not an object. */
function checkSkill(s: unknown, p: string, checks: Checks): SkillInput | undefined {
  const { mode, bad, text, url } = checks
  if (!isObject(s)) return (bad(p, 'expected an object'), undefined)
  unknownFields(s, SKILL_FIELDS, `${p}.`, bad)
  const skId =
    s.id === undefined
      ? undefined
      : typeof s.id === 'string' && ID_RE.test(s.id) && mode === 'catalog'
        ? s.id
        : (bad(`${p}.id`, 'ids are assigned by the server'), undefined)
  const skName = text(s.name, `${p}.name`, 100, { required: true }) ?? ''
  let instructions: unknown = s.instructions ?? null
  if (instructions !== null) {
    const json = JSON.stringify(instructions)
    if (json.length > (mode === 'bazaar' ? 4000 : 16000)) bad(`${p}.instructions`, 'is too large')
    else
      walkStrings(instructions, (str) => {
        if (SCRIPT_RE.test(str)) bad(`${p}.instructions`, 'script tags are not allowed')
        else if (mode === 'bazaar' && MARKUP_RE.test(str))
          bad(`${p}.instructions`, 'HTML markup and script URLs are not allowed')
      })
    instructions = JSON.parse(json)
  }
  return {
    id: skId,
    name: skName,
    instructions,
    docs_url: url(s.docs_url, `${p}.docs_url`),
    skillmd_url: url(s.skillmd_url, `${p}.skillmd_url`),
  }
}

type Bad = (field: string, reason: string) => void
type TextCheck = (
  v: unknown,
  field: string,
  max: number,
  opts?: { required?: boolean; multiline?: boolean },
) => string | null

/**
 * The checks of a listing's free-text and URL fields, reporting to `bad`: text is trimmed, bounded,
 * free of control characters and markup; a URL is absolute http(s) (public hosts only in bazaar mode).
 * Empty or null gives null (or "is required").
 */
function fieldChecks(
  mode: ListingMode,
  bad: Bad,
): { text: TextCheck; url: (v: unknown, field: string, required?: boolean) => string | null } {
  const text: TextCheck = (v, field, max, opts = {}) => {
    if (v === undefined || v === null || v === '') {
      if (opts.required) bad(field, 'is required')
      return null
    }
    if (typeof v !== 'string') return (bad(field, 'expected a string'), null)
    const s = v.trim()
    if (s.length === 0 && opts.required) return (bad(field, 'is required'), null)
    if (s.length > max) return (bad(field, `is longer than ${max} characters`), null)
    if (SCRIPT_RE.test(s)) return (bad(field, 'script tags are not allowed'), null)
    if (MARKUP_RE.test(s)) return (bad(field, 'HTML markup and script URLs are not allowed'), null)
    const ctl = opts.multiline ? s.replace(/[\n\t]/g, ' ') : s
    if (CONTROL_RE.test(ctl) || (!opts.multiline && /[\n\t]/.test(s)))
      return (bad(field, 'control characters are not allowed'), null)
    return s.length === 0 ? null : s
  }
  const url = (v: unknown, field: string, required = false): string | null => {
    const s = text(v, field, 2048, { required })
    if (s === null) return null
    const reason = urlProblem(s, mode)
    if (reason) return (bad(field, reason), null)
    return s
  }
  return { text, url }
}

/**
 * The network an endpoint is served on. The marketplace lists Base and Base Sepolia only, so an
 * endpoint must name one of them by `network`, by `pricing_config.networkCaip2ID`, or by both in
 * agreement: a missing `network` is derived from the CAIP-2 id (an endpoint stored without one
 * would be approved and then shown on no network). Anything else is refused, naming the field.
 */
function checkNetwork(
  network: FilterNetwork | undefined,
  networkOk: boolean,
  caip2: unknown,
  p: string,
  bad: Bad,
): FilterNetwork | undefined {
  const caip2Field = `${p}.pricing_config.networkCaip2ID`
  if (caip2 !== undefined && (typeof caip2 !== 'string' || !CAIP2_RE.test(caip2)))
    return (bad(caip2Field, 'expected a CAIP-2 id such as eip155:8453'), undefined)
  if (!networkOk) return undefined
  if (typeof caip2 !== 'string') {
    if (network === undefined)
      bad(
        `${p}.network`,
        'is required: base or base-sepolia (or give pricing_config.networkCaip2ID eip155:8453 or eip155:84532)',
      )
    return network
  }
  const fromCaip2 = networkOfCaip2(caip2)
  if (fromCaip2 === undefined)
    return (
      bad(caip2Field, 'expected eip155:8453 (base) or eip155:84532 (base-sepolia), the networks the marketplace lists'),
      undefined
    )
  if (network !== undefined && network !== fromCaip2)
    return (
      bad(caip2Field, `${caip2} is ${fromCaip2}, but network is ${network} (${NETWORK_CAIP2[network]})`),
      undefined
    )
  return fromCaip2
}

/** A category is required wherever it is given: letters, digits, spaces and a few joiners. */
function checkCategory(v: unknown, text: TextCheck, bad: Bad): string | null {
  const category = text(v, 'category', 50, { required: true })
  if (category && !/^[\p{L}\p{N}][\p{L}\p{N} &/+.-]*$/u.test(category))
    return (bad('category', 'expected letters, digits, spaces and & / + . -'), null)
  return category
}

/** Tags: an array of at most `max` short strings, duplicates dropped; null or absent is none. */
function checkTags(v: unknown, max: number, text: TextCheck, bad: Bad): string[] {
  const tags: string[] = []
  if (v === undefined || v === null) return tags
  if (!Array.isArray(v)) bad('tags', 'expected an array of strings')
  else if (v.length > max) bad('tags', `at most ${max} tags`)
  else
    v.forEach((t, i) => {
      const s = text(t, `tags[${i}]`, 40, { required: true })
      if (s !== null && !tags.includes(s)) tags.push(s)
    })
  return tags
}

/** How a seller's service appears in the marketplace (its platform entry); each field optional. */
export interface ServiceListing {
  category?: string
  tags?: string[]
  website_url?: string | null
  docs_url?: string | null
  logo_url?: string | null
}

/**
 * The marketplace fields of a seller's service, checked as strictly as a bazaar submission (the
 * entry is public): only the fields `body` carries, so it serves both create and update.
 *
 * @example
 *   const r = validateServiceListing({ category: 'Crypto', tags: ['prices'] })
 *   // { ok: true, value: { category: 'Crypto', tags: ['prices'] } }
 */
export function validateServiceListing(
  body: Record<string, unknown>,
): { ok: true; value: ServiceListing } | { ok: false; problems: Problem[] } {
  const problems: Problem[] = []
  const bad: Bad = (field, reason) => void problems.push({ field, reason })
  const { text, url } = fieldChecks('bazaar', bad)
  const value: ServiceListing = {}
  if (body.category !== undefined) {
    const category = checkCategory(body.category, text, bad)
    if (category !== null) value.category = category
  }
  if (body.tags !== undefined) value.tags = checkTags(body.tags, LIMITS.catalog.tags, text, bad)
  for (const f of ['website_url', 'docs_url', 'logo_url'] as const)
    if (body[f] !== undefined) value[f] = url(body[f], f)
  return problems.length > 0 ? { ok: false, problems: dedupe(problems) } : { ok: true, value }
}

/** Why a listed URL is refused, or undefined. Listings are shown to buyers, never fetched by us. */
export function urlProblem(s: string, mode: ListingMode): string | undefined {
  let u: URL
  try {
    u = new URL(s)
  } catch {
    return 'expected an absolute http(s) URL'
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return `only http and https URLs are allowed, got ${u.protocol.replace(/:$/, '')}`
  if (u.username || u.password) return 'URLs must not carry credentials'
  if (mode === 'bazaar') {
    const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase()
    if (
      host === 'localhost' ||
      host.endsWith('.localhost') ||
      host.endsWith('.local') ||
      host.endsWith('.internal') ||
      (!host.includes('.') && isIP(host) === 0)
    )
      return 'URLs must name a public host'
    if (isIP(host) !== 0 && isPrivateIp(host)) return 'URLs must not point at private or loopback addresses'
  }
  return undefined
}

function isPrivateIp(ip: string): boolean {
  if (isIP(ip) === 6) return ip === '::1' || ip === '::' || /^(fc|fd|fe80)/.test(ip) || ip.startsWith('::ffff:')
  const [a, b] = ip.split('.').map(Number)
  return (
    a === 10 ||
    a === 127 ||
    a === 0 ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 100 && b >= 64 && b <= 127)
  )
}

function atomic(v: unknown): string | null {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return String(v)
  if (typeof v === 'bigint' && v >= 0n) return v.toString()
  if (typeof v === 'string' && /^(0|[1-9][0-9]{0,77})$/.test(v)) return v
  return null
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function unknownFields(
  o: Record<string, unknown>,
  allowed: string[],
  prefix: string,
  bad: (f: string, r: string) => void,
): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) bad(`${prefix}${k}`, 'is not an accepted field')
}

function walkStrings(v: unknown, fn: (s: string) => void, depth = 0): void {
  if (depth > 10) return
  if (typeof v === 'string') fn(v)
  else if (Array.isArray(v)) v.forEach((x) => walkStrings(x, fn, depth + 1))
  else if (isObject(v)) Object.entries(v).forEach(([k, x]) => (fn(k), walkStrings(x, fn, depth + 1)))
}

function dedupe(problems: Problem[]): Problem[] {
  const seen = new Set<string>()
  return problems.filter((p) => {
    const k = `${p.field}\u0000${p.reason}`
    return seen.has(k) ? false : (seen.add(k), true)
  })
}
