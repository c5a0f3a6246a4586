import { lookup } from 'node:dns'
import { BlockList, isIP, type LookupFunction } from 'node:net'
import { appError } from '../errors.js'
import { NON_PUBLIC_IPV4 } from './non-public-ipv4.js'

// Targets a seller's upstream (or a buyer-named URL) may not be: loopback, private, link-local
// (cloud metadata), CGNAT, unique-local, multicast and unspecified ranges, and the documentation
// and benchmarking ranges, which are not routed on the internet but do get assigned to internal
// interfaces (this very VM's eth0 is 192.0.2.2). IPv6 forms that carry an IPv4 address or reach
// one through a relay (IPv4-compatible ::/96, NAT64, 6to4 2002::/16, Teredo 2001::/32) are refused
// whole, as is the old site-local fec0::/10: none is how a public service is reached today.
const blocked = new BlockList()
for (const [net, bits] of NON_PUBLIC_IPV4) blocked.addSubnet(net, bits, 'ipv4')
for (const [net, bits] of [
  ['::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['2001::', 32],
] as const) {
  blocked.addSubnet(net, bits, 'ipv6')
}

export function isPrivateAddress(ip: string): boolean {
  const v = isIP(ip)
  if (v === 4) return blocked.check(ip, 'ipv4')
  if (v === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
    return mapped ? blocked.check(mapped[1]!, 'ipv4') : blocked.check(ip, 'ipv6')
  }
  return true
}

/**
 * Syntax and literal-address check at publish time (DNS may change later; the lookup guard covers that).
 * `param` is the request field the URL came from, so the error names what the caller sent.
 */
export function checkUpstreamUrl(raw: unknown, allowPrivate: boolean, param = 'upstream_url'): string {
  let u: URL
  try {
    u = new URL(String(raw))
  } catch {
    throw appError('invalid_parameter', { param, detail: 'expected an http or https URL' }, { details: { param } })
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw appError('invalid_parameter', { param, detail: 'expected an http or https URL' }, { details: { param } })
  if (u.username || u.password)
    throw appError(
      'invalid_parameter',
      { param, detail: 'credentials in the URL are not allowed; use forwarded headers' },
      { details: { param } },
    )
  const host = u.hostname.replace(/^\[|\]$/g, '')
  if (
    !allowPrivate &&
    (host === 'localhost' || host.endsWith('.localhost') || (isIP(host) && isPrivateAddress(host)))
  ) {
    throw appError('upstream_not_allowed', {
      detail: `${host} is a private, loopback or link-local host, refused by default; for local development start the web and proxy roles with TOLLGATE_ALLOW_PRIVATE_UPSTREAMS=true (npm start on its embedded chain sets it)`,
    })
  }
  return u.toString().replace(/\/+$/, '')
}

/**
 * A DNS lookup for undici's connector that refuses private addresses, so a host name that resolves
 * (or re-resolves) to an internal address cannot be reached.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 4)
      const list = addresses as unknown as Array<{ address: string; family: number }>
      const bad = !allowPrivate && list.some((a) => isPrivateAddress(a.address))
      if (bad || list.length === 0)
        return callback(
          Object.assign(new Error(`refused: ${hostname} resolves to a private address`), { code: 'ESSRF' }),
          '',
          4,
        )
      if ((options as { all?: boolean }).all)
        return (callback as unknown as (e: null, a: typeof list) => void)(null, list)
      callback(null, list[0]!.address, list[0]!.family)
    })
  }
}
