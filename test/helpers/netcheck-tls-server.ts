/**
 * Local TLS (and HTTPS) servers with certificates made in the test by `selfsigned` (offline, no
 * openssl binary needed): a test CA and a leaf it signs, or a lone self-signed certificate.
 *
 * @example
 *   const ca = await makeCa('Netcheck Test CA')
 *   const leaf = await makeLeaf(ca, 'localhost', { altNames: ['localhost'], ips: ['127.0.0.1'] })
 *   const port = await startTlsServer(t, { key: leaf.key, cert: `${leaf.cert.trim()}\n${ca.cert.trim()}\n` })
 */
import { createServer as createTlsServer } from 'node:tls'
import type { AddressInfo } from 'node:net'
import selfsigned from 'selfsigned'

export interface Pems {
  key: string
  cert: string
}

/** A CA certificate (basicConstraints cA) valid from yesterday for ten years. */
export async function makeCa(cn: string): Promise<Pems> {
  const r = await selfsigned.generate(
    [
      { name: 'commonName', value: cn },
      { name: 'organizationName', value: 'Netcheck Tests' },
    ],
    {
      keyType: 'ec',
      algorithm: 'sha256',
      notBeforeDate: new Date(Date.now() - 86_400_000),
      notAfterDate: new Date(Date.now() + 3650 * 86_400_000),
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
      ],
    },
  )
  return { key: r.private, cert: r.cert }
}

/**
 * A server certificate for `cn` with the given SANs, signed by `ca` (self-signed without one),
 * valid over [notBefore, notAfter].
 */
export async function makeLeaf(
  ca: Pems | undefined,
  cn: string,
  opts: { altNames?: string[]; ips?: string[]; notBefore?: Date; notAfter?: Date } = {},
): Promise<Pems> {
  const r = await selfsigned.generate([{ name: 'commonName', value: cn }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notBeforeDate: opts.notBefore ?? new Date(Date.now() - 86_400_000),
    notAfterDate: opts.notAfter ?? new Date(Date.now() + 90 * 86_400_000),
    ...(ca ? { ca } : {}),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          ...(opts.altNames ?? []).map((value) => ({ type: 2 as const, value })),
          ...(opts.ips ?? []).map((ip) => ({ type: 7 as const, ip })),
        ],
      },
    ],
  })
  return { key: r.private, cert: r.cert }
}

/** A TLS server on 127.0.0.1 that completes the handshake and closes; resolves its port. */
export async function startTlsServer(
  t: { teardown(fn: () => void | Promise<void>): void },
  pems: Pems,
): Promise<number> {
  const server = createTlsServer({ key: pems.key, cert: pems.cert, minVersion: 'TLSv1.2' }, (socket) => socket.end())
  server.on('tlsClientError', () => undefined)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return (server.address() as AddressInfo).port
}
