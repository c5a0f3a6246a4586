import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer, type Server } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { startDnsStandIn } from '../../test/helpers/netcheck-dns-server.js'
import { rdapDomain, startRdapStandIn } from '../../test/helpers/netcheck-rdap-server.js'
import { makeCa, makeLeaf } from '../../test/helpers/netcheck-tls-server.js'
import handler from './index.js'

const byName = (out: Record<string, any>) => Object.fromEntries(out.components.map((c: any) => [c.name, c]))
const DAY = 86_400_000

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

/** Listens on a fixed port of 127.0.0.1; null when the port is taken or not allowed. */
async function listenFixed(server: Server, port: number): Promise<Server | null> {
  return new Promise((resolve) => {
    server.once('error', () => resolve(null))
    server.listen(port, '127.0.0.1', () => resolve(server))
  })
}

// the handler checks the standard ports (443 for TLS and headers, 80 for the redirect) of the
// domain, so the web part runs against servers on 127.0.0.1:80/443 of "localhost"
t.test('web, DNS and RDAP signals of localhost', async (t) => {
  const ca = await makeCa('Netcheck Trust CA')
  const leaf = await makeLeaf(ca, 'localhost', { altNames: ['localhost'], ips: ['127.0.0.1'] })
  const https = await listenFixed(
    createHttpsServer({ key: leaf.key, cert: `${leaf.cert.trim()}\n${ca.cert.trim()}\n` }, (_req, res) => {
      res
        .writeHead(200, {
          'strict-transport-security': 'max-age=31536000',
          'content-security-policy': "default-src 'self'; frame-ancestors 'none'",
          'x-content-type-options': 'nosniff',
          'content-type': 'text/html',
        })
        .end('<h1>ok</h1>')
    }),
    443,
  )
  let location = 'https://localhost/'
  const http = await listenFixed(
    createHttpServer((_req, res) => res.writeHead(301, { location }).end()),
    80,
  )
  t.teardown(() => {
    https?.close()
    http?.close()
  })
  if (!https || !http) {
    t.skip('127.0.0.1:80 or :443 is in use or not allowed here', async () => undefined)
    return
  }
  const dns = await startDnsStandIn(t, [
    { name: 'localhost', type: 'TXT', data: 'v=spf1 ip4:192.0.2.0/24 -all' },
    { name: '_dmarc.localhost', type: 'TXT', data: 'v=DMARC1; p=reject; rua=mailto:d@localhost' },
  ])
  const rdap = await startRdapStandIn(t, {
    localhost: rdapDomain('localhost', {
      registered: new Date(Date.now() - 1000 * DAY).toISOString(),
      expires: new Date(Date.now() + 300 * DAY).toISOString(),
      signed: true,
    }),
  })

  t.test('every signal present, the test CA trusted: 100', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'netcheck-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    writeFileSync(join(dir, 'ca.pem'), ca.cert)
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        '--import',
        'tsx',
        'test/helpers/netcheck-run-child.ts',
        'handlers/domain-trust-score/index.ts',
        JSON.stringify({ domain: 'localhost' }),
        JSON.stringify({ providers: { DNS_SERVERS: dns.server, RDAP_URL: rdap.url }, allowPrivateNetwork: true }),
      ],
      { env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') }, timeout: 60_000 },
    )
    const out = okBody(JSON.parse(stdout))
    const c = byName(out)
    t.equal(out.score, 100, JSON.stringify(out.components.filter((x: any) => x.points < x.maxPoints)))
    t.equal(out.maxAvailable, 100)
    t.same(out.unknown, [])
    t.match(c.domainAge, { points: 20, status: 'scored', value: { ageDays: 1000 } })
    t.match(c.dnssec, { points: 10, value: true })
    t.match(c.tlsCertificate, {
      points: 20,
      value: { authorized: true, hostnameMatches: true, issuer: 'Netcheck Trust CA' },
    })
    t.match(c.httpsRedirect, { points: 10, value: { status: 301, location: 'https://localhost/' } })
    t.match(c.securityHeaders, {
      points: 20,
      value: {
        present: {
          'strict-transport-security': true,
          'content-security-policy': true,
          'x-content-type-options': true,
          'x-frame-options or frame-ancestors': true,
        },
      },
    })
    t.same(
      out.components.map((x: any) => x.name),
      ['domainAge', 'dnssec', 'tlsCertificate', 'spf', 'dmarc', 'httpsRedirect', 'securityHeaders'],
    )
    t.equal(
      out.components.reduce((s: number, x: any) => s + x.maxPoints, 0),
      100,
      'the maxima add up to 100',
    )
  })

  t.test('untrusted certificate and no RDAP: those parts score 0 or unknown', async (t) => {
    const out = okBody(await runInline(handler, { domain: 'localhost' }, { providers: { DNS_SERVERS: dns.server } }))
    const c = byName(out)
    t.match(c.domainAge, { points: 0, status: 'unknown', explanation: /RDAP_URL is not configured/ })
    t.match(c.dnssec, { points: 0, status: 'unknown' })
    t.match(c.tlsCertificate, { points: 0, status: 'scored', value: { authorized: false } })
    t.match(c.spf, { points: 10, value: 'v=spf1 ip4:192.0.2.0/24 -all' })
    t.match(c.dmarc, { points: 10, explanation: 'DMARC policy p=reject' })
    t.match(c.httpsRedirect, { points: 10 })
    t.match(c.securityHeaders, { points: 0, explanation: /could not be loaded with a valid certificate/ })
    t.equal(out.score, 30)
    t.equal(out.maxAvailable, 70)
    t.same(out.unknown, ['domainAge', 'dnssec'])
  })

  t.test('a redirect to an unparsable location scores 0, not a crash', async (t) => {
    location = 'http://[not-an-address'
    t.teardown(() => {
      location = 'https://localhost/'
    })
    const out = okBody(await runInline(handler, { domain: 'localhost' }, { providers: { DNS_SERVERS: dns.server } }))
    t.match(byName(out).httpsRedirect, {
      points: 0,
      status: 'scored',
      value: { status: 301, location: 'http://[not-an-address' },
      explanation: /not a valid URL/,
    })
  })

  t.test('RDAP failing: age unknown, said so', async (t) => {
    rdap.override = (_req, res) => res.writeHead(503).end()
    t.teardown(() => {
      rdap.override = null
    })
    const out = okBody(
      await runInline(handler, { domain: 'localhost' }, { providers: { DNS_SERVERS: dns.server, RDAP_URL: rdap.url } }),
    )
    t.match(byName(out).domainAge, { status: 'unknown', explanation: /RDAP look-up failed/ })
  })
})

t.test('weak mail records, no web server', async (t) => {
  const dns = await startDnsStandIn(t, [
    { name: 'weak.test', type: 'TXT', data: 'v=spf1 +all' },
    { name: '_dmarc.weak.test', type: 'TXT', data: 'v=DMARC1; p=none' },
  ])
  const rdap = await startRdapStandIn(t, {
    'weak.test': rdapDomain('weak.test', {
      registered: new Date(Date.now() - 200 * DAY).toISOString(),
      expires: new Date(Date.now() + 100 * DAY).toISOString(),
    }),
  })
  // weak.test has no address in the system resolver: the web components score 0 with the reason
  const out = okBody(
    await runInline(handler, { domain: 'weak.test' }, { providers: { DNS_SERVERS: dns.server, RDAP_URL: rdap.url } }),
  )
  const c = byName(out)
  t.match(c.spf, { points: 0, explanation: /\+all/ })
  t.match(c.dmarc, { points: 5, explanation: 'DMARC policy p=none' })
  t.match(c.domainAge, { points: 10, value: { ageDays: 200 } })
  t.match(c.dnssec, { points: 0, value: false, status: 'scored' })
  // (no address: scored 0; a resolver that cannot answer here would make them unknown instead)
  t.match(c.tlsCertificate, { points: 0, explanation: /no A\/AAAA address|could not be resolved/ })
  t.equal(out.score, 15)
})

t.test('no DNS answer at all: 502', async (t) => {
  const dns = await startDnsStandIn(t, [], { servfail: ['weak.test', '_dmarc.weak.test'] })
  await t.rejects(runInline(handler, { domain: 'weak.test' }, { providers: { DNS_SERVERS: dns.server } }), {
    code: 'upstream_failed',
  })
})

t.test('internal hosts are refused outside tests', async (t) => {
  t.match(await runInline(handler, { domain: 'localhost' }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'domain',
  })
})

t.test('bad input names the field', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'domain' })
  t.match(await runInline(handler, { domain: '' }), { ok: false, status: 400, field: 'domain' })
  t.match(await runInline(handler, { domain: 'bad domain' }), { ok: false, status: 400, field: 'domain' })
  t.match(await runInline(handler, { domain: '127.0.0.1' }), { ok: false, status: 400, field: 'domain' })
  t.match(await runInline(handler, { domain: 'x'.repeat(254) }), { ok: false, status: 400, field: 'domain' })
})
