import { isIP } from 'node:net'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import { normalizeDomain } from '../_shared/netcheck-dns.js'
import { inspectTls } from '../_shared/netcheck-tls.js'
import { parsePublicUrl } from '../_shared/outbound.js'

interface Input {
  host: string
  port: number
}

export default defineHandler<Input>({
  slug: 'ssl-certificate-checker',
  description:
    'Connect to a host over TLS and report its certificate: subject, issuer, SANs, validity dates and days left, hostname match, the chain as presented, protocol, cipher, and whether it verifies. Expired or self-signed certificates are reported, not refused.',
  network: true,
  inputSchema: {
    type: 'object',
    required: ['host'],
    additionalProperties: false,
    properties: {
      host: {
        type: 'string',
        minLength: 1,
        maxLength: 300,
        description:
          'Host name or IP address to check, e.g. "example.com"; an https:// URL is accepted too (its host and port are used).',
      },
      port: {
        type: 'integer',
        minimum: 1,
        maximum: 65535,
        default: 443,
        description: 'TCP port of the TLS service (default 443). A port in a URL given as host takes precedence.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'host, port, address (the IP connected to), servername (SNI), protocol (e.g. TLSv1.3), cipher { name, standardName, version }, authorized (chain verified against the Node.js/Mozilla trust store and name matched), authorizationError (OpenSSL code such as CERT_HAS_EXPIRED, DEPTH_ZERO_SELF_SIGNED_CERT or null), hostnameMatches and hostnameMismatchReason, certificate { subject, subjectCommonName, issuer, issuerCommonName, serialNumber, validFrom, validTo, fingerprintSha256, subjectAltNames, isCA, selfSigned, publicKey { type, bits, curve } }, validity { notBefore, notAfter, daysLeft (whole days, negative once expired), expired, notYetValid }, chain (leaf first, as built from the certificates the server sent; a trusted root from the local store may end it).',
    schema: {
      type: 'object',
      properties: {
        host: { type: 'string' },
        port: { type: 'integer' },
        address: { type: 'string' },
        servername: { type: ['string', 'null'] },
        protocol: { type: ['string', 'null'] },
        cipher: { type: 'object' },
        authorized: { type: 'boolean' },
        authorizationError: { type: ['string', 'null'] },
        hostnameMatches: { type: 'boolean' },
        hostnameMismatchReason: { type: ['string', 'null'] },
        certificate: { type: 'object' },
        validity: { type: 'object' },
        chain: { type: 'array' },
      },
    },
  },
  example: { host: 'example.com', port: 443 },
  async run(input, ctx) {
    let host = input.host.trim()
    let port = input.port
    if (host.includes('://')) {
      const u = parsePublicUrl(host, 'host')
      if (u.protocol !== 'https:')
        throw new HandlerInputError('host', 'host: only https:// URLs carry a TLS certificate')
      host = u.hostname.replace(/^\[|\]$/g, '')
      if (u.port) port = Number(u.port)
    }
    host = isIP(host.replace(/^\[|\]$/g, ''))
      ? host.replace(/^\[|\]$/g, '')
      : normalizeDomain(host, 'host', { requireDot: false })
    return { body: await inspectTls(host, port, ctx, { field: 'host', timeoutMs: 8_000 }) }
  },
})
