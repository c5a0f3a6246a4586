import { isIP } from 'node:net'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import { BoundedDns, normalizeDomain, RECORD_TYPES, type DnsOutcome, type RecordType } from '../_shared/netcheck-dns.js'

/** Types asked for a domain when the buyer names none (SRV and PTR only make sense on special names). */
const DEFAULT_TYPES: RecordType[] = ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'NS', 'SOA', 'CAA']

interface Input {
  name: string
  types?: RecordType[]
}

type TypeAnswer =
  { found: true; records: unknown[] } | { found: false; reason: 'NXDOMAIN' | 'NODATA' } | { found: null; error: string }

export default defineHandler<Input>({
  slug: 'dns-lookup',
  description:
    'Look up DNS records of a domain (A, AAAA, CNAME, MX, TXT, NS, SOA, CAA, SRV, PTR) or the reverse (PTR) name of an IP address, live from DNS. Missing names and types are reported as not found, per type.',
  network: true,
  inputSchema: {
    type: 'object',
    required: ['name'],
    additionalProperties: false,
    properties: {
      name: {
        type: 'string',
        minLength: 1,
        maxLength: 253,
        description:
          'A domain name (e.g. "example.com", "_sip._tcp.example.com") or an IPv4/IPv6 address for a reverse (PTR) lookup.',
      },
      types: {
        type: 'array',
        items: { type: 'string', enum: [...RECORD_TYPES] },
        minItems: 1,
        maxItems: RECORD_TYPES.length,
        uniqueItems: true,
        description: `Record types to query. Default for a domain: ${DEFAULT_TYPES.join(', ')}; for an IP address only PTR is possible (and the default).`,
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'name (as queried, IDNs in punycode), reverse (true for an IP address; reverseName is then the in-addr.arpa / ip6.arpa name), exists (false when the name does not exist at all, null when unknown), records: one entry per type: { found: true, records } or { found: false, reason: "NXDOMAIN" | "NODATA" } or { found: null, error } when the resolver failed. A/AAAA records carry their TTL in seconds; MX { priority, exchange }; TXT the record text (character-strings joined); SOA { nsname, hostmaster, serial, refresh, retry, expire, minttl }; CAA { critical, tag, value }; SRV { priority, weight, port, name }. queries: DNS queries sent.',
    schema: {
      type: 'object',
      properties: {
        name: { type: 'string' },
        reverse: { type: 'boolean' },
        reverseName: { type: 'string' },
        exists: { type: ['boolean', 'null'] },
        records: { type: 'object' },
        queries: { type: 'integer' },
      },
    },
    example: {
      name: 'example.com',
      reverse: false,
      exists: true,
      records: {
        A: {
          found: true,
          records: [
            { address: '192.0.2.10', ttl: 120 },
            { address: '192.0.2.11', ttl: 120 },
          ],
        },
        AAAA: { found: true, records: [{ address: '2001:db8::10', ttl: 300 }] },
        MX: {
          found: true,
          records: [
            { exchange: 'mx1.example.com', priority: 10 },
            { exchange: 'mx2.example.com', priority: 20 },
          ],
        },
        TXT: { found: true, records: ['v=spf1 -all'] },
        NS: { found: true, records: ['ns1.example.com'] },
      },
      queries: 5,
    },
  },
  example: { name: 'example.com', types: ['A', 'AAAA', 'MX', 'TXT', 'NS'] },
  async run(input, ctx) {
    const raw = input.name.trim()
    const ip = isIP(raw) ? raw : null
    let types: RecordType[]
    let name: string
    if (ip) {
      if (input.types && input.types.some((t) => t !== 'PTR'))
        throw new HandlerInputError('types', 'for an IP address only PTR (reverse) lookups are possible')
      types = ['PTR']
      name = ip
    } else {
      name = normalizeDomain(raw, 'name', { allowUnderscore: true, requireDot: false })
      types = input.types ?? DEFAULT_TYPES
    }
    const dns = new BoundedDns(ctx, { maxQueries: RECORD_TYPES.length, deadlineMs: 8_000 })
    let outcomes: Array<DnsOutcome<RecordType>>
    try {
      outcomes = await Promise.all(types.map((t) => dns.query(name, t)))
    } finally {
      dns.close()
    }
    if (outcomes.every((o) => o.status === 'error')) {
      const codes = [...new Set(outcomes.map((o) => (o.status === 'error' ? o.code : '')))].join(', ')
      throw new HandlerUpstreamError('upstream_failed', `DNS did not answer for ${name} (${codes})`)
    }
    const records: Record<string, TypeAnswer> = {}
    types.forEach((t, i) => {
      const o = outcomes[i]!
      records[t] =
        o.status === 'found'
          ? { found: true, records: o.records }
          : o.status === 'error'
            ? { found: null, error: o.code }
            : { found: false, reason: o.status === 'nxdomain' ? 'NXDOMAIN' : 'NODATA' }
    })
    // a record of any type means the name exists (a CNAME whose target is gone answers NXDOMAIN for
    // every other type: RFC 6604, the rcode is that of the last name); else NXDOMAIN means it does not
    const exists = outcomes.some((o) => o.status === 'found')
      ? true
      : outcomes.some((o) => o.status === 'nxdomain')
        ? false
        : outcomes.some((o) => o.status === 'nodata')
          ? true
          : null
    return {
      body: {
        name,
        reverse: ip !== null,
        ...(ip ? { reverseName: reverseName(ip) } : {}),
        exists,
        records,
        queries: dns.queries,
      },
    }
  },
})

/** The in-addr.arpa / ip6.arpa name of an address (what a PTR lookup asks for). */
function reverseName(ip: string): string {
  if (isIP(ip) === 4) return `${ip.split('.').reverse().join('.')}.in-addr.arpa`
  // an embedded IPv4 tail (::ffff:192.0.2.1) becomes its two hex groups
  const v6 = ip
    .toLowerCase()
    .replace(
      /(\d+)\.(\d+)\.(\d+)\.(\d+)$/,
      (_m, a, b, c, d) => `${((+a << 8) | +b).toString(16)}:${((+c << 8) | +d).toString(16)}`,
    )
  const [head = '', tail = ''] = v6.split('::')
  const groups = (s: string) => (s ? s.split(':') : [])
  const h = groups(head)
  const tl = groups(tail)
  const full = [...h, ...Array(8 - h.length - tl.length).fill('0'), ...tl].map((g) => g.padStart(4, '0')).join('')
  return `${full.split('').reverse().join('.')}.ip6.arpa`
}
