import { BlockList, isIP } from 'node:net'
import { NON_PUBLIC_IPV4 } from '../../src/net/non-public-ipv4.js'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

/** Version of the MaxMind GeoLite2 snapshot bundled in the geoip-lite npm package we ship (see its data/*.checksum). */
const DATA_SOURCE = 'MaxMind GeoLite2 City, 2023-11-15 snapshot bundled in geoip-lite 1.4.10 (offline)'
const ATTRIBUTION =
  'This product includes GeoLite2 data created by MaxMind, available from https://www.maxmind.com (CC BY-SA 4.0).'

/** Ranges that have no geographic location: private, loopback, link-local, CGNAT, documentation, multicast, reserved. */
const nonPublic = new BlockList()
for (const [net, bits] of NON_PUBLIC_IPV4) nonPublic.addSubnet(net, bits, 'ipv4')
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['64:ff9b:1::', 48],
  ['100::', 64],
] as const) {
  nonPublic.addSubnet(net, bits, 'ipv6')
}

interface Input {
  ip: string
}

export default defineHandler<Input>({
  slug: 'ip-geolocation',
  description:
    'Locate an IPv4 or IPv6 address from an offline GeoLite2 database: country, region, city, coordinates with accuracy radius, time zone and EU membership. City-level answers are approximate; no network lookups.',
  inputSchema: {
    type: 'object',
    required: ['ip'],
    additionalProperties: false,
    properties: {
      ip: {
        type: 'string',
        minLength: 2,
        maxLength: 45,
        description: 'an IPv4 (e.g. 8.8.8.8) or IPv6 (e.g. 2001:4860:4860::8888) address',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'found (false for private/reserved or unknown addresses, with a reason), country (ISO 3166-1 alpha-2), region (ISO 3166-2 subdivision code), city, latitude, longitude, accuracyRadiusKm, timezone, eu, source and attribution',
    schema: {
      type: 'object',
      properties: {
        ip: { type: 'string' },
        version: { type: 'integer' },
        found: { type: 'boolean' },
        reason: { type: 'string' },
        country: { type: ['string', 'null'] },
        region: { type: ['string', 'null'] },
        city: { type: ['string', 'null'] },
        latitude: { type: ['number', 'null'] },
        longitude: { type: ['number', 'null'] },
        accuracyRadiusKm: { type: ['number', 'null'] },
        timezone: { type: ['string', 'null'] },
        eu: { type: ['boolean', 'null'] },
        source: { type: 'string' },
        attribution: { type: 'string' },
      },
    },
    example: {
      ip: '8.8.8.8',
      version: 4,
      source: 'MaxMind GeoLite2 City, 2023-11-15 snapshot bundled in geoip-lite 1.4.10 (offline)',
      attribution:
        'This product includes GeoLite2 data created by MaxMind, available from https://www.maxmind.com (CC BY-SA 4.0).',
      found: true,
      country: 'US',
      region: null,
      city: null,
      latitude: 37.751,
      longitude: -97.822,
      accuracyRadiusKm: 1000,
      timezone: 'America/Chicago',
      eu: false,
    },
  },
  example: { ip: '8.8.8.8' },
  async run(input) {
    const ip = input.ip.trim()
    const version = isIP(ip)
    if (version === 0) throw new HandlerInputError('ip', 'ip is not a valid IPv4 or IPv6 address')
    const meta = { ip, version, source: DATA_SOURCE, attribution: ATTRIBUTION }
    if (nonPublic.check(ip, version === 4 ? 'ipv4' : 'ipv6'))
      return { body: { ...meta, found: false, reason: 'private or reserved address' } }
    // geoip-lite reads its bundled data files once, on first import (≈150 MB, kept per worker)
    const { default: geoip } = await import('geoip-lite')
    const hit = geoip.lookup(ip)
    if (!hit) return { body: { ...meta, found: false, reason: 'address not in the database' } }
    return {
      body: {
        ...meta,
        found: true,
        country: hit.country || null,
        region: hit.region || null,
        city: hit.city || null,
        latitude: hit.ll?.[0] ?? null,
        longitude: hit.ll?.[1] ?? null,
        accuracyRadiusKm: hit.area || null,
        timezone: hit.timezone || null,
        eu: hit.eu === '1',
      },
    }
  },
})
