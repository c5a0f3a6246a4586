import { createRequire } from 'node:module'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import { BoundedDns, normalizeDomain } from '../_shared/netcheck-dns.js'

/**
 * Role mailboxes: the names RFC 2142 reserves (info, sales, support, abuse, postmaster, ...) plus
 * common shared-inbox names. A role address reaches a team, not a person.
 */
const ROLE_NAMES = new Set([
  'info',
  'marketing',
  'sales',
  'support',
  'abuse',
  'noc',
  'security',
  'postmaster',
  'hostmaster',
  'usenet',
  'news',
  'webmaster',
  'www',
  'uucp',
  'ftp',
  'admin',
  'administrator',
  'root',
  'contact',
  'help',
  'helpdesk',
  'billing',
  'accounts',
  'accounting',
  'office',
  'hr',
  'jobs',
  'careers',
  'team',
  'hello',
  'enquiries',
  'inquiries',
  'press',
  'media',
  'legal',
  'privacy',
  'compliance',
  'feedback',
  'service',
  'noreply',
  'no-reply',
  'donotreply',
  'do-not-reply',
  'mailer-daemon',
])

/** RFC 2606 / RFC 6761 names reserved for documentation and testing. */
const RESERVED = /(^|\.)(example\.(com|net|org)|example|test|invalid|localhost)$/

// dot-atom local part of RFC 5322 §3.2.3 (quoted strings and comments are not accepted)
const ATEXT_DOT_ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/

interface Input {
  email: string
}

type Deliverable = 'no' | 'unknown'

export default defineHandler<Input>({
  slug: 'email-verification',
  description:
    'Check an email address without sending mail: syntax (RFC 5322 dot-atom), whether the domain can receive mail (MX, or A/AAAA fallback, null MX), disposable domain, role address and free-provider flags. No SMTP probe is made, so a plausible address is "unknown", never "yes".',
  network: true,
  inputSchema: {
    type: 'object',
    required: ['email'],
    additionalProperties: false,
    properties: {
      email: {
        type: 'string',
        minLength: 1,
        maxLength: 320,
        description: 'The email address to check, e.g. "jane.doe@example.com" (at most 320 characters).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'email (normalised: domain lower-cased, IDN in punycode), localPart, domain, syntax { valid, reason }, domainCheck { exists, acceptsMail, via ("MX" | "A/AAAA fallback" | null), mx [{ priority, exchange }], nullMx, reason }, disposable (domain or a parent on the disposable-email-domains list), role (local part is a role mailbox such as info or postmaster; roleName), freeProvider (domain on the free-email-domains-list, not disposable, not an RFC 2606 documentation name), smtpProbe: "not performed", deliverable ("no" when clearly undeliverable: bad syntax, no such domain, null MX or no mail host; otherwise "unknown", since no SMTP probe is made), reasons, dnsQueries, sources.',
    schema: {
      type: 'object',
      properties: {
        email: { type: 'string' },
        localPart: { type: ['string', 'null'] },
        domain: { type: ['string', 'null'] },
        syntax: { type: 'object' },
        domainCheck: { type: ['object', 'null'] },
        disposable: { type: ['boolean', 'null'] },
        role: { type: ['boolean', 'null'] },
        roleName: { type: ['string', 'null'] },
        freeProvider: { type: ['boolean', 'null'] },
        smtpProbe: { type: 'string' },
        deliverable: { type: 'string', enum: ['no', 'unknown'] },
        reasons: { type: 'array', items: { type: 'string' } },
        dnsQueries: { type: 'integer' },
        sources: { type: 'object' },
      },
    },
    example: {
      email: 'Jane.Doe+news@corp.com',
      localPart: 'Jane.Doe+news',
      domain: 'corp.com',
      syntax: { valid: true, reason: null },
      domainCheck: {
        exists: true,
        acceptsMail: true,
        via: 'MX',
        mx: [
          { exchange: 'mx1.corp.com', priority: 10 },
          { exchange: 'mx2.corp.com', priority: 20 },
        ],
        nullMx: false,
        reason: null,
      },
      disposable: false,
      role: false,
      roleName: null,
      freeProvider: false,
      smtpProbe: 'not performed',
      sources: {
        disposable: 'disposable-email-domains 1.0.62 (npm, github.com/ivolo/disposable-email-domains), offline',
        freeProvider: 'free-email-domains-list 1.0.16 (npm), offline',
        role: 'RFC 2142 mailbox names plus common shared-inbox names',
        dns: 'live MX / A / AAAA look-ups',
      },
      deliverable: 'unknown',
      reasons: ['no SMTP probe is made, so whether this mailbox exists is unknown'],
      dnsQueries: 1,
    },
  },
  example: { email: 'postmaster@example.com' },
  async run(input, ctx) {
    const email = input.email.trim()
    const base = { smtpProbe: 'not performed', sources: SOURCES }
    const syntax = checkSyntax(email)
    if (!syntax.valid) {
      return {
        body: {
          email,
          localPart: null,
          domain: null,
          syntax: { valid: false, reason: syntax.reason },
          domainCheck: null,
          disposable: null,
          role: null,
          roleName: null,
          freeProvider: null,
          ...base,
          deliverable: 'no',
          reasons: [`syntax: ${syntax.reason}`],
          dnsQueries: 0,
        },
      }
    }
    const { local, domain } = syntax
    const lists = loadLists()
    const disposable = onList(domain, lists.disposable, lists.disposableWildcard)
    const roleName = ROLE_NAMES.has(local.toLowerCase().split('+')[0]!) ? local.toLowerCase().split('+')[0]! : null
    // the free list also carries the RFC 2606 documentation names (example.com ...): not providers
    const freeProvider = !disposable && !RESERVED.test(domain) && lists.free.has(domain)

    const dns = new BoundedDns(ctx, { maxQueries: 3, deadlineMs: 8_000 })
    let domainCheck: DomainCheck
    try {
      domainCheck = await checkDomain(dns, domain)
    } finally {
      dns.close()
    }
    const reasons: string[] = []
    if (!domainCheck.acceptsMail) reasons.push(`domain: ${domainCheck.reason}`)
    if (disposable) reasons.push('the domain is a disposable (throw-away) email provider')
    if (roleName) reasons.push(`"${roleName}" is a role mailbox, usually read by a team`)
    const deliverable: Deliverable = domainCheck.acceptsMail ? 'unknown' : 'no'
    if (deliverable === 'unknown') reasons.push('no SMTP probe is made, so whether this mailbox exists is unknown')
    return {
      body: {
        email: `${local}@${domain}`,
        localPart: local,
        domain,
        syntax: { valid: true, reason: null },
        domainCheck,
        disposable,
        role: roleName !== null,
        roleName,
        freeProvider,
        ...base,
        deliverable,
        reasons,
        dnsQueries: dns.queries,
      },
    }
  },
})

const SOURCES = {
  disposable: 'disposable-email-domains 1.0.62 (npm, github.com/ivolo/disposable-email-domains), offline',
  freeProvider: 'free-email-domains-list 1.0.16 (npm), offline',
  role: 'RFC 2142 mailbox names plus common shared-inbox names',
  dns: 'live MX / A / AAAA look-ups',
}

type Syntax = { valid: true; local: string; domain: string } | { valid: false; reason: string }

function checkSyntax(email: string): Syntax {
  if (email.length > 254) return { valid: false, reason: 'longer than 254 characters (RFC 5321 path limit)' }
  const at = email.lastIndexOf('@')
  if (at < 0) return { valid: false, reason: 'no @' }
  const local = email.slice(0, at)
  const rawDomain = email.slice(at + 1)
  if (local === '') return { valid: false, reason: 'empty local part' }
  if (local.startsWith('"'))
    return { valid: false, reason: 'quoted local parts are not accepted (practical RFC 5322 subset)' }
  if (local.length > 64) return { valid: false, reason: 'local part longer than 64 characters' }
  if (!ATEXT_DOT_ATOM.test(local))
    return {
      valid: false,
      reason: 'local part has characters outside RFC 5322 dot-atom, or a leading, trailing or double dot',
    }
  if (rawDomain.startsWith('[')) return { valid: false, reason: 'address literals ([192.0.2.1]) are not accepted' }
  let domain: string
  try {
    domain = normalizeDomain(rawDomain, 'email')
  } catch (err) {
    if (err instanceof HandlerInputError)
      return { valid: false, reason: `domain "${rawDomain}" is not a valid domain name with a dot` }
    throw err
  }
  return { valid: true, local, domain }
}

interface DomainCheck {
  exists: boolean
  acceptsMail: boolean
  via: 'MX' | 'A/AAAA fallback' | null
  mx: Array<{ priority: number; exchange: string }>
  nullMx: boolean
  reason: string | null
}

/** MX first; without MX records RFC 5321 §5.1 falls back to the domain's own A/AAAA. */
async function checkDomain(dns: BoundedDns, domain: string): Promise<DomainCheck> {
  const mx = await dns.query(domain, 'MX')
  if (mx.status === 'error')
    throw new HandlerUpstreamError('upstream_failed', `DNS did not answer the MX query for ${domain} (${mx.code})`)
  if (mx.status === 'nxdomain')
    return {
      exists: false,
      acceptsMail: false,
      via: null,
      mx: [],
      nullMx: false,
      reason: 'the domain does not exist (NXDOMAIN)',
    }
  if (mx.status === 'found') {
    const records = [...mx.records].sort((a, b) => a.priority - b.priority)
    // RFC 7505: a single MX of "." (Node gives an empty exchange) says the domain takes no mail
    const nullMx = records.length === 1 && (records[0]!.exchange === '' || records[0]!.exchange === '.')
    if (nullMx)
      return {
        exists: true,
        acceptsMail: false,
        via: 'MX',
        mx: records,
        nullMx: true,
        reason: 'null MX (RFC 7505): the domain accepts no mail',
      }
    return { exists: true, acceptsMail: true, via: 'MX', mx: records, nullMx: false, reason: null }
  }
  const [a, aaaa] = await Promise.all([dns.query(domain, 'A'), dns.query(domain, 'AAAA')])
  if (a.status === 'found' || aaaa.status === 'found')
    return { exists: true, acceptsMail: true, via: 'A/AAAA fallback', mx: [], nullMx: false, reason: null }
  // without an address found, a failed query leaves the question open: "no host" would be a guess
  if (a.status === 'error' || aaaa.status === 'error') {
    const failed = a.status === 'error' ? a : aaaa
    throw new HandlerUpstreamError(
      'upstream_failed',
      `DNS did not answer the ${a.status === 'error' ? 'A' : 'AAAA'} query for ${domain} (${failed.status === 'error' ? failed.code : ''})`,
    )
  }
  return {
    exists: true,
    acceptsMail: false,
    via: null,
    mx: [],
    nullMx: false,
    reason: 'no MX and no A/AAAA record: no host to deliver to',
  }
}

interface Lists {
  disposable: Set<string>
  disposableWildcard: Set<string>
  free: Set<string>
}
let lists: Lists | undefined

// the lists are JSON / CommonJS data (≈200k names): loaded on first use, kept per worker
function loadLists(): Lists {
  if (!lists) {
    const require = createRequire(import.meta.url)
    lists = {
      disposable: new Set(require('disposable-email-domains') as string[]),
      disposableWildcard: new Set(require('disposable-email-domains/wildcard.json') as string[]),
      free: (require('free-email-domains-list/build/src/constants.js') as { DOMAINS: Set<string> }).DOMAINS,
    }
  }
  return lists
}

/** The domain itself on the exact list, or it or a parent domain on the wildcard list. */
function onList(domain: string, exact: Set<string>, wildcard: Set<string>): boolean {
  if (exact.has(domain)) return true
  const labels = domain.split('.')
  for (let i = 0; i < labels.length - 1; i++) if (wildcard.has(labels.slice(i).join('.'))) return true
  return false
}
