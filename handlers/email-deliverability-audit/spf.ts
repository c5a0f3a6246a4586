/**
 * SPF (RFC 7208) reading for the deliverability audit: the domain's record, its terms, the
 * effective `all` qualifier (following redirect=) and the number of DNS-querying terms counted
 * through include:/redirect= against the limit of 10 (§4.6.4), and the void lookups (names of
 * a, mx, exists, include and redirect terms that do not exist or have no records) against the
 * limit of 2 (§4.6.4). Included records and the names of a/mx/exists terms are queried only while
 * both counts are within their limits, through the audit's bounded resolver.
 */
import type { BoundedDns } from '../_shared/netcheck-dns.js'

export const SPF_LOOKUP_LIMIT = 10
/** RFC 7208 §4.6.4: more than this many void lookups is a permerror */
export const SPF_VOID_LOOKUP_LIMIT = 2

export interface SpfReport {
  found: boolean
  record: string | null
  /** number of v=spf1 records at the domain (more than one is a permerror) */
  recordCount: number
  /** the top record's mechanisms and modifiers, as written */
  terms: string[]
  /** qualifier of the effective all (after redirect=): "+" pass, "-" fail, "~" softfail, "?" neutral; null when none */
  allQualifier: '+' | '-' | '~' | '?' | null
  includes: string[]
  /** DNS-querying terms (include, a, mx, ptr, exists, redirect) counted through the includes */
  dnsLookups: number
  /** false when some include could not be fetched (limit reached, macro, budget, error): then dnsLookups is a lower bound */
  dnsLookupsComplete: boolean
  /**
   * names queried for a, mx, exists, include and redirect terms that do not exist (NXDOMAIN) or
   * have no record of the type asked (for a: neither A nor AAAA); a lower bound when some name
   * could not be checked (macros, a failed query, limits reached)
   */
  voidLookups: number
  problems: string[]
}

const MECHANISM = /^([+?~-]?)(all|include|a|mx|ptr|ip4|ip6|exists)(?:([:/])(.*))?$/i
const MODIFIER = /^([a-z][a-z0-9_.-]*)=(.*)$/i

/** The v=spf1 records among TXT strings. */
export const spfRecords = (txt: string[]) => txt.filter((r) => /^v=spf1(\s|$)/i.test(r.trim()))

export async function evaluateSpf(dns: BoundedDns, domain: string, topTxt: string[]): Promise<SpfReport> {
  const records = spfRecords(topTxt)
  const report: SpfReport = {
    found: records.length > 0,
    record: records[0] ?? null,
    recordCount: records.length,
    terms: [],
    allQualifier: null,
    includes: [],
    dnsLookups: 0,
    dnsLookupsComplete: true,
    voidLookups: 0,
    problems: [],
  }
  if (records.length === 0) return report
  if (records.length > 1)
    report.problems.push(`${records.length} SPF records: receivers treat this as a permanent error (RFC 7208 §4.5)`)
  report.terms = records[0]!.trim().split(/\s+/).slice(1)
  // each record is read once (a second include of the same domain is answered from here: receivers
  // evaluate it again, so its terms count again, but it costs no second query)
  const cache = new Map<string, string | null>()

  /** `path`: the domains of the records being evaluated around this term; only those make a loop. */
  const fetchSpf = async (target: string, via: string, path: ReadonlySet<string>): Promise<string | null> => {
    if (target.includes('%')) {
      report.dnsLookupsComplete = false
      report.problems.push(`${via}:${target} uses macros; not expanded here`)
      return null
    }
    if (path.has(target)) {
      report.problems.push(`${via}:${target} loops back to a record already read`)
      return null
    }
    if (report.dnsLookups > SPF_LOOKUP_LIMIT) {
      report.dnsLookupsComplete = false
      return null
    }
    if (cache.has(target)) return cache.get(target)!
    cache.set(target, null)
    const txt = await dns.query(target, 'TXT')
    if (txt.status === 'error') {
      report.dnsLookupsComplete = false
      report.problems.push(`${via}:${target} could not be read (${txt.code})`)
      return null
    }
    if (txt.status === 'nxdomain' || txt.status === 'nodata') report.voidLookups++
    const found = txt.status === 'found' ? spfRecords(txt.records) : []
    if (found.length === 0) {
      report.problems.push(`${via}:${target} has no SPF record: a permanent error for receivers`)
      return null
    }
    cache.set(target, found[0]!)
    return found[0]!
  }

  // a name asked once per mechanism kind; receivers ask again, but the answer (void or not) is the same
  const voidChecked = new Map<string, boolean>()
  /** Counts a void lookup when the name of an a/mx/exists term has no record receivers would use. */
  const checkVoid = async (kind: 'a' | 'mx' | 'exists', spec: string | undefined, current: string) => {
    if (report.voidLookups > SPF_VOID_LOOKUP_LIMIT || report.dnsLookups > SPF_LOOKUP_LIMIT) return
    const name = (spec ?? current).split('/')[0]!.toLowerCase().replace(/\.$/, '')
    if (!name || name.includes('%')) return // macros depend on the sender
    const key = `${kind} ${name}`
    let isVoid = voidChecked.get(key)
    if (isVoid === undefined) {
      const ask = async (type: 'A' | 'AAAA' | 'MX') => (await dns.query(name, type)).status
      const first = await ask(kind === 'mx' ? 'MX' : 'A')
      const second = kind === 'a' && first === 'nodata' ? await ask('AAAA') : first
      isVoid = (first === 'nxdomain' || first === 'nodata') && (second === 'nxdomain' || second === 'nodata')
      voidChecked.set(key, isVoid)
    }
    if (isVoid) report.voidLookups++
  }

  const walk = async (
    record: string,
    top: boolean,
    depth: number,
    path: ReadonlySet<string>,
    current: string,
  ): Promise<void> => {
    const terms = record.trim().split(/\s+/).slice(1)
    let redirect: string | null = null
    let hasAll = false
    for (const term of terms) {
      const mech = MECHANISM.exec(term)
      if (mech) {
        const kind = mech[2]!.toLowerCase()
        if (kind === 'all') {
          hasAll = true
          if (top) report.allQualifier = (mech[1] || '+') as SpfReport['allQualifier']
        } else if (kind === 'include') {
          report.dnsLookups++
          const target = (mech[4] ?? '').toLowerCase().replace(/\.$/, '')
          if (top) report.includes.push(target)
          if (depth < 10) {
            const sub = await fetchSpf(target, 'include', path)
            if (sub) await walk(sub, false, depth + 1, new Set([...path, target]), target)
          }
        } else if (kind === 'a' || kind === 'mx' || kind === 'ptr' || kind === 'exists') {
          report.dnsLookups++
          if (top && kind === 'ptr') report.problems.push('the ptr mechanism is deprecated (RFC 7208 §5.5)')
          // a:/mx: take a domain after ':' (a bare a or mx, or a/24, means the record's own domain)
          if (kind !== 'ptr') await checkVoid(kind, mech[3] === ':' ? mech[4] : undefined, current)
        }
        continue
      }
      const mod = MODIFIER.exec(term)
      if (mod) {
        if (mod[1]!.toLowerCase() === 'redirect') redirect = mod[2]!.toLowerCase().replace(/\.$/, '')
        continue
      }
      if (top) report.problems.push(`unknown term "${term}"`)
    }
    // redirect= applies only when the record has no all (RFC 7208 §6.1)
    if (redirect && !hasAll) {
      report.dnsLookups++
      if (depth < 10) {
        const sub = await fetchSpf(redirect, 'redirect', path)
        if (sub) {
          const before = report.allQualifier
          await walk(sub, top, depth + 1, new Set([...path, redirect]), redirect)
          if (!top) report.allQualifier = before
        }
      }
    }
  }
  await walk(records[0]!, true, 0, new Set([domain]), domain)
  if (report.voidLookups > SPF_VOID_LOOKUP_LIMIT)
    report.problems.push(
      `${report.voidLookups} void lookups (names in the record that do not exist or have no records), over the limit of ${SPF_VOID_LOOKUP_LIMIT}: receivers may return permerror (RFC 7208 §4.6.4)`,
    )
  if (report.dnsLookups > SPF_LOOKUP_LIMIT)
    report.problems.push(
      `${report.dnsLookups}${report.dnsLookupsComplete ? '' : '+'} DNS-querying terms, over the limit of ${SPF_LOOKUP_LIMIT}: receivers return permerror (RFC 7208 §4.6.4)`,
    )
  return report
}
