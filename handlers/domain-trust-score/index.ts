import {
  defineHandler,
  HandlerInputError,
  HandlerUpstreamError,
  type HandlerContext,
} from '../../src/pool/handler-contract.js'
import { BoundedDns, normalizeDomain } from '../_shared/netcheck-dns.js'
import { lookupRdap, summarizeRdap } from '../_shared/netcheck-rdap.js'
import { inspectTls } from '../_shared/netcheck-tls.js'
import { fetchPublicUrl, optionalSetting, resolvePublicHost } from '../_shared/outbound.js'

/** The scoring rules, returned with every answer so the number can be checked by hand. */
const METHOD = [
  'score = sum of the points of seven components (maximum 100); a component that could not be evaluated (status "unknown") scores 0 and is listed in unknown',
  'domainAge (20, RDAP registration date): >= 730 days 20, >= 365 days 15, >= 180 days 10, >= 30 days 5, younger 0',
  'dnssec (10, RDAP secureDNS.delegationSigned): signed delegation 10, else 0',
  'tlsCertificate (20, TLS on port 443): chain verifies against the Mozilla/Node trust store, name matches and not expired 20, else 0',
  'spf (10, TXT v=spf1): a record that does not allow everyone 10; one with +all (or a bare all) 0; none 0',
  'dmarc (10, TXT at _dmarc): p=reject or p=quarantine 10, p=none 5, none 0',
  'httpsRedirect (10): http://<domain>/ answers 301/302/303/307/308 to an https:// URL 10, else 0',
  'securityHeaders (20, final answer of https://<domain>/ after up to 5 redirects): Strict-Transport-Security 8, Content-Security-Policy 4, X-Content-Type-Options: nosniff 4, X-Frame-Options or CSP frame-ancestors 4',
]

interface Component {
  name: string
  points: number
  maxPoints: number
  status: 'scored' | 'unknown'
  value: unknown
  explanation: string
}

interface Input {
  domain: string
}

export default defineHandler<Input>({
  slug: 'domain-trust-score',
  description:
    "A 0–100 trust score for a domain from checkable signals: domain age and DNSSEC (RDAP), a valid TLS certificate, SPF and DMARC records, an HTTP-to-HTTPS redirect and security headers, with every component's points and the reason.",
  network: true,
  timeoutMs: 30_000,
  inputSchema: {
    type: 'object',
    required: ['domain'],
    additionalProperties: false,
    properties: {
      domain: { type: 'string', minLength: 1, maxLength: 253, description: 'The domain to score, e.g. "example.com".' },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'domain, score (0-100), maxAvailable (100 minus the points of components that could not be evaluated), components [{ name, points, maxPoints, status ("scored" | "unknown"), value, explanation }] for domainAge, dnssec, tlsCertificate, spf, dmarc, httpsRedirect, securityHeaders, unknown (names of unevaluated components, e.g. domain age when RDAP is not configured), method (the scoring rules).',
    schema: {
      type: 'object',
      properties: {
        domain: { type: 'string' },
        score: { type: 'integer', minimum: 0, maximum: 100 },
        maxAvailable: { type: 'integer' },
        components: { type: 'array' },
        unknown: { type: 'array', items: { type: 'string' } },
        method: { type: 'array', items: { type: 'string' } },
      },
    },
    example: {
      domain: 'example.com',
      score: 100,
      maxAvailable: 100,
      components: [
        {
          name: 'domainAge',
          points: 20,
          maxPoints: 20,
          status: 'scored',
          value: { ageDays: 1000, registered: '2024-03-03T12:25:05.035Z' },
          explanation: 'registered 1000 days ago (2024-03-03T12:25:05.035Z)',
        },
        {
          name: 'dnssec',
          points: 10,
          maxPoints: 10,
          status: 'scored',
          value: true,
          explanation: 'the delegation is DNSSEC-signed (DS records at the registry)',
        },
        {
          name: 'tlsCertificate',
          maxPoints: 20,
          status: 'scored',
          points: 20,
          value: {
            authorized: true,
            authorizationError: null,
            hostnameMatches: true,
            daysLeft: 89,
            issuer: 'Netcheck Trust CA',
          },
          explanation: 'a valid certificate from Netcheck Trust CA, 89 days left',
        },
      ],
      unknown: [],
      method: [
        'score = sum of the points of seven components (maximum 100); a component that could not be evaluated (status "unknown") scores 0 and is listed in unknown',
        'domainAge (20, RDAP registration date): >= 730 days 20, >= 365 days 15, >= 180 days 10, >= 30 days 5, younger 0',
        'dnssec (10, RDAP secureDNS.delegationSigned): signed delegation 10, else 0',
      ],
    },
  },
  example: { domain: 'example.com' },
  async run(input, ctx) {
    const domain = normalizeDomain(input.domain, 'domain', { requireDot: false })
    // refuses internal hosts (400); a name without addresses is scored on DNS and RDAP only
    let unresolvable: Component['status'] | null = null
    try {
      await resolvePublicHost(domain, ctx, 'domain')
    } catch (err) {
      if (err instanceof HandlerInputError && err.statusCode === 422) unresolvable = 'scored'
      else if (err instanceof HandlerUpstreamError) unresolvable = 'unknown'
      else throw err
    }
    const web = (name: string, maxPoints: number, check: () => Promise<Component>): Promise<Component> =>
      unresolvable === null
        ? check()
        : Promise.resolve({
            name,
            points: 0,
            maxPoints,
            status: unresolvable,
            value: null,
            explanation:
              unresolvable === 'scored'
                ? `${domain} has no A/AAAA address, so there is no web server to check`
                : `${domain} could not be resolved just now`,
          })
    const [registration, mail, tls, redirect, headers] = await Promise.all([
      registrationComponents(domain, ctx),
      mailComponents(domain, ctx),
      web('tlsCertificate', 20, () => tlsComponent(domain, ctx)),
      web('httpsRedirect', 10, () => redirectComponent(domain, ctx)),
      web('securityHeaders', 20, () => headersComponent(domain, ctx)),
    ])
    const components = [...registration, tls, ...mail, redirect, headers]
    const unknown = components.filter((c) => c.status === 'unknown')
    return {
      body: {
        domain,
        score: components.reduce((s, c) => s + c.points, 0),
        maxAvailable: 100 - unknown.reduce((s, c) => s + c.maxPoints, 0),
        components,
        unknown: unknown.map((c) => c.name),
        method: METHOD,
      },
    }
  },
})

async function registrationComponents(domain: string, ctx: HandlerContext): Promise<Component[]> {
  const unknown = (why: string): Component[] => [
    {
      name: 'domainAge',
      points: 0,
      maxPoints: 20,
      status: 'unknown',
      value: null,
      explanation: `domain age unknown: ${why}`,
    },
    { name: 'dnssec', points: 0, maxPoints: 10, status: 'unknown', value: null, explanation: `DNSSEC unknown: ${why}` },
  ]
  const base = optionalSetting(ctx, 'RDAP_URL')
  if (!base) return unknown('RDAP_URL is not configured on this deployment')
  let summary
  try {
    const r = await lookupRdap(base, domain)
    if (!r.found) return unknown('RDAP has no registration data for this name')
    summary = summarizeRdap(r.data, new Date())
  } catch (err) {
    if (err instanceof HandlerUpstreamError) return unknown(`the RDAP look-up failed (${err.message})`)
    throw err
  }
  const age = summary.ageDays
  const agePoints = age === null ? 0 : age >= 730 ? 20 : age >= 365 ? 15 : age >= 180 ? 10 : age >= 30 ? 5 : 0
  const signed = summary.dnssec.delegationSigned
  return [
    age === null
      ? {
          name: 'domainAge',
          points: 0,
          maxPoints: 20,
          status: 'unknown',
          value: null,
          explanation: 'domain age unknown: the RDAP record has no registration date',
        }
      : {
          name: 'domainAge',
          points: agePoints,
          maxPoints: 20,
          status: 'scored',
          value: { ageDays: age, registered: summary.dates.registered },
          explanation: `registered ${age} days ago (${summary.dates.registered})`,
        },
    signed === null
      ? {
          name: 'dnssec',
          points: 0,
          maxPoints: 10,
          status: 'unknown',
          value: null,
          explanation: 'DNSSEC unknown: the RDAP record has no secureDNS data',
        }
      : {
          name: 'dnssec',
          points: signed ? 10 : 0,
          maxPoints: 10,
          status: 'scored',
          value: signed,
          explanation: signed
            ? 'the delegation is DNSSEC-signed (DS records at the registry)'
            : 'the delegation is not DNSSEC-signed',
        },
  ]
}

async function mailComponents(domain: string, ctx: HandlerContext): Promise<Component[]> {
  const dns = new BoundedDns(ctx, { maxQueries: 2, deadlineMs: 8_000 })
  let txt, dmarcTxt
  try {
    ;[txt, dmarcTxt] = await Promise.all([dns.query(domain, 'TXT'), dns.query(`_dmarc.${domain}`, 'TXT')])
  } finally {
    dns.close()
  }
  if (txt.status === 'error' && dmarcTxt.status === 'error')
    throw new HandlerUpstreamError('upstream_failed', `DNS did not answer for ${domain} (${txt.code})`)
  let spf: Component
  if (txt.status === 'error')
    spf = {
      name: 'spf',
      points: 0,
      maxPoints: 10,
      status: 'unknown',
      value: null,
      explanation: `the TXT query failed (${txt.code})`,
    }
  else {
    const record = (txt.status === 'found' ? txt.records : []).find((r) => /^v=spf1(\s|$)/i.test(r.trim())) ?? null
    const passAll = record !== null && /(^|\s)\+?all(\s|$)/i.test(record.replace(/^v=spf1/i, ''))
    spf = !record
      ? { name: 'spf', points: 0, maxPoints: 10, status: 'scored', value: null, explanation: 'no SPF record' }
      : passAll
        ? {
            name: 'spf',
            points: 0,
            maxPoints: 10,
            status: 'scored',
            value: record,
            explanation: 'SPF ends in +all: it allows every sender',
          }
        : {
            name: 'spf',
            points: 10,
            maxPoints: 10,
            status: 'scored',
            value: record,
            explanation: 'an SPF record limits who may send mail for the domain',
          }
  }
  let dmarc: Component
  if (dmarcTxt.status === 'error')
    dmarc = {
      name: 'dmarc',
      points: 0,
      maxPoints: 10,
      status: 'unknown',
      value: null,
      explanation: `the _dmarc TXT query failed (${dmarcTxt.code})`,
    }
  else {
    const record =
      (dmarcTxt.status === 'found' ? dmarcTxt.records : []).find((r) => /^v=DMARC1(\s*;|\s*$)/i.test(r.trim())) ?? null
    const policy = record
      ? (/(?:^|;)\s*p\s*=\s*(none|quarantine|reject)\s*(?:;|$)/i.exec(record)?.[1]?.toLowerCase() ?? null)
      : null
    const points = policy === 'reject' || policy === 'quarantine' ? 10 : policy === 'none' ? 5 : 0
    dmarc = {
      name: 'dmarc',
      points,
      maxPoints: 10,
      status: 'scored',
      value: record,
      explanation: !record
        ? 'no DMARC record'
        : policy
          ? `DMARC policy p=${policy}`
          : 'the DMARC record has no valid policy',
    }
  }
  return [spf, dmarc]
}

async function tlsComponent(domain: string, ctx: HandlerContext): Promise<Component> {
  const c = { name: 'tlsCertificate', maxPoints: 20, status: 'scored' as const }
  try {
    const r = await inspectTls(domain, 443, ctx, { field: 'domain', timeoutMs: 8_000 })
    const valid = r.authorized && r.hostnameMatches && !r.validity.expired
    const value = {
      authorized: r.authorized,
      authorizationError: r.authorizationError,
      hostnameMatches: r.hostnameMatches,
      daysLeft: r.validity.daysLeft,
      issuer: r.certificate.issuerCommonName,
    }
    return {
      ...c,
      points: valid ? 20 : 0,
      value,
      explanation: valid
        ? `a valid certificate from ${r.certificate.issuerCommonName ?? r.certificate.issuer}, ${r.validity.daysLeft} days left`
        : `the certificate does not verify (${r.authorizationError ?? (r.hostnameMatches ? 'expired' : 'name mismatch')})`,
    }
  } catch (err) {
    if (err instanceof HandlerUpstreamError)
      return { ...c, points: 0, value: null, explanation: `no TLS service on port 443 (${err.message})` }
    throw err
  }
}

async function redirectComponent(domain: string, ctx: HandlerContext): Promise<Component> {
  const c = { name: 'httpsRedirect', maxPoints: 10, status: 'scored' as const }
  try {
    const r = await fetchPublicUrl(`http://${domain}/`, ctx, {
      field: 'domain',
      maxRedirects: 0,
      maxBytes: 16_384,
      timeoutMs: 8_000,
    })
    const location = typeof r.headers.location === 'string' ? r.headers.location : null
    const redirected = r.status >= 301 && r.status <= 308 && r.status !== 304 && location !== null
    // the Location header is whatever the site sends: one that is not a URL redirects nowhere
    const target = redirected ? parseUrl(location, r.url) : null
    const toHttps = target?.protocol === 'https:'
    const explanation = toHttps
      ? `http:// redirects (${r.status}) to ${location}`
      : redirected && !target
        ? `http:// answers ${r.status} with a Location that is not a valid URL`
        : `http:// answers ${r.status} without redirecting to https`
    return { ...c, points: toHttps ? 10 : 0, value: { status: r.status, location }, explanation }
  } catch (err) {
    if (err instanceof HandlerUpstreamError)
      return { ...c, points: 0, value: null, explanation: `http://${domain}/ did not answer (${err.message})` }
    throw err
  }
}

function parseUrl(ref: string, base: string): URL | null {
  try {
    return new URL(ref, base)
  } catch {
    return null
  }
}

async function headersComponent(domain: string, ctx: HandlerContext): Promise<Component> {
  const c = { name: 'securityHeaders', maxPoints: 20, status: 'scored' as const }
  let headers: Record<string, string | string[] | undefined>
  let finalUrl: string
  try {
    const r = await fetchPublicUrl(`https://${domain}/`, ctx, {
      field: 'domain',
      maxRedirects: 5,
      maxBytes: 16_384,
      timeoutMs: 8_000,
    })
    headers = r.headers
    finalUrl = r.finalUrl
  } catch (err) {
    if (err instanceof HandlerUpstreamError)
      return {
        ...c,
        points: 0,
        value: null,
        explanation: `https://${domain}/ could not be loaded with a valid certificate (${err.message})`,
      }
    throw err
  }
  const h = (name: string) => {
    const v = headers[name]
    return Array.isArray(v) ? v.join(', ') : (v ?? null)
  }
  const csp = h('content-security-policy')
  const present = {
    'strict-transport-security':
      h('strict-transport-security') !== null && /max-age\s*=\s*[1-9]/i.test(h('strict-transport-security')!),
    'content-security-policy': csp !== null,
    'x-content-type-options': /nosniff/i.test(h('x-content-type-options') ?? ''),
    'x-frame-options or frame-ancestors': h('x-frame-options') !== null || /frame-ancestors/i.test(csp ?? ''),
  }
  const points =
    (present['strict-transport-security'] ? 8 : 0) +
    (present['content-security-policy'] ? 4 : 0) +
    (present['x-content-type-options'] ? 4 : 0) +
    (present['x-frame-options or frame-ancestors'] ? 4 : 0)
  const have = Object.entries(present)
    .filter(([, v]) => v)
    .map(([k]) => k)
  const missing = Object.entries(present)
    .filter(([, v]) => !v)
    .map(([k]) => k)
  return {
    ...c,
    points,
    value: { url: finalUrl, present },
    explanation: `present: ${have.join(', ') || 'none'}; missing: ${missing.join(', ') || 'none'}`,
  }
}
