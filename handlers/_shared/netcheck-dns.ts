/**
 * Bounded DNS look-ups for the netcheck handlers (dns-lookup, email checks, domain trust): every
 * query goes through `dnsResolver(ctx)` (so DNS_SERVERS is honoured), is counted against a query
 * budget, and shares one deadline. "No such name" (NXDOMAIN) and "no record of that type"
 * (NODATA) are answers, not errors.
 *
 * @example
 *   const dns = new BoundedDns(ctx, { maxQueries: 12, deadlineMs: 8_000 })
 *   try { const mx = await dns.query('example.com', 'MX') } finally { dns.close() }
 */
import { domainToASCII } from 'node:url'
import { isIP } from 'node:net'
import type { promises as dnsPromises } from 'node:dns'
import { HandlerInputError, type HandlerContext } from '../../src/pool/handler-contract.js'
import { dnsResolver, errorCode } from './outbound.js'

export const RECORD_TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'NS', 'SOA', 'CAA', 'SRV', 'PTR'] as const
export type RecordType = (typeof RECORD_TYPES)[number]

export interface MxRecord {
  priority: number
  exchange: string
}
export interface SoaRecord {
  nsname: string
  hostmaster: string
  serial: number
  refresh: number
  retry: number
  expire: number
  minttl: number
}
export interface CaaRecord {
  critical: number
  tag: string
  value: string
}
export interface SrvRecord {
  priority: number
  weight: number
  port: number
  name: string
}
export interface AddressRecord {
  address: string
  ttl: number
}

export interface RecordData {
  A: AddressRecord
  AAAA: AddressRecord
  CNAME: string
  MX: MxRecord
  /** each TXT record's character-strings, joined (as SPF/DMARC readers do) */
  TXT: string
  NS: string
  SOA: SoaRecord
  CAA: CaaRecord
  SRV: SrvRecord
  PTR: string
}

export type DnsOutcome<T extends RecordType> =
  | { status: 'found'; records: Array<RecordData[T]> }
  /** NXDOMAIN: the name does not exist */
  | { status: 'nxdomain' }
  /** the name exists but has no record of this type */
  | { status: 'nodata' }
  /** the resolver failed (SERVFAIL, REFUSED, timeout, budget spent): the answer is unknown */
  | { status: 'error'; code: string }

export interface BoundedDnsOptions {
  /** queries allowed in total; further ones answer { status: 'error', code: 'EBUDGET' } */
  maxQueries?: number
  /** wall-clock limit for all queries together */
  deadlineMs?: number
  /** per-try timeout of the resolver (it tries twice) */
  perTryTimeoutMs?: number
}

/** One resolver with a query budget and a deadline; `close()` cancels whatever is still pending. */
export class BoundedDns {
  private readonly resolver: dnsPromises.Resolver
  private readonly deadline: number
  private readonly maxQueries: number
  /** queries sent so far */
  queries = 0

  constructor(ctx: HandlerContext, opts: BoundedDnsOptions = {}) {
    this.resolver = dnsResolver(ctx, opts.perTryTimeoutMs ?? 2_500)
    this.deadline = Date.now() + (opts.deadlineMs ?? 8_000)
    this.maxQueries = opts.maxQueries ?? 20
  }

  async query<T extends RecordType>(name: string, type: T): Promise<DnsOutcome<T>> {
    if (this.queries >= this.maxQueries) return { status: 'error', code: 'EBUDGET' }
    const left = this.deadline - Date.now()
    if (left <= 0) return { status: 'error', code: 'ETIMEOUT' }
    this.queries++
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<DnsOutcome<T>>((resolve) => {
      timer = setTimeout(() => resolve({ status: 'error', code: 'ETIMEOUT' }), left)
    })
    const lookup = this.send(name, type).then(
      (records): DnsOutcome<T> => (records.length ? { status: 'found', records } : { status: 'nodata' }),
      (err): DnsOutcome<T> => {
        const code = errorCode(err)
        if (code === 'ENOTFOUND') return { status: 'nxdomain' }
        if (code === 'ENODATA') return { status: 'nodata' }
        return { status: 'error', code }
      },
    )
    try {
      return await Promise.race([lookup, timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  /** Cancels outstanding queries (their promises then settle as errors nobody awaits). */
  close(): void {
    this.resolver.cancel()
  }

  private async send<T extends RecordType>(name: string, type: T): Promise<Array<RecordData[T]>> {
    const r = this.resolver
    const out = await (async (): Promise<unknown[]> => {
      switch (type) {
        case 'A':
          return r.resolve4(name, { ttl: true })
        case 'AAAA':
          return r.resolve6(name, { ttl: true })
        case 'CNAME':
          return r.resolveCname(name)
        case 'MX':
          return r.resolveMx(name)
        case 'TXT':
          return (await r.resolveTxt(name)).map((chunks) => chunks.join(''))
        case 'NS':
          return r.resolveNs(name)
        case 'SOA':
          return [await r.resolveSoa(name)]
        case 'CAA':
          return (await r.resolveCaa(name)).map((c) => {
            const { critical, ...rest } = c as unknown as Record<string, unknown> & { critical: number }
            const [tag, value] = Object.entries(rest)[0] ?? ['', '']
            return { critical, tag, value: String(value) }
          })
        case 'SRV':
          return r.resolveSrv(name)
        case 'PTR':
          return isIP(name) ? r.reverse(name) : r.resolvePtr(name)
      }
      return []
    })()
    return out as Array<RecordData[T]>
  }
}

/**
 * A buyer-given domain name in ASCII (IDNs converted to punycode), lower case, without a trailing
 * dot; 400 on `field` when it is not a syntactically valid DNS name. Underscore labels
 * (`_dmarc`, `_sip._tcp`) are accepted only with `allowUnderscore`.
 *
 * @example normalizeDomain('Bücher.Example.', 'domain') // 'xn--bcher-kva.example'
 */
export function normalizeDomain(
  raw: string,
  field: string,
  opts: { allowUnderscore?: boolean; requireDot?: boolean } = {},
): string {
  const trimmed = raw.trim().replace(/\.$/, '')
  if (trimmed === '') throw new HandlerInputError(field, `${field} is empty`)
  if (isIP(trimmed)) throw new HandlerInputError(field, `${field} must be a domain name, not an IP address`)
  // domainToASCII refuses underscores, so convert label by label and keep _labels as they are
  const labels = trimmed.split('.').map((l) => (/^[A-Za-z0-9_-]*$/.test(l) ? l.toLowerCase() : domainToASCII(l)))
  const name = labels.join('.')
  const label = opts.allowUnderscore
    ? /^(?:_?[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?|_[a-z0-9-]{1,62}|\*)$/
    : /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/
  if (name.length > 253 || labels.some((l) => !label.test(l)))
    throw new HandlerInputError(field, `${field} is not a valid domain name`)
  if ((opts.requireDot ?? true) && labels.length < 2)
    throw new HandlerInputError(field, `${field} must be a fully qualified domain name such as example.com`)
  if (/^\d+$/.test(labels[labels.length - 1]!))
    throw new HandlerInputError(field, `${field} is not a valid domain name (numeric top-level label)`)
  return name
}
