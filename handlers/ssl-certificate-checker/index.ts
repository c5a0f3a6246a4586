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
    example: {
      host: 'example.com',
      port: 38907,
      address: '127.0.0.1',
      servername: 'example.com',
      protocol: 'TLSv1.3',
      cipher: { name: 'TLS_AES_256_GCM_SHA384', standardName: 'TLS_AES_256_GCM_SHA384', version: 'TLSv1.3' },
      authorized: false,
      authorizationError: 'SELF_SIGNED_CERT_IN_CHAIN',
      hostnameMatches: true,
      hostnameMismatchReason: null,
      certificate: {
        subject: 'CN=example.com',
        subjectCommonName: 'example.com',
        issuer: 'CN=Netcheck Test CA, O=Netcheck Tests',
        issuerCommonName: 'Netcheck Test CA',
        serialNumber: '7BB3E3E3A059D4F1AD',
        validFrom: '2026-11-27T12:37:31.000Z',
        validTo: '2026-12-29T00:37:31.000Z',
        fingerprintSha256:
          '70:9C:AD:E0:6E:8C:8C:E7:F0:5C:07:3B:78:D0:F0:E0:8B:FB:B4:C6:E7:9D:66:C2:CA:A4:82:5F:56:2C:4A:C1',
        subjectAltNames: ['DNS:example.com', 'DNS:www.example.com'],
        isCA: false,
        selfSigned: false,
        publicKey: { type: 'ec', bits: null, curve: 'prime256v1' },
      },
      validity: {
        notBefore: '2026-11-27T12:37:31.000Z',
        notAfter: '2026-12-29T00:37:31.000Z',
        daysLeft: 30,
        expired: false,
        notYetValid: false,
      },
      chain: [
        {
          subject: 'CN=example.com',
          subjectCommonName: 'example.com',
          issuer: 'CN=Netcheck Test CA, O=Netcheck Tests',
          issuerCommonName: 'Netcheck Test CA',
          serialNumber: '7BB3E3E3A059D4F1AD',
          validFrom: '2026-11-27T12:37:31.000Z',
          validTo: '2026-12-29T00:37:31.000Z',
          fingerprintSha256:
            '70:9C:AD:E0:6E:8C:8C:E7:F0:5C:07:3B:78:D0:F0:E0:8B:FB:B4:C6:E7:9D:66:C2:CA:A4:82:5F:56:2C:4A:C1',
          subjectAltNames: ['DNS:example.com', 'DNS:www.example.com'],
          isCA: false,
          selfSigned: false,
          publicKey: { type: 'ec', bits: null, curve: 'prime256v1' },
        },
        {
          subject: 'CN=Netcheck Test CA, O=Netcheck Tests',
          subjectCommonName: 'Netcheck Test CA',
          issuer: 'CN=Netcheck Test CA, O=Netcheck Tests',
          issuerCommonName: 'Netcheck Test CA',
          serialNumber: '427A4BBF8FCC5781D3',
          validFrom: '2026-11-27T12:37:30.000Z',
          validTo: '2036-11-25T12:37:30.000Z',
          fingerprintSha256:
            '8C:D3:4C:D0:49:FC:82:DE:4C:2E:2E:8C:A6:D3:07:26:D9:AB:A8:8D:2B:0A:5F:66:4C:4F:E8:38:75:E7:B9:E8',
          subjectAltNames: [],
          isCA: true,
          selfSigned: true,
          publicKey: { type: 'ec', bits: null, curve: 'prime256v1' },
        },
      ],
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
