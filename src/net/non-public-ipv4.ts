/**
 * IPv4 ranges that are not public internet hosts: this network, private, CGNAT, loopback,
 * link-local, IETF protocol assignments, the documentation and benchmarking ranges, multicast and
 * reserved. The SSRF guard refuses them as targets; the geolocation handler answers "no location"
 * for them. Each user keeps its own IPv6 list, because the two questions differ there.
 */
export const NON_PUBLIC_IPV4: ReadonlyArray<readonly [network: string, prefix: number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
]
