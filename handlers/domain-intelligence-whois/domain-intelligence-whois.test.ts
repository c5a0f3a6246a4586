import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { rdapDomain, startRdapStandIn } from '../../test/helpers/netcheck-rdap-server.js'
import handler from './index.js'

const DAY = 86_400_000
const daysAgo = (n: number) => new Date(Date.now() - n * DAY - 3_600_000).toISOString()

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('against an RDAP stand-in', async (t) => {
  const registered = daysAgo(1000)
  const expires = new Date(Date.now() + 100 * DAY + 3_600_000).toISOString()
  const rdap = await startRdapStandIn(t, {
    'example.com': rdapDomain('example.com', {
      registered,
      expires,
      lastChanged: '2026-08-14T07:01:44Z',
      signed: true,
    }),
    'xn--bcher-kva.example': {
      objectClassName: 'domain',
      ldhName: 'xn--bcher-kva.example',
      unicodeName: 'bücher.example',
    },
  })
  const providers = { RDAP_URL: `${rdap.url}/` }

  t.test('maps the RFC 9083 fields', async (t) => {
    const out = okBody(await runInline(handler, { domain: 'Example.COM' }, { providers, from: 'query' }))
    t.equal(out.found, true)
    t.equal(out.domain, 'example.com')
    t.equal(out.handle, 'EXAMPLE.COM-HANDLE')
    t.same(out.registrar, {
      name: 'RESERVED-Internet Assigned Numbers Authority',
      ianaId: '376',
      url: null,
      abuseEmail: 'abuse@registrar.example',
      abusePhone: '+1.3108239358',
    })
    t.same(out.registrant, { name: null, organization: 'Example Org', country: 'US' })
    t.equal(out.dates.registered, new Date(registered).toISOString())
    t.equal(out.dates.expires, new Date(expires).toISOString())
    t.equal(out.dates.lastChanged, '2026-08-14T07:01:44.000Z')
    t.equal(out.dates.lastRdapUpdate, '2026-11-23T10:00:00.000Z')
    t.equal(out.ageDays, 1000)
    t.equal(out.daysUntilExpiry, 100)
    t.same(out.status, ['client delete prohibited', 'client transfer prohibited', 'client update prohibited'])
    t.same(out.nameservers, ['a.iana-servers.net', 'b.iana-servers.net'])
    t.same(out.dnssec, { delegationSigned: true, dsRecords: 1 })
    t.equal(out.rdapServer, new URL(rdap.url).host)
    t.same(
      rdap.requests.slice(-2).map((r) => r.path),
      ['/domain/example.com', '/registry/domain/example.com'],
      'asked the bootstrap, followed its redirect',
    )
    t.match(rdap.requests.at(-1)!.accept, /application\/rdap\+json/)
  })

  t.test('sparse objects leave fields null', async (t) => {
    const out = okBody(await runInline(handler, { domain: 'bücher.example' }, { providers }))
    t.match(out, {
      found: true,
      domain: 'xn--bcher-kva.example',
      unicodeName: 'bücher.example',
      registrar: null,
      registrant: null,
      ageDays: null,
      daysUntilExpiry: null,
      status: [],
      nameservers: [],
    })
    t.same(out.dates, { registered: null, expires: null, lastChanged: null, lastRdapUpdate: null })
    t.same(out.dnssec, { delegationSigned: null, dsRecords: 0 })
  })

  t.test('not registered: found false', async (t) => {
    const out = okBody(await runInline(handler, { domain: 'unregistered-name.com' }, { providers }))
    t.equal(out.found, false)
    t.match(out.reason, /no registration/)
  })

  t.test('provider failures: 502', async (t) => {
    rdap.override = (_req, res) => res.writeHead(500).end('oops')
    await t.rejects(runInline(handler, { domain: 'example.com' }, { providers }), {
      name: 'HandlerUpstreamError',
      code: 'upstream_failed',
    })
    rdap.override = (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>not rdap</html>')
    await t.rejects(runInline(handler, { domain: 'example.com' }, { providers }), { code: 'upstream_failed' })
    rdap.override = (_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ objectClassName: 'entity' }))
    await t.rejects(runInline(handler, { domain: 'example.com' }, { providers }), { code: 'upstream_failed' })
    rdap.override = (_req, res) => res.writeHead(302, { location: '/registry/domain/example.com' }).end()
    await t.rejects(
      runInline(handler, { domain: 'example.com' }, { providers }),
      { code: 'upstream_failed', message: /redirect/ },
      'a redirect loop is bounded',
    )
    rdap.override = null
    await t.rejects(runInline(handler, { domain: 'example.com' }, { providers: { RDAP_URL: 'http://127.0.0.1:1' } }), {
      code: 'upstream_failed',
    })
  })
})

t.test('unconfigured: 503', async (t) => {
  await t.rejects(runInline(handler, { domain: 'example.com' }, { providers: {} }), {
    name: 'HandlerUpstreamError',
    code: 'upstream_not_configured',
  })
})

t.test('bad input names the field', async (t) => {
  const providers = { RDAP_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'domain' })
  t.match(await runInline(handler, { domain: '' }, { providers }), { ok: false, status: 400, field: 'domain' })
  t.match(await runInline(handler, { domain: 'no spaces.com' }, { providers }), {
    ok: false,
    status: 400,
    field: 'domain',
  })
  t.match(await runInline(handler, { domain: '192.0.2.1' }, { providers }), { ok: false, status: 400, field: 'domain' })
  t.match(await runInline(handler, { domain: 'com' }, { providers }), { ok: false, status: 400, field: 'domain' })
  t.match(await runInline(handler, { domain: `${'a'.repeat(250)}.com` }, { providers }), {
    ok: false,
    status: 400,
    field: 'domain',
  })
})
