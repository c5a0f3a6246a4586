import { createPublicKey } from 'node:crypto'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import { BoundedDns, normalizeDomain, type DnsOutcome } from '../_shared/netcheck-dns.js'
import { evaluateSpf, SPF_LOOKUP_LIMIT, SPF_VOID_LOOKUP_LIMIT, type SpfReport } from './spf.js'

/** Selectors tried when the buyer names none: those of the large mail platforms (Google, Microsoft 365, Mailchimp, generic). */
const COMMON_SELECTORS = ['default', 'google', 'selector1', 'selector2', 'k1', 's1', 's2', 'dkim']
/** Parent domains asked for a DMARC record when the domain has none of its own. */
const DMARC_PARENT_QUERIES = 4

type Severity = 'critical' | 'high' | 'medium' | 'low' | 'info'
/** Points taken off 100 per finding; the score is never below 0. */
const PENALTY: Record<Severity, number> = { critical: 30, high: 20, medium: 10, low: 5, info: 0 }
const SCORING = `score = max(0, 100 - sum of penalties): critical ${PENALTY.critical}, high ${PENALTY.high}, medium ${PENALTY.medium}, low ${PENALTY.low}, info 0 points per finding`

interface Finding {
  id: string
  severity: Severity
  message: string
}

interface Input {
  domain: string
  dkimSelectors?: string[]
}

export default defineHandler<Input>({
  slug: 'email-deliverability-audit',
  description:
    'Audit the email authentication DNS of a domain: MX, SPF (parsed, DNS-lookup count against the limit of 10, void lookups against the limit of 2, all qualifier), DMARC (policy, rua, pct), DKIM keys at given or common selectors, MTA-STS, TLS-RPT and BIMI records, with findings by severity and a documented 0–100 score.',
  network: true,
  timeoutMs: 20_000,
  inputSchema: {
    type: 'object',
    required: ['domain'],
    additionalProperties: false,
    properties: {
      domain: {
        type: 'string',
        minLength: 1,
        maxLength: 253,
        description: 'The sending domain to audit, e.g. "example.com".',
      },
      dkimSelectors: {
        type: 'array',
        items: { type: 'string', minLength: 1, maxLength: 63, pattern: '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$' },
        minItems: 1,
        maxItems: 10,
        uniqueItems: true,
        description: `DKIM selectors to look up at <selector>._domainkey.<domain> (at most 10). Default: ${COMMON_SELECTORS.join(', ')}. Selectors cannot be listed from DNS, so a key not found at these is not proof there is none.`,
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'domain; mx { found, records [{ priority, exchange }], nullMx }; spf { found, record, recordCount, terms, allQualifier (+ - ~ ? or null), includes, dnsLookups, dnsLookupsComplete, voidLookups (names of a/mx/exists/include/redirect terms that do not exist or have no records; over 2 is a permerror), problems }; dmarc { found, record, foundAt (the domain whose _dmarc record applies: the domain itself, else the nearest parent with one, as receivers look up the organizational domain), inherited, policy (p=), subdomainPolicy (sp=), effectivePolicy (what applies to this domain: p=, or for an inherited record sp= when set), pct, rua, ruf, adkim, aspf }; dkim { selectorsChecked, found [{ selector, record, keyType, keyBits, revoked, testing }] }; mtaSts { found, record, id } (the DNS record only: the policy file is not fetched); tlsRpt { found, record, rua }; bimi { found, record, logo, authority } (selector "default"); findings [{ id, severity, message }]; score (0-100) and scoring (the formula); dnsQueries; unknown (checks whose DNS query failed, excluded from the findings).',
    schema: {
      type: 'object',
      properties: {
        domain: { type: 'string' },
        mx: { type: 'object' },
        spf: { type: 'object' },
        dmarc: { type: 'object' },
        dkim: { type: 'object' },
        mtaSts: { type: 'object' },
        tlsRpt: { type: 'object' },
        bimi: { type: 'object' },
        findings: { type: 'array' },
        score: { type: 'integer', minimum: 0, maximum: 100 },
        scoring: { type: 'string' },
        dnsQueries: { type: 'integer' },
        unknown: { type: 'array', items: { type: 'string' } },
      },
    },
    example: {
      domain: 'good.com',
      mx: { found: true, records: [{ exchange: 'mx.good.com', priority: 10 }], nullMx: false },
      spf: {
        found: true,
        record: 'v=spf1 ip4:192.0.2.0/24 include:_spf.provider.com mx -all',
        recordCount: 1,
        terms: ['ip4:192.0.2.0/24', 'include:_spf.provider.com', 'mx'],
        allQualifier: '-',
        includes: ['_spf.provider.com'],
        dnsLookups: 4,
        dnsLookupsComplete: true,
        voidLookups: 0,
        problems: [],
      },
      dmarc: {
        found: true,
        record: 'v=DMARC1; p=reject; rua=mailto:dmarc@good.com,mailto:x@rep.com; adkim=s',
        foundAt: 'good.com',
        inherited: false,
        policy: 'reject',
        subdomainPolicy: null,
        effectivePolicy: 'reject',
        pct: 100,
        rua: ['mailto:dmarc@good.com', 'mailto:x@rep.com'],
        ruf: [],
        adkim: 'strict',
        aspf: 'relaxed',
      },
      dkim: {
        selectorsChecked: ['selector1', 'google'],
        found: [
          {
            selector: 'selector1',
            record:
              'v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA3eP2m/Rt4AigIJrMlyxYBWk+gKiXGZuxPBON8kxey390Kol0kkMG4MtNRNIaPwWUtEMG3ikLO0FpYJgh/FkdvYzbl8/jsh3gdUjMplW65tQdk7RrteITIa+NhLYV2d0FvWVKcp1Fbv…',
            keyType: 'rsa',
            keyBits: 2048,
            revoked: false,
            testing: false,
          },
        ],
      },
      mtaSts: {
        found: true,
        record: 'v=STSv1; id=20260101T000000',
        id: '20260101T000000',
        note: 'DNS record only; the policy file at https://mta-sts.<domain>/.well-known/mta-sts.txt is not fetched',
      },
      tlsRpt: { found: true, record: 'v=TLSRPTv1; rua=mailto:tls@good.com', rua: ['mailto:tls@good.com'] },
      bimi: {
        found: true,
        record: 'v=BIMI1; l=https://good.com/logo.svg; a=',
        logo: 'https://good.com/logo.svg',
        authority: null,
      },
      findings: [],
      score: 100,
      scoring:
        'score = max(0, 100 - sum of penalties): critical 30, high 20, medium 10, low 5, info 0 points per finding',
      dnsQueries: 12,
      unknown: [],
    },
  },
  example: { domain: 'example.com', dkimSelectors: ['default', 'google'] },
  async run(input, ctx) {
    const domain = normalizeDomain(input.domain, 'domain')
    const selectors = (input.dkimSelectors ?? COMMON_SELECTORS).map((s) => s.toLowerCase())
    // MX, TXT, DMARC, MTA-STS, TLS-RPT, BIMI, the selectors, up to 11 SPF includes/redirects, the
    // names of up to 11 a/mx/exists terms (A then AAAA for a) and the DMARC parents
    const dns = new BoundedDns(ctx, {
      maxQueries: 6 + selectors.length + 3 * (SPF_LOOKUP_LIMIT + 1) + DMARC_PARENT_QUERIES,
      deadlineMs: 15_000,
    })
    try {
      const [mx, txt, dmarcTxt, stsTxt, rptTxt, bimiTxt, ...dkimTxt] = await Promise.all([
        dns.query(domain, 'MX'),
        dns.query(domain, 'TXT'),
        dns.query(`_dmarc.${domain}`, 'TXT'),
        dns.query(`_mta-sts.${domain}`, 'TXT'),
        dns.query(`_smtp._tls.${domain}`, 'TXT'),
        dns.query(`default._bimi.${domain}`, 'TXT'),
        ...selectors.map((s) => dns.query(`${s}._domainkey.${domain}`, 'TXT')),
      ])
      const all = [mx, txt, dmarcTxt, stsTxt, rptTxt, bimiTxt, ...dkimTxt]
      if (all.every((o) => o.status === 'error'))
        throw new HandlerUpstreamError('upstream_failed', `DNS did not answer for ${domain}`)
      if (mx.status === 'nxdomain' && txt.status === 'nxdomain')
        throw new HandlerInputError('domain', `domain: ${domain} does not exist (NXDOMAIN)`, 422)

      const unknown: string[] = []
      const findings: Finding[] = []
      const add = (id: string, severity: Severity, message: string) => findings.push({ id, severity, message })
      const texts = (o: DnsOutcome<'TXT'>, what: string): string[] | null => {
        if (o.status === 'error') {
          unknown.push(`${what} (${o.code})`)
          return null
        }
        return o.status === 'found' ? o.records : []
      }

      // MX
      const mxRecords = mx.status === 'found' ? [...mx.records].sort((a, b) => a.priority - b.priority) : []
      const nullMx = mxRecords.length === 1 && (mxRecords[0]!.exchange === '' || mxRecords[0]!.exchange === '.')
      if (mx.status === 'error') unknown.push(`MX (${mx.code})`)
      else if (nullMx) add('mx-null', 'info', 'null MX (RFC 7505): the domain declares it receives no mail')
      else if (mxRecords.length === 0)
        add('mx-missing', 'medium', 'no MX record: replies and bounces to this domain depend on an A/AAAA fallback')

      // SPF
      const topTxt = texts(txt, 'SPF')
      let spf: SpfReport | null = null
      if (topTxt) {
        spf = await evaluateSpf(dns, domain, topTxt)
        if (!spf.found)
          add(
            'spf-missing',
            nullMx ? 'medium' : 'high',
            'no SPF record (v=spf1): receivers cannot tell which servers may send for the domain',
          )
        else {
          if (spf.recordCount > 1)
            add('spf-multiple', 'high', 'more than one SPF record: a permanent error, SPF fails for every message')
          if (spf.dnsLookups > SPF_LOOKUP_LIMIT)
            add(
              'spf-too-many-lookups',
              'high',
              `SPF needs ${spf.dnsLookups}${spf.dnsLookupsComplete ? '' : '+'} DNS lookups, over the limit of ${SPF_LOOKUP_LIMIT}: receivers return permerror`,
            )
          if (spf.voidLookups > SPF_VOID_LOOKUP_LIMIT)
            add(
              'spf-too-many-void-lookups',
              'high',
              `SPF names ${spf.voidLookups} hosts or domains that do not exist or have no records (void lookups), over the limit of ${SPF_VOID_LOOKUP_LIMIT}: receivers may return permerror`,
            )
          if (spf.allQualifier === '+')
            add('spf-pass-all', 'critical', 'SPF ends in +all: any server on the internet may send as this domain')
          else if (spf.allQualifier === '?')
            add('spf-neutral-all', 'medium', 'SPF ends in ?all (neutral): unlisted senders are not rejected')
          else if (spf.allQualifier === '~')
            add(
              'spf-softfail-all',
              'info',
              'SPF ends in ~all (softfail): unlisted senders are marked, not rejected; -all is stricter',
            )
          else if (spf.allQualifier === null)
            add(
              'spf-no-all',
              'medium',
              'SPF has no all mechanism (nor redirect): unlisted senders get a neutral result',
            )
          for (const p of spf.problems.filter((p) => !/over the limit|SPF records:/.test(p)))
            add('spf-problem', /no SPF record|loops/.test(p) ? 'medium' : 'low', p)
        }
      }

      // DMARC: the domain's own record, else (RFC 7489 §6.6.3) the one of its organizational domain,
      // found here by walking up the parent domains (the DMARCbis tree walk; no public-suffix list)
      const isDmarc = (r: string) => /^v=DMARC1(\s*;|\s*$)/i.test(r.trim())
      let dmarcRecords = texts(dmarcTxt, 'DMARC')?.filter(isDmarc) ?? null
      let dmarcAt = domain
      if (dmarcRecords !== null && dmarcRecords.length === 0) {
        // nearest parent first, never the top-level domain; a long name starts from its
        // DMARC_PARENT_QUERIES + 1 rightmost labels, where organizational domains are
        const labels = domain.split('.')
        for (let i = Math.max(1, labels.length - 1 - DMARC_PARENT_QUERIES); i < labels.length - 1; i++) {
          const parent = labels.slice(i).join('.')
          const found = texts(await dns.query(`_dmarc.${parent}`, 'TXT'), `DMARC at ${parent}`)
          if (found === null) {
            dmarcRecords = null
            break
          }
          if (found.some(isDmarc)) {
            dmarcRecords = found.filter(isDmarc)
            dmarcAt = parent
            break
          }
        }
      }
      const dmarc = dmarcRecords === null ? null : parseDmarc(dmarcRecords, dmarcAt, domain)
      if (dmarc) {
        if (!dmarc.found)
          add(
            'dmarc-missing',
            'high',
            `no DMARC record at _dmarc.${domain}${domain.split('.').length > 2 ? ' nor at its parent domains' : ''}: receivers get no policy and you get no reports`,
          )
        else {
          if (dmarcRecords!.length > 1)
            add('dmarc-multiple', 'high', 'more than one DMARC record: receivers ignore DMARC (RFC 7489 §6.6.3)')
          if (dmarc.effectivePolicy === null) add('dmarc-invalid', 'high', 'the DMARC record has no valid p= tag')
          else if (dmarc.effectivePolicy === 'none')
            add(
              'dmarc-policy-none',
              'medium',
              `DMARC ${dmarc.inherited && dmarc.subdomainPolicy ? 'sp' : 'p'}=none${dmarc.inherited ? ` (from ${dmarc.foundAt})` : ''}: monitoring only, spoofed mail is still delivered`,
            )
          else if (dmarc.pct !== null && dmarc.pct < 100)
            add('dmarc-partial', 'low', `DMARC pct=${dmarc.pct}: the policy applies to part of the failing mail only`)
          if (dmarc.rua.length === 0)
            add('dmarc-no-rua', 'low', 'DMARC has no rua= address: no aggregate reports are received')
        }
      }

      // DKIM
      const dkimFound: Array<{
        selector: string
        record: string
        keyType: string
        keyBits: number | null
        revoked: boolean
        testing: boolean
      }> = []
      let dkimUnknown = 0
      selectors.forEach((selector, i) => {
        const o = dkimTxt[i]!
        if (o.status === 'error') {
          dkimUnknown++
          return
        }
        const rec = o.status === 'found' ? o.records.find((r) => /(^|;)\s*p=/i.test(r)) : undefined
        if (rec) dkimFound.push({ selector, record: rec, ...describeDkimKey(rec) })
      })
      if (dkimUnknown) unknown.push(`DKIM at ${dkimUnknown} selector(s)`)
      const liveKeys = dkimFound.filter((k) => !k.revoked)
      if (liveKeys.length === 0 && dkimUnknown < selectors.length)
        add(
          'dkim-not-found',
          'medium',
          `no DKIM key at the selectors checked (${selectors.join(', ')}); a key under another selector cannot be seen from DNS`,
        )
      for (const k of liveKeys) {
        if (k.keyType === 'rsa' && k.keyBits !== null && k.keyBits < 1024)
          add(
            'dkim-weak-key',
            'high',
            `DKIM key at ${k.selector} is RSA-${k.keyBits}: receivers ignore keys under 1024 bits`,
          )
        else if (k.keyType === 'rsa' && k.keyBits !== null && k.keyBits < 2048)
          add('dkim-short-key', 'low', `DKIM key at ${k.selector} is RSA-${k.keyBits}; 2048 bits is recommended`)
        if (k.keyBits === null && k.keyType === 'rsa')
          add('dkim-bad-key', 'medium', `the DKIM key at ${k.selector} could not be parsed`)
        if (k.testing) add('dkim-testing', 'low', `the DKIM key at ${k.selector} is in test mode (t=y)`)
      }

      // MTA-STS, TLS-RPT, BIMI
      const sts = tagRecord(texts(stsTxt, 'MTA-STS'), /^v=STSv1/i)
      const rpt = tagRecord(texts(rptTxt, 'TLS-RPT'), /^v=TLSRPTv1/i)
      const bimi = tagRecord(texts(bimiTxt, 'BIMI'), /^v=BIMI1/i)
      if (sts && !sts.found && !nullMx)
        add(
          'mta-sts-missing',
          'low',
          'no MTA-STS record: sending servers may deliver to this domain without enforced TLS',
        )
      if (rpt && !rpt.found && !nullMx)
        add('tls-rpt-missing', 'low', 'no TLS-RPT record: you get no reports of TLS delivery failures')
      if (bimi && !bimi.found)
        add('bimi-missing', 'info', 'no BIMI record at default._bimi: no brand logo in supporting inboxes')

      const score = Math.max(0, 100 - findings.reduce((s, f) => s + PENALTY[f.severity], 0))
      return {
        body: {
          domain,
          mx: mx.status === 'error' ? null : { found: mxRecords.length > 0, records: mxRecords, nullMx },
          spf,
          dmarc,
          dkim: { selectorsChecked: selectors, found: dkimFound },
          mtaSts: sts && {
            found: sts.found,
            record: sts.record,
            id: sts.tags.id ?? null,
            note: 'DNS record only; the policy file at https://mta-sts.<domain>/.well-known/mta-sts.txt is not fetched',
          },
          tlsRpt: rpt && {
            found: rpt.found,
            record: rpt.record,
            rua: rpt.tags.rua ? rpt.tags.rua.split(',').map((s) => s.trim()) : [],
          },
          bimi: bimi && {
            found: bimi.found,
            record: bimi.record,
            logo: bimi.tags.l || null,
            authority: bimi.tags.a || null,
          },
          findings,
          score,
          scoring: SCORING,
          dnsQueries: dns.queries,
          unknown,
        },
      }
    } finally {
      dns.close()
    }
  },
})

/** `k=v; k=v` tags of a DMARC / MTA-STS / TLS-RPT / BIMI / DKIM record, keys lower-cased. */
function tags(record: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const part of record.split(';')) {
    const i = part.indexOf('=')
    if (i > 0) out[part.slice(0, i).trim().toLowerCase()] = part.slice(i + 1).trim()
  }
  return out
}

function tagRecord(txt: string[] | null, version: RegExp) {
  if (txt === null) return null
  const record = txt.find((r) => version.test(r.trim())) ?? null
  return { found: record !== null, record, tags: record ? tags(record) : ({} as Record<string, string>) }
}

/** `at`: the domain whose _dmarc record this is; a parent of `domain` when inherited. */
function parseDmarc(records: string[], at: string, domain: string) {
  const record = records[0]
  if (!record)
    return {
      found: false,
      record: null,
      foundAt: null,
      inherited: false,
      policy: null,
      subdomainPolicy: null,
      effectivePolicy: null,
      pct: null,
      rua: [],
      ruf: [],
      adkim: null,
      aspf: null,
    }
  const t = tags(record)
  const valid = (v: string | undefined) =>
    ['none', 'quarantine', 'reject'].includes((v ?? '').toLowerCase()) ? v!.toLowerCase() : null
  const policy = valid(t.p)
  const subdomainPolicy = valid(t.sp)
  const inherited = at !== domain
  const uris = (v: string | undefined) =>
    v
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : []
  const pct = t.pct !== undefined && /^\d+$/.test(t.pct) ? Math.min(100, Number(t.pct)) : null
  return {
    found: true,
    record,
    foundAt: at,
    inherited,
    policy,
    subdomainPolicy,
    // a subdomain without its own record gets the organizational domain's sp= (p= when there is none)
    effectivePolicy: policy === null ? null : inherited ? (subdomainPolicy ?? policy) : policy,
    // pct defaults to 100 (RFC 7489 §6.3) when absent
    pct: t.pct === undefined ? 100 : pct,
    rua: uris(t.rua),
    ruf: uris(t.ruf),
    adkim: t.adkim?.toLowerCase() === 's' ? 'strict' : 'relaxed',
    aspf: t.aspf?.toLowerCase() === 's' ? 'strict' : 'relaxed',
  }
}

/** Key type and size of a DKIM TXT record's p= (base64 SubjectPublicKeyInfo for RSA). */
function describeDkimKey(record: string): {
  keyType: string
  keyBits: number | null
  revoked: boolean
  testing: boolean
} {
  const t = tags(record)
  const keyType = (t.k ?? 'rsa').toLowerCase()
  const p = (t.p ?? '').replace(/\s+/g, '')
  const testing = (t.t ?? '')
    .split(':')
    .map((s) => s.trim().toLowerCase())
    .includes('y')
  if (p === '') return { keyType, keyBits: null, revoked: true, testing }
  if (keyType === 'ed25519') return { keyType, keyBits: 256, revoked: false, testing }
  // SubjectPublicKeyInfo is what signers publish; a bare RSAPublicKey (PKCS#1, the form RFC 6376
  // §3.6.1 names for k=rsa) is accepted by verifiers too
  for (const type of ['spki', 'pkcs1'] as const) {
    try {
      const key = createPublicKey({ key: Buffer.from(p, 'base64'), format: 'der', type })
      return { keyType, keyBits: key.asymmetricKeyDetails?.modulusLength ?? null, revoked: false, testing }
    } catch {
      // try the next form
    }
  }
  return { keyType, keyBits: null, revoked: false, testing }
}
