/**
 * A tiny authoritative DNS server on UDP 127.0.0.1 for the netcheck handler tests: answers from a
 * fixed zone (dns-packet encodes the wire format), NXDOMAIN for names it does not know (or a CNAME
 * leads to), NODATA
 * for known names without the asked type, SERVFAIL for names listed in `servfail` (a name, or
 * "TYPE name" for one type only), silence for
 * names in `drop`. Point DNS_SERVERS at `server` to use it.
 *
 * @example
 *   const dns = await startDnsStandIn(t, [{ name: 'example.com', type: 'A', data: '192.0.2.1' }])
 *   runInline(handler, { domain: 'example.com' }, { providers: { DNS_SERVERS: dns.server } })
 */
import { createSocket } from 'node:dgram'
import dnsPacket from 'dns-packet'

export interface ZoneRecord {
  name: string
  type: dnsPacket.RecordType
  data: unknown
  ttl?: number
}

export interface DnsStandIn {
  /** `127.0.0.1:<port>`, the DNS_SERVERS value */
  server: string
  /** questions received, in order, as `TYPE name` */
  queries: string[]
}

export async function startDnsStandIn(
  t: { teardown(fn: () => void | Promise<void>): void },
  zone: ZoneRecord[],
  opts: { servfail?: string[]; drop?: string[] } = {},
): Promise<DnsStandIn> {
  const socket = createSocket('udp4')
  const queries: string[] = []
  const norm = (n: string) => n.toLowerCase().replace(/\.$/, '')
  socket.on('message', (msg, rinfo) => {
    let req: dnsPacket.Packet
    try {
      req = dnsPacket.decode(msg)
    } catch {
      return
    }
    const q = req.questions?.[0]
    if (!q) return
    const name = norm(q.name)
    queries.push(`${q.type} ${name}`)
    if (opts.drop?.includes(name)) return
    let rcode = 0
    const answers: dnsPacket.Answer[] = []
    if (opts.servfail?.includes(name) || opts.servfail?.includes(`${q.type} ${name}`)) rcode = 2
    else {
      let current = name
      // follow CNAMEs inside the zone, as a resolver's answer would
      for (let hops = 0; hops < 8; hops++) {
        const here = zone.filter((r) => norm(r.name) === current)
        const direct = here.filter((r) => r.type === q.type)
        const cname = here.find((r) => r.type === 'CNAME')
        if (direct.length) {
          for (const r of direct)
            answers.push({
              name: current,
              type: r.type,
              ttl: r.ttl ?? 300,
              class: 'IN',
              data: r.data,
            } as dnsPacket.Answer)
          break
        }
        if (cname && q.type !== 'CNAME') {
          answers.push({
            name: current,
            type: 'CNAME',
            ttl: cname.ttl ?? 300,
            class: 'IN',
            data: cname.data,
          } as dnsPacket.Answer)
          current = norm(String(cname.data))
          continue
        }
        // NXDOMAIN, also when a CNAME leads to a name that does not exist (RFC 6604: the rcode is that of the last name)
        if (here.length === 0 && !zone.some((r) => norm(r.name).endsWith(`.${current}`))) rcode = 3
        break
      }
    }
    const res = dnsPacket.encode({
      type: 'response',
      id: req.id,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | rcode,
      questions: req.questions,
      answers,
    })
    socket.send(res, rinfo.port, rinfo.address)
  })
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => socket.close(() => resolve())))
  return { server: `127.0.0.1:${socket.address().port}`, queries }
}
