import { defineHandler } from '../../src/pool/handler-contract.js'
import { normalizeDomain } from '../_shared/netcheck-dns.js'
import { lookupRdap, summarizeRdap } from '../_shared/netcheck-rdap.js'
import { providerSetting } from '../_shared/outbound.js'

interface Input {
  domain: string
}

export default defineHandler<Input>({
  slug: 'domain-intelligence-whois',
  description:
    'Registration data of a domain from RDAP (the JSON successor of WHOIS): registrar, registration, expiry and last-changed dates, age, status codes, nameservers and DNSSEC.',
  providers: ['RDAP_URL'],
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
        description: 'The registered domain, e.g. "example.com" (not a subdomain: registries only know registrations).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'found (false when the registry has no such registration or the TLD has no RDAP service), domain, unicodeName, handle, registrar { name, ianaId, url, abuseEmail, abusePhone }, registrant { name, organization, country } (null when redacted, as it usually is), dates { registered, expires, lastChanged, lastRdapUpdate } (ISO 8601), ageDays, daysUntilExpiry, status (RDAP/EPP status values), nameservers, dnssec { delegationSigned, dsRecords }, rdapServer (host that answered), source. Fields the registry does not publish are null.',
    schema: {
      type: 'object',
      properties: {
        found: { type: 'boolean' },
        domain: { type: ['string', 'null'] },
        registrar: { type: ['object', 'null'] },
        registrant: { type: ['object', 'null'] },
        dates: { type: 'object' },
        ageDays: { type: ['integer', 'null'] },
        daysUntilExpiry: { type: ['integer', 'null'] },
        status: { type: 'array', items: { type: 'string' } },
        nameservers: { type: 'array', items: { type: 'string' } },
        dnssec: { type: 'object' },
        rdapServer: { type: 'string' },
        source: { type: 'string' },
      },
    },
    example: {
      found: true,
      domain: 'example.com',
      unicodeName: null,
      handle: 'EXAMPLE.COM-HANDLE',
      registrar: {
        name: 'RESERVED-Internet Assigned Numbers Authority',
        ianaId: '376',
        url: null,
        abuseEmail: 'abuse@registrar.example.com',
        abusePhone: '+1.3108239358',
      },
      registrant: { name: null, organization: 'Example Org', country: 'US' },
      dates: {
        registered: '2024-03-03T11:24:40.171Z',
        expires: '2027-03-08T13:24:40.171Z',
        lastChanged: '2026-08-14T07:01:44.000Z',
        lastRdapUpdate: '2026-11-23T10:00:00.000Z',
      },
      ageDays: 1000,
      daysUntilExpiry: 100,
      status: ['client delete prohibited', 'client transfer prohibited', 'client update prohibited'],
      nameservers: ['a.iana-servers.net', 'b.iana-servers.net'],
      dnssec: { delegationSigned: true, dsRecords: 1 },
      rdapServer: 'rdap.example.com',
      source: 'RDAP (RFC 9083) via the configured bootstrap service',
    },
  },
  example: { domain: 'example.com' },
  async run(input, ctx) {
    const domain = normalizeDomain(input.domain, 'domain')
    const base = providerSetting(ctx, 'RDAP_URL', 'domain registration look-ups')
    const r = await lookupRdap(base, domain)
    const source = 'RDAP (RFC 9083) via the configured bootstrap service'
    if (!r.found) {
      return {
        body: {
          found: false,
          domain,
          reason:
            'the registry has no registration of this name (or its TLD offers no RDAP service); for a subdomain, ask for the registered domain',
          rdapServer: r.server,
          source,
        },
      }
    }
    return { body: { found: true, ...summarizeRdap(r.data, new Date()), rdapServer: r.server, source } }
  },
})
