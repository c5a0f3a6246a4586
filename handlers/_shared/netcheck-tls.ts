/**
 * A TLS handshake with a buyer-named public host that reports its certificate instead of judging
 * it: the chain is verified against Node's trust store, but not enforced, so expired, self-signed
 * or mismatched certificates come back as findings (authorized: false + authorizationError).
 * Used by ssl-certificate-checker and domain-trust-score.
 *
 * @example
 *   const report = await inspectTls('example.com', 443, ctx, { field: 'host' })
 */
import { isIP } from 'node:net'
import { X509Certificate } from 'node:crypto'
import { checkServerIdentity, type DetailedPeerCertificate, type TLSSocket } from 'node:tls'
import { HandlerUpstreamError, type HandlerContext } from '../../src/pool/handler-contract.js'
import { connectPublic, errorCode, resolvePublicHost } from './outbound.js'

const DAY_MS = 86_400_000

export interface CertificateInfo {
  subject: string
  subjectCommonName: string | null
  issuer: string
  issuerCommonName: string | null
  serialNumber: string
  validFrom: string
  validTo: string
  fingerprintSha256: string
  /** DNS:/IP Address: entries of the subjectAltName extension, as Node prints them */
  subjectAltNames: string[]
  isCA: boolean
  selfSigned: boolean
  publicKey: { type: string | null; bits: number | null; curve: string | null }
}

export interface TlsReport {
  host: string
  port: number
  /** the address connected to (the first the host resolved to) */
  address: string
  /** SNI sent (null for an IP address) */
  servername: string | null
  protocol: string | null
  cipher: { name: string; standardName: string; version: string }
  /** true when the chain verified against Node's trust store and the name matched */
  authorized: boolean
  authorizationError: string | null
  hostnameMatches: boolean
  hostnameMismatchReason: string | null
  certificate: CertificateInfo
  validity: { notBefore: string; notAfter: string; daysLeft: number; expired: boolean; notYetValid: boolean }
  /** leaf first, then each issuer as Node builds it from the certificates the server sent (a root from the local trust store may end it) */
  chain: CertificateInfo[]
}

/** Connects (TLS, verification reported, not enforced) and describes the certificate the host presents. */
export async function inspectTls(
  host: string,
  port: number,
  ctx: HandlerContext,
  opts: { field: string; timeoutMs?: number; now?: Date },
): Promise<TlsReport> {
  const addrs = await resolvePublicHost(host, ctx, opts.field)
  const address = (addrs.find((a) => a.family === 4) ?? addrs[0]!).address
  const servername = isIP(host) ? null : host
  let socket: TLSSocket
  try {
    socket = (await connectPublic(address, port, {
      timeoutMs: opts.timeoutMs ?? 8_000,
      tls: { servername: servername ?? undefined, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] },
    })) as TLSSocket
  } catch (err) {
    throw new HandlerUpstreamError('upstream_failed', `no TLS handshake with ${host}:${port} (${errorCode(err)})`)
  }
  try {
    const peer = socket.getPeerCertificate(true) as DetailedPeerCertificate
    if (!peer || !peer.raw)
      throw new HandlerUpstreamError('upstream_failed', `${host}:${port} presented no certificate`)
    const chain: CertificateInfo[] = []
    const seen = new Set<string>()
    for (
      let c: DetailedPeerCertificate | undefined = peer;
      c && c.raw && !seen.has(c.fingerprint256) && chain.length < 10;
      c = c.issuerCertificate
    ) {
      seen.add(c.fingerprint256)
      chain.push(describe(c))
    }
    const leaf = chain[0]!
    const mismatch = checkServerIdentity(host, peer)
    const now = (opts.now ?? new Date()).getTime()
    const notBefore = new Date(leaf.validFrom)
    const notAfter = new Date(leaf.validTo)
    const cipher = socket.getCipher()
    return {
      host,
      port,
      address,
      servername,
      protocol: socket.getProtocol(),
      cipher: { name: cipher.name, standardName: cipher.standardName, version: cipher.version },
      authorized: socket.authorized,
      authorizationError: socket.authorizationError ? String(socket.authorizationError) : null,
      hostnameMatches: mismatch === undefined,
      hostnameMismatchReason: mismatch ? mismatch.message : null,
      certificate: leaf,
      validity: {
        notBefore: notBefore.toISOString(),
        notAfter: notAfter.toISOString(),
        daysLeft: Math.floor((notAfter.getTime() - now) / DAY_MS),
        expired: notAfter.getTime() < now,
        notYetValid: notBefore.getTime() > now,
      },
      chain,
    }
  } finally {
    socket.destroy()
  }
}

function describe(c: DetailedPeerCertificate): CertificateInfo {
  const x = new X509Certificate(c.raw)
  const key = x.publicKey
  const details = key.asymmetricKeyDetails ?? {}
  return {
    subject: x.subject.split('\n').join(', '),
    subjectCommonName: firstString(c.subject?.CN),
    issuer: x.issuer.split('\n').join(', '),
    issuerCommonName: firstString(c.issuer?.CN),
    serialNumber: x.serialNumber,
    validFrom: new Date(x.validFrom).toISOString(),
    validTo: new Date(x.validTo).toISOString(),
    fingerprintSha256: x.fingerprint256,
    subjectAltNames: x.subjectAltName ? x.subjectAltName.split(', ').filter(Boolean) : [],
    isCA: x.ca,
    selfSigned: x.subject === x.issuer && x.verify(key),
    publicKey: {
      type: key.asymmetricKeyType ?? null,
      bits: details.modulusLength ?? null,
      curve: details.namedCurve ?? null,
    },
  }
}

const firstString = (v: string | string[] | undefined): string | null =>
  Array.isArray(v) ? (v[0] ?? null) : (v ?? null)
