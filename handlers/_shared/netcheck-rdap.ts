/**
 * RDAP (the JSON successor of WHOIS) domain look-ups through a bootstrap service such as
 * https://rdap.org, which answers GET /domain/<name> with a redirect to the registry's RDAP server.
 * Response shape: RFC 9083 (https://www.rfc-editor.org/rfc/rfc9083), domain object §5.3, events
 * §4.5, entities and vCard (jCard, RFC 7095) §5.1, secureDNS §5.3. Used by
 * domain-intelligence-whois and domain-trust-score.
 *
 * @example
 *   const r = await lookupRdap(providerSetting(ctx, 'RDAP_URL'), 'example.com')
 *   if (r.found) summarizeRdap(r.data, new Date())
 */
import { HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import { callProvider, joinUrl } from './outbound.js'

const MAX_REDIRECTS = 3
const DAY_MS = 86_400_000

export type RdapLookup = { found: true; data: RdapDomain; server: string } | { found: false; server: string }

interface RdapEvent {
  eventAction?: string
  eventDate?: string
}
interface RdapEntity {
  roles?: string[]
  vcardArray?: unknown
  publicIds?: Array<{ type?: string; identifier?: string }>
  entities?: RdapEntity[]
  handle?: string
}
export interface RdapDomain {
  objectClassName?: string
  ldhName?: string
  unicodeName?: string
  handle?: string
  status?: string[]
  events?: RdapEvent[]
  entities?: RdapEntity[]
  nameservers?: Array<{ ldhName?: string }>
  secureDNS?: { delegationSigned?: boolean; zoneSigned?: boolean; dsData?: unknown[]; keyData?: unknown[] }
  port43?: string
}

/**
 * GET {base}/domain/{name}, following the bootstrap's redirects (at most 3). 404 is "not found"
 * (no such registration, or no RDAP server for the TLD); other failures are 502 upstream_failed.
 */
export async function lookupRdap(base: string, domain: string, timeoutMs = 8_000): Promise<RdapLookup> {
  let url = joinUrl(base, `domain/${encodeURIComponent(domain)}`)
  for (let hop = 0; ; hop++) {
    const res = await callProvider('RDAP', url, {
      headers: { accept: 'application/rdap+json, application/json' },
      acceptStatus: [301, 302, 303, 307, 308, 404],
      timeoutMs,
    })
    const server = new URL(url).host
    if (res.status === 404) return { found: false, server }
    if (res.status >= 300) {
      const location = res.headers.location
      if (typeof location !== 'string' || hop >= MAX_REDIRECTS)
        throw new HandlerUpstreamError('upstream_failed', 'RDAP redirected without a usable location')
      const next = new URL(location, url)
      if (next.protocol !== 'https:' && next.protocol !== 'http:')
        throw new HandlerUpstreamError('upstream_failed', 'RDAP redirected to a non-HTTP location')
      url = next.toString()
      continue
    }
    const data = res.json as RdapDomain | undefined
    if (
      !data ||
      typeof data !== 'object' ||
      Array.isArray(data) ||
      (data.objectClassName !== undefined && data.objectClassName !== 'domain')
    ) {
      throw new HandlerUpstreamError('upstream_failed', 'RDAP answered something that is not a domain object')
    }
    return { found: true, data, server }
  }
}

export interface RdapSummary {
  domain: string | null
  unicodeName: string | null
  handle: string | null
  registrar: {
    name: string | null
    ianaId: string | null
    url: string | null
    abuseEmail: string | null
    abusePhone: string | null
  } | null
  registrant: { name: string | null; organization: string | null; country: string | null } | null
  dates: {
    registered: string | null
    expires: string | null
    lastChanged: string | null
    lastRdapUpdate: string | null
  }
  ageDays: number | null
  daysUntilExpiry: number | null
  status: string[]
  nameservers: string[]
  dnssec: { delegationSigned: boolean | null; dsRecords: number }
}

/** The fields of an RFC 9083 domain object that people ask WHOIS for; absent data stays null. */
export function summarizeRdap(d: RdapDomain, now: Date): RdapSummary {
  const event = (action: string) => {
    const e = (d.events ?? []).find((x) => x.eventAction?.toLowerCase() === action)
    const t = e?.eventDate ? new Date(e.eventDate) : null
    return t && !Number.isNaN(t.getTime()) ? t : null
  }
  const registered = event('registration')
  const expires = event('expiration')
  const lastChanged = event('last changed')
  const lastRdap = event('last update of rdap database')
  const registrarEntity = (d.entities ?? []).find((e) => e.roles?.includes('registrar'))
  const abuse = registrarEntity?.entities?.find((e) => e.roles?.includes('abuse'))
  const registrantEntity = (d.entities ?? []).find((e) => e.roles?.includes('registrant'))
  const registrant = registrantEntity
    ? {
        name: vcard(registrantEntity, 'fn'),
        organization: vcard(registrantEntity, 'org'),
        country: vcardCountry(registrantEntity),
      }
    : null
  return {
    domain: d.ldhName?.toLowerCase() ?? null,
    unicodeName: d.unicodeName ?? null,
    handle: d.handle ?? null,
    registrar: registrarEntity
      ? {
          name: vcard(registrarEntity, 'fn'),
          ianaId: registrarEntity.publicIds?.find((p) => /iana/i.test(p.type ?? ''))?.identifier ?? null,
          url: vcard(registrarEntity, 'url'),
          abuseEmail: abuse ? vcard(abuse, 'email') : null,
          abusePhone: abuse ? vcard(abuse, 'tel') : null,
        }
      : null,
    registrant: registrant && (registrant.name || registrant.organization || registrant.country) ? registrant : null,
    dates: {
      registered: registered?.toISOString() ?? null,
      expires: expires?.toISOString() ?? null,
      lastChanged: lastChanged?.toISOString() ?? null,
      lastRdapUpdate: lastRdap?.toISOString() ?? null,
    },
    ageDays: registered ? Math.floor((now.getTime() - registered.getTime()) / DAY_MS) : null,
    daysUntilExpiry: expires ? Math.floor((expires.getTime() - now.getTime()) / DAY_MS) : null,
    status: d.status ?? [],
    nameservers: (d.nameservers ?? []).map((n) => n.ldhName?.toLowerCase()).filter((n): n is string => !!n),
    dnssec: { delegationSigned: d.secureDNS?.delegationSigned ?? null, dsRecords: d.secureDNS?.dsData?.length ?? 0 },
  }
}

/** First value of a jCard property (RFC 7095: ["vcard", [[name, params, type, value], ...]]). */
function vcard(entity: RdapEntity, prop: string): string | null {
  const props =
    Array.isArray(entity.vcardArray) && Array.isArray(entity.vcardArray[1]) ? (entity.vcardArray[1] as unknown[]) : []
  for (const p of props) {
    if (Array.isArray(p) && p[0] === prop) {
      const v = p[3]
      if (typeof v === 'string' && v.trim() !== '')
        return v
          .replace(/^mailto:/i, '')
          .replace(/^tel:/i, '')
          .trim()
      if (Array.isArray(v) && typeof v[0] === 'string' && v[0] !== '') return v[0]
    }
  }
  return null
}

/** Country of a jCard adr (the last of its seven components, or its cc parameter). */
function vcardCountry(entity: RdapEntity): string | null {
  const props =
    Array.isArray(entity.vcardArray) && Array.isArray(entity.vcardArray[1]) ? (entity.vcardArray[1] as unknown[]) : []
  for (const p of props) {
    if (Array.isArray(p) && p[0] === 'adr') {
      const params = p[1] as { cc?: string } | undefined
      if (params?.cc) return params.cc
      const v = p[3]
      if (Array.isArray(v) && typeof v[6] === 'string' && v[6] !== '') return v[6]
    }
  }
  return null
}
