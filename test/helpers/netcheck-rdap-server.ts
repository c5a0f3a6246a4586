/**
 * A stand-in RDAP service on 127.0.0.1: /domain/<name> on the "bootstrap" redirects (302, as
 * rdap.org does) to /registry/domain/<name>, which answers the RFC 9083 domain object given for
 * that name, 404 for others, or whatever `override` returns. Records every request.
 *
 * @example
 *   const rdap = await startRdapStandIn(t, { 'example.com': domainObject })
 *   runInline(handler, { domain: 'example.com' }, { providers: { RDAP_URL: rdap.url } })
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface RdapStandIn {
  url: string
  requests: Array<{ path: string; accept: string | undefined }>
  /** replaces the registry's answer while set */
  override: ((req: IncomingMessage, res: ServerResponse) => void) | null
}

export async function startRdapStandIn(
  t: { teardown(fn: () => void | Promise<void>): void },
  domains: Record<string, unknown>,
): Promise<RdapStandIn> {
  const standIn: RdapStandIn = { url: '', requests: [], override: null }
  const server = createServer((req, res) => {
    const path = req.url ?? ''
    standIn.requests.push({ path, accept: req.headers.accept })
    const boot = /^\/domain\/([^/?]+)$/.exec(path)
    if (boot) {
      res.writeHead(302, { location: `/registry/domain/${boot[1]}` }).end()
      return
    }
    if (standIn.override) return standIn.override(req, res)
    const reg = /^\/registry\/domain\/([^/?]+)$/.exec(path)
    const data = reg ? domains[decodeURIComponent(reg[1]!)] : undefined
    if (!data) {
      res
        .writeHead(404, { 'content-type': 'application/rdap+json' })
        .end(JSON.stringify({ errorCode: 404, title: 'Not Found' }))
      return
    }
    res.writeHead(200, { 'content-type': 'application/rdap+json' }).end(JSON.stringify(data))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  standIn.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return standIn
}

/** An RFC 9083 domain object shaped like a gTLD registry's (Verisign-style) answer. */
export function rdapDomain(
  name: string,
  opts: { registered: string; expires: string; lastChanged?: string; signed?: boolean; registrar?: string },
): Record<string, unknown> {
  return {
    objectClassName: 'domain',
    handle: `${name.toUpperCase()}-HANDLE`,
    ldhName: name.toUpperCase(),
    links: [
      {
        value: `https://rdap.example/domain/${name}`,
        rel: 'self',
        href: `https://rdap.example/domain/${name}`,
        type: 'application/rdap+json',
      },
    ],
    status: ['client delete prohibited', 'client transfer prohibited', 'client update prohibited'],
    entities: [
      {
        objectClassName: 'entity',
        handle: '376',
        roles: ['registrar'],
        publicIds: [{ type: 'IANA Registrar ID', identifier: '376' }],
        vcardArray: [
          'vcard',
          [
            ['version', {}, 'text', '4.0'],
            ['fn', {}, 'text', opts.registrar ?? 'RESERVED-Internet Assigned Numbers Authority'],
          ],
        ],
        entities: [
          {
            objectClassName: 'entity',
            roles: ['abuse'],
            vcardArray: [
              'vcard',
              [
                ['version', {}, 'text', '4.0'],
                ['fn', {}, 'text', ''],
                ['tel', { type: 'voice' }, 'uri', 'tel:+1.3108239358'],
                ['email', {}, 'text', 'abuse@registrar.example'],
              ],
            ],
          },
        ],
      },
      {
        objectClassName: 'entity',
        roles: ['registrant'],
        vcardArray: [
          'vcard',
          [
            ['version', {}, 'text', '4.0'],
            ['fn', {}, 'text', ''],
            ['org', {}, 'text', 'Example Org'],
            ['adr', { cc: 'US' }, 'text', ['', '', '', '', 'CA', '', '']],
          ],
        ],
      },
    ],
    events: [
      { eventAction: 'registration', eventDate: opts.registered },
      { eventAction: 'expiration', eventDate: opts.expires },
      ...(opts.lastChanged ? [{ eventAction: 'last changed', eventDate: opts.lastChanged }] : []),
      { eventAction: 'last update of RDAP database', eventDate: '2026-11-23T10:00:00Z' },
    ],
    secureDNS: opts.signed
      ? {
          delegationSigned: true,
          dsData: [
            {
              keyTag: 370,
              algorithm: 13,
              digestType: 2,
              digest: 'BE74359954660069D5C63D200C39F5603827D7DD02B56F120EE9F3A86764247C',
            },
          ],
        }
      : { delegationSigned: false },
    nameservers: [
      { objectClassName: 'nameserver', ldhName: 'A.IANA-SERVERS.NET' },
      { objectClassName: 'nameserver', ldhName: 'B.IANA-SERVERS.NET' },
    ],
    port43: 'whois.example',
  }
}
