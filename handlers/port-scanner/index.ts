import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import { normalizeDomain } from '../_shared/netcheck-dns.js'
import { connectPublic, errorCode, resolvePublicHost } from '../_shared/outbound.js'
import { isIP } from 'node:net'

/** Scanned when the buyer names no ports: 20 commonly exposed TCP services. */
const DEFAULT_PORTS = [
  21, 22, 23, 25, 53, 80, 110, 143, 443, 445, 465, 587, 993, 995, 3306, 3389, 5432, 6379, 8080, 8443,
]
const MAX_PORTS = 20
const CONCURRENCY = 10
const CONNECT_TIMEOUT_MS = 2_000

/** IANA service names (service-names-port-numbers registry) of well-known TCP ports; other ports get null. */
const SERVICES: Record<number, string> = {
  20: 'ftp-data',
  21: 'ftp',
  22: 'ssh',
  23: 'telnet',
  25: 'smtp',
  53: 'domain',
  80: 'http',
  110: 'pop3',
  111: 'sunrpc',
  119: 'nntp',
  123: 'ntp',
  135: 'msrpc',
  139: 'netbios-ssn',
  143: 'imap',
  161: 'snmp',
  179: 'bgp',
  389: 'ldap',
  443: 'https',
  445: 'microsoft-ds',
  465: 'submissions',
  514: 'shell',
  587: 'submission',
  631: 'ipp',
  636: 'ldaps',
  873: 'rsync',
  993: 'imaps',
  995: 'pop3s',
  1433: 'ms-sql-s',
  1521: 'ncube-lm (Oracle)',
  1723: 'pptp',
  2049: 'nfs',
  2375: 'docker',
  2376: 'docker-s',
  3000: 'hbci (often Node.js dev servers)',
  3306: 'mysql',
  3389: 'ms-wbt-server (RDP)',
  5060: 'sip',
  5432: 'postgresql',
  5672: 'amqp',
  5900: 'rfb (VNC)',
  6379: 'redis',
  6443: 'sun-sr-https (often Kubernetes API)',
  8000: 'irdmi (often HTTP)',
  8080: 'http-alt',
  8443: 'pcsync-https (often HTTPS)',
  9200: 'wap-wsp (often Elasticsearch)',
  11211: 'memcache',
  27017: 'mongodb',
}

type State = 'open' | 'closed' | 'filtered'

interface Input {
  host: string
  ports?: number[]
}

export default defineHandler<Input>({
  slug: 'port-scanner',
  // probes of third-party hosts come from the platform's addresses: a ceiling for the whole platform
  rateLimit: { requests: 60, perSeconds: 60 },
  description: `TCP connect scan of up to ${MAX_PORTS} ports on one public host: open, closed or filtered per port, with the usual service name. Default: ${DEFAULT_PORTS.length} common service ports.`,
  network: true,
  inputSchema: {
    type: 'object',
    required: ['host'],
    additionalProperties: false,
    properties: {
      host: {
        type: 'string',
        minLength: 1,
        maxLength: 253,
        description: 'One host name or IP address, e.g. "scanme.nmap.org"; only public addresses are scanned.',
      },
      ports: {
        type: 'array',
        items: { type: 'integer', minimum: 1, maximum: 65535 },
        minItems: 1,
        maxItems: MAX_PORTS,
        uniqueItems: true,
        description: `TCP ports to check (at most ${MAX_PORTS}). Default: ${DEFAULT_PORTS.join(', ')}.`,
      },
    },
  },
  output: {
    contentType: 'application/json',
    description: `host, address (the IP scanned: the first IPv4 the host resolves to, else the first IPv6), ports [{ port, state, service, reason }] in the order asked: open (the TCP handshake completed; the connection is closed at once, nothing is sent), closed (refused: RST), filtered (no answer within ${CONNECT_TIMEOUT_MS / 1000} s, or unreachable); service is the IANA name of the port, not a probe of what actually listens. summary { open, closed, filtered }, connectTimeoutMs, concurrency.`,
    schema: {
      type: 'object',
      properties: {
        host: { type: 'string' },
        address: { type: 'string' },
        ports: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              port: { type: 'integer' },
              state: { type: 'string', enum: ['open', 'closed', 'filtered'] },
              service: { type: ['string', 'null'] },
              reason: { type: 'string' },
            },
          },
        },
        summary: { type: 'object' },
        connectTimeoutMs: { type: 'integer' },
        concurrency: { type: 'integer' },
      },
    },
    example: {
      host: 'example.com',
      address: '93.184.215.14',
      ports: [
        { port: 80, state: 'open', reason: 'TCP handshake completed', service: 'http' },
        { port: 443, state: 'open', reason: 'TCP handshake completed', service: 'https' },
        { port: 22, state: 'filtered', reason: 'no answer within 2000 ms', service: 'ssh' },
      ],
      summary: { open: 2, closed: 0, filtered: 1 },
      connectTimeoutMs: 2000,
      concurrency: 10,
    },
  },
  example: { host: 'example.com', ports: [80, 443, 22] },
  async run(input, ctx) {
    const raw = input.host.trim().replace(/^\[|\]$/g, '')
    if (raw.includes('/') || raw.includes('://'))
      throw new HandlerInputError('host', 'host must be one host name or IP address, not a URL or a range')
    const host = isIP(raw) ? raw : normalizeDomain(raw, 'host', { requireDot: false })
    const addrs = await resolvePublicHost(host, ctx, 'host')
    const address = (addrs.find((a) => a.family === 4) ?? addrs[0]!).address
    const ports = input.ports ?? DEFAULT_PORTS
    const results: Array<{ port: number; state: State; service: string | null; reason: string }> = new Array(
      ports.length,
    )
    let next = 0
    const worker = async () => {
      while (next < ports.length) {
        const i = next++
        const port = ports[i]!
        results[i] = { port, ...(await probe(address, port)), service: SERVICES[port] ?? null }
      }
    }
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, ports.length) }, worker))
    const count = (s: State) => results.filter((r) => r.state === s).length
    return {
      body: {
        host,
        address,
        ports: results,
        summary: { open: count('open'), closed: count('closed'), filtered: count('filtered') },
        connectTimeoutMs: CONNECT_TIMEOUT_MS,
        concurrency: CONCURRENCY,
      },
    }
  },
})

async function probe(address: string, port: number): Promise<{ state: State; reason: string }> {
  try {
    const socket = await connectPublic(address, port, { timeoutMs: CONNECT_TIMEOUT_MS })
    socket.destroy()
    return { state: 'open', reason: 'TCP handshake completed' }
  } catch (err) {
    const code = errorCode(err)
    if (code === 'ECONNREFUSED' || code === 'ECONNRESET')
      return { state: 'closed', reason: `connection refused (${code})` }
    if (code === 'ETIMEDOUT') return { state: 'filtered', reason: `no answer within ${CONNECT_TIMEOUT_MS} ms` }
    return { state: 'filtered', reason: `unreachable (${code})` }
  }
}
