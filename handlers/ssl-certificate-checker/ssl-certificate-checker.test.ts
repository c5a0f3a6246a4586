import { X509Certificate } from 'node:crypto'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { makeCa, makeLeaf, startTlsServer } from '../../test/helpers/netcheck-tls-server.js'
import handler from './index.js'

const DAY = 86_400_000

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('a leaf signed by a test CA, chain presented', async (t) => {
  const ca = await makeCa('Netcheck Test CA')
  const notAfter = new Date(Date.now() + 30.5 * DAY)
  const leaf = await makeLeaf(ca, 'localhost', {
    altNames: ['localhost', 'www.localhost'],
    ips: ['127.0.0.1'],
    notAfter,
  })
  const port = await startTlsServer(t, { key: leaf.key, cert: `${leaf.cert.trim()}\n${ca.cert.trim()}\n` })
  const expected = new X509Certificate(leaf.cert)

  const out = okBody(await runInline(handler, { host: 'localhost', port }))
  t.equal(out.host, 'localhost')
  t.equal(out.port, port)
  t.equal(out.address, '127.0.0.1')
  t.equal(out.servername, 'localhost')
  t.match(out.protocol, /^TLSv1\.[23]$/)
  t.type(out.cipher.name, 'string')
  t.equal(out.certificate.subjectCommonName, 'localhost')
  t.equal(out.certificate.issuerCommonName, 'Netcheck Test CA')
  t.match(out.certificate.issuer, /O=Netcheck Tests/)
  t.same(out.certificate.subjectAltNames, ['DNS:localhost', 'DNS:www.localhost', 'IP Address:127.0.0.1'])
  t.equal(out.certificate.fingerprintSha256, expected.fingerprint256)
  t.equal(out.certificate.serialNumber, expected.serialNumber)
  t.equal(out.certificate.selfSigned, false)
  t.equal(out.certificate.isCA, false)
  t.match(out.certificate.publicKey, { type: 'ec', curve: 'prime256v1' })
  t.equal(out.validity.notAfter, new Date(expected.validTo).toISOString())
  t.equal(out.validity.daysLeft, 30)
  t.equal(out.validity.expired, false)
  t.equal(out.hostnameMatches, true)
  t.equal(out.authorized, false, 'the test CA is not in the trust store')
  t.match(
    out.authorizationError,
    /UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|SELF_SIGNED_CERT_IN_CHAIN/,
  )
  t.equal(out.chain.length, 2, 'leaf and the CA the server sent')
  t.equal(out.chain[1].subjectCommonName, 'Netcheck Test CA')
  t.equal(out.chain[1].isCA, true)
  t.equal(out.chain[1].selfSigned, true)

  const byIp = okBody(await runInline(handler, { host: `https://127.0.0.1:${port}/some/path` }))
  t.equal(byIp.servername, null, 'no SNI for an address')
  t.equal(byIp.port, port, 'the port of the URL is used')
  t.equal(byIp.hostnameMatches, true, 'the IP SAN matches')
})

t.test('an expired self-signed certificate with another name is reported, not refused', async (t) => {
  const old = await makeLeaf(undefined, 'old.example', {
    altNames: ['old.example'],
    notBefore: new Date(Date.now() - 400 * DAY),
    notAfter: new Date(Date.now() - 10.5 * DAY),
  })
  const port = await startTlsServer(t, old)
  const out = okBody(await runInline(handler, { host: 'localhost', port }, { from: 'query' }))
  t.equal(out.validity.expired, true)
  t.equal(out.validity.daysLeft, -11)
  t.equal(out.certificate.selfSigned, true)
  t.equal(out.authorized, false)
  t.equal(out.authorizationError, 'CERT_HAS_EXPIRED')
  t.equal(out.hostnameMatches, false)
  t.match(out.hostnameMismatchReason, /old\.example/)
  t.equal(out.chain.length, 1)
})

t.test('no TLS on the port: 502', async (t) => {
  const plain = createServer((s) => s.end('SSH-2.0-not-tls\r\n'))
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve))
  t.teardown(() => plain.close())
  await t.rejects(runInline(handler, { host: '127.0.0.1', port: (plain.address() as AddressInfo).port }), {
    name: 'HandlerUpstreamError',
    code: 'upstream_failed',
  })
  const closed = createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const closedPort = (closed.address() as AddressInfo).port
  await new Promise<void>((resolve) => closed.close(() => resolve()))
  await t.rejects(runInline(handler, { host: '127.0.0.1', port: closedPort }), {
    code: 'upstream_failed',
    message: /ECONNREFUSED/,
  })
})

t.test('private and loopback targets are refused outside tests', async (t) => {
  t.match(await runInline(handler, { host: '127.0.0.1', port: 443 }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'host',
  })
  t.match(await runInline(handler, { host: 'localhost' }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'host',
  })
  t.match(await runInline(handler, { host: 'https://10.0.0.1/' }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'host',
  })
})

t.test('bad input names the field', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'host' })
  t.match(await runInline(handler, { host: '' }), { ok: false, status: 400, field: 'host' })
  t.match(await runInline(handler, { host: 'bad host!' }), { ok: false, status: 400, field: 'host' })
  t.match(await runInline(handler, { host: 'http://example.com' }), { ok: false, status: 400, field: 'host' })
  t.match(await runInline(handler, { host: 'example.com', port: 0 }), { ok: false, status: 400, field: 'port' })
  t.match(await runInline(handler, { host: 'example.com', port: 70000 }), { ok: false, status: 400, field: 'port' })
  t.match(await runInline(handler, { host: 'x'.repeat(301) }), { ok: false, status: 400, field: 'host' })
})
