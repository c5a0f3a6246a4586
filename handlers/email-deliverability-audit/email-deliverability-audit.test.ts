import { generateKeyPairSync } from 'node:crypto'
import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { startDnsStandIn, type ZoneRecord } from '../../test/helpers/netcheck-dns-server.js'
import handler from './index.js'

/** A DKIM TXT record for a fresh RSA key, split into 255-byte character-strings as DNS needs. */
const dkimTxt = (bits: number, type: 'spki' | 'pkcs1' = 'spki') => {
  const p = generateKeyPairSync('rsa', { modulusLength: bits })
    .publicKey.export({ format: 'der', type })
    .toString('base64')
  const text = `v=DKIM1; k=rsa; p=${p}`
  return text.match(/.{1,255}/g)!
}
const txt = (name: string, data: string | string[]): ZoneRecord => ({ name, type: 'TXT', data })
const ids = (out: Record<string, any>) => out.findings.map((f: any) => f.id).sort()

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('against a DNS stand-in', async (t) => {
  const dns = await startDnsStandIn(t, [
    // a well-configured domain
    { name: 'good.test', type: 'MX', data: { preference: 10, exchange: 'mx.good.test' } },
    txt('good.test', 'v=spf1 ip4:192.0.2.0/24 include:_spf.provider.test mx -all'),
    txt('good.test', 'google-site-verification=abc'),
    txt('_spf.provider.test', 'v=spf1 ip4:198.51.100.0/24 include:_spf2.provider.test ~all'),
    txt('_spf2.provider.test', 'v=spf1 a -all'),
    { name: '_spf2.provider.test', type: 'A', data: '198.51.100.25' },
    txt('_dmarc.good.test', 'v=DMARC1; p=reject; rua=mailto:dmarc@good.test,mailto:x@rep.test; adkim=s'),
    txt('selector1._domainkey.good.test', dkimTxt(2048)),
    txt('_mta-sts.good.test', 'v=STSv1; id=20260101T000000'),
    txt('_smtp._tls.good.test', 'v=TLSRPTv1; rua=mailto:tls@good.test'),
    txt('default._bimi.good.test', 'v=BIMI1; l=https://good.test/logo.svg; a='),
    // a middling one
    { name: 'mid.test', type: 'MX', data: { preference: 10, exchange: 'mx.mid.test' } },
    txt('mid.test', 'v=spf1 mx ~all'),
    txt('_dmarc.mid.test', 'v=DMARC1; p=quarantine; pct=50; rua=mailto:d@mid.test'),
    txt('google._domainkey.mid.test', dkimTxt(1024)),
    // a badly configured one
    txt('bad.test', 'v=spf1 a mx ptr include:inc.bad.test +all'),
    txt(
      'inc.bad.test',
      'v=spf1 a mx a:x.bad.test mx:y.bad.test exists:z.bad.test include:missing.bad.test a:w.bad.test ~all',
    ),
    { name: 'missing.bad.test', type: 'A', data: '192.0.2.1' },
    txt('_dmarc.bad.test', 'v=DMARC1; p=none'),
    txt('default._domainkey.bad.test', 'v=DKIM1; p='),
    // two SPF records and a redirect
    txt('two.test', 'v=spf1 -all'),
    txt('two.test', 'v=spf1 redirect=_spf.provider.test'),
    txt('redir.test', 'v=spf1 redirect=_spf.provider.test'),
    // two includes that both include the same record (common with mail providers), and a real loop
    txt('diamond.test', 'v=spf1 include:a.diamond.test include:b.diamond.test -all'),
    txt('a.diamond.test', 'v=spf1 include:shared.diamond.test ~all'),
    txt('b.diamond.test', 'v=spf1 include:shared.diamond.test ~all'),
    txt('shared.diamond.test', 'v=spf1 a mx ip4:192.0.2.0/24 ~all'),
    txt('loop.test', 'v=spf1 include:back.loop.test -all'),
    // subdomains without a DMARC record of their own: the organizational domain's applies
    txt('_dmarc.org.test', 'v=DMARC1; p=reject; sp=none; rua=mailto:d@org.test'),
    txt('mail.org.test', 'v=spf1 -all'),
    txt('a.b.org.test', 'v=spf1 -all'),
    txt('a.b.c.d.e.org.test', 'v=spf1 -all'),
    txt('_dmarc.plain.test', 'v=DMARC1; p=quarantine; rua=mailto:d@plain.test'),
    // void lookups (RFC 7208 §4.6.4): two are allowed, a third is a permerror
    txt('void2.test', 'v=spf1 a:gone.void2.test mx:nomx.void2.test a:v6only.void2.test ip4:192.0.2.0/24 -all'),
    { name: 'nomx.void2.test', type: 'A', data: '192.0.2.9' },
    { name: 'v6only.void2.test', type: 'AAAA', data: '2001:db8::9' },
    txt('void3.test', 'v=spf1 a:gone.void3.test mx:gone.void3.test exists:gone2.void3.test -all'),
    txt('voidmacro.test', 'v=spf1 exists:%{i}.bl.voidmacro.test a:%{d}.x.voidmacro.test -all'),
    txt('news.plain.test', 'v=spf1 -all'),
    txt('alone.test', 'v=spf1 -all'),
    txt('pkcs1._domainkey.good.test', dkimTxt(2048, 'pkcs1')),
    txt('back.loop.test', 'v=spf1 include:loop.test ~all'),
  ])
  const providers = { DNS_SERVERS: dns.server }
  const audit = async (input: Record<string, unknown>) => okBody(await runInline(handler, input, { providers }))

  t.test('a well-configured domain scores 100', async (t) => {
    const out = await audit({ domain: 'good.test', dkimSelectors: ['selector1', 'google'] })
    t.same(out.findings, [])
    t.equal(out.score, 100)
    t.match(out.scoring, /100 - sum of penalties/)
    t.same(out.mx, { found: true, records: [{ priority: 10, exchange: 'mx.good.test' }], nullMx: false })
    t.match(out.spf, {
      found: true,
      recordCount: 1,
      allQualifier: '-',
      includes: ['_spf.provider.test'],
      dnsLookups: 4,
      dnsLookupsComplete: true,
      voidLookups: 0,
      problems: [],
    })
    t.same(out.spf.terms, ['ip4:192.0.2.0/24', 'include:_spf.provider.test', 'mx', '-all'])
    t.match(out.dmarc, { found: true, policy: 'reject', pct: 100, adkim: 'strict', aspf: 'relaxed' })
    t.same(out.dmarc.rua, ['mailto:dmarc@good.test', 'mailto:x@rep.test'])
    t.equal(out.dkim.found.length, 1)
    t.match(out.dkim.found[0], { selector: 'selector1', keyType: 'rsa', keyBits: 2048, revoked: false })
    t.match(out.mtaSts, { found: true, id: '20260101T000000' })
    t.same(out.tlsRpt.rua, ['mailto:tls@good.test'])
    t.match(out.bimi, { found: true, logo: 'https://good.test/logo.svg', authority: null })
    t.equal(out.dnsQueries, 12, '8 fixed + 2 SPF includes + the names of 2 a/mx terms')
    t.same(out.unknown, [])
  })

  t.test('a middling domain: documented penalties', async (t) => {
    const out = await audit({ domain: 'mid.test', dkimSelectors: ['google', 'selector1'] })
    t.same(ids(out), [
      'bimi-missing',
      'dkim-short-key',
      'dmarc-partial',
      'mta-sts-missing',
      'spf-softfail-all',
      'tls-rpt-missing',
    ])
    t.equal(out.score, 80, '4 low findings at 5 points each')
    t.equal(out.dkim.found[0].keyBits, 1024)
    t.equal(out.dmarc.pct, 50)
  })

  t.test('a badly configured domain', async (t) => {
    const out = await audit({ domain: 'bad.test' })
    t.same(out.dkim.selectorsChecked, ['default', 'google', 'selector1', 'selector2', 'k1', 's1', 's2', 'dkim'])
    t.match(out.spf, { allQualifier: '+', dnsLookups: 11, dnsLookupsComplete: true })
    t.ok(out.spf.problems.some((p: string) => /missing\.bad\.test has no SPF record/.test(p)))
    t.match(out.dkim.found, [{ selector: 'default', revoked: true }])
    t.same(ids(out), [
      'bimi-missing',
      'dkim-not-found',
      'dmarc-no-rua',
      'dmarc-policy-none',
      'mta-sts-missing',
      'mx-missing',
      'spf-pass-all',
      'spf-problem',
      'spf-problem',
      'spf-too-many-lookups',
      'spf-too-many-void-lookups',
      'tls-rpt-missing',
    ])
    t.equal(
      out.spf.voidLookups,
      4,
      'bad.test has no A and no MX, nor inc.bad.test an A (names queried no further past the limit), and missing.bad.test no TXT',
    )
    t.equal(out.findings.find((f: any) => f.id === 'spf-pass-all').severity, 'critical')
    t.equal(out.score, 0)
  })

  t.test('two SPF records; redirect= supplies the all', async (t) => {
    const two = await audit({ domain: 'two.test', dkimSelectors: ['x'] })
    t.equal(two.spf.recordCount, 2)
    t.ok(ids(two).includes('spf-multiple'))
    const redir = await audit({ domain: 'redir.test', dkimSelectors: ['x'] })
    t.equal(redir.spf.allQualifier, '~', 'from the redirect target')
    t.equal(redir.spf.dnsLookups, 3, 'redirect, include, a')
  })

  t.test('a record included twice is evaluated (and counted) twice, not reported as a loop', async (t) => {
    const out = await audit({ domain: 'diamond.test', dkimSelectors: ['x'] })
    // 2 includes at the top, then 1 include + a + mx in each of the two branches
    t.match(out.spf, { dnsLookups: 8, dnsLookupsComplete: true, problems: [] })
    t.notOk(ids(out).includes('spf-problem'))
    t.equal(dns.queries.filter((q) => q === 'TXT shared.diamond.test').length, 1, 'read once')
    const loop = await audit({ domain: 'loop.test', dkimSelectors: ['x'] })
    t.match(loop.spf.problems, [/include:loop\.test loops back/])
  })

  t.test("a subdomain without its own DMARC record gets its parent domain's policy", async (t) => {
    const sub = await audit({ domain: 'mail.org.test', dkimSelectors: ['x'] })
    t.match(sub.dmarc, {
      found: true,
      foundAt: 'org.test',
      inherited: true,
      policy: 'reject',
      subdomainPolicy: 'none',
      effectivePolicy: 'none',
    })
    t.notOk(ids(sub).includes('dmarc-missing'))
    t.match(
      sub.findings.find((f: any) => f.id === 'dmarc-policy-none'),
      { message: /sp=none \(from org\.test\)/ },
    )
    const deeper = await audit({ domain: 'a.b.org.test', dkimSelectors: ['x'] })
    t.match(deeper.dmarc, { foundAt: 'org.test', inherited: true })
    // a long name: its 4 parents nearest the top are asked (5 labels down to 2)
    const deepest = await audit({ domain: 'a.b.c.d.e.org.test', dkimSelectors: ['x'] })
    t.match(deepest.dmarc, { foundAt: 'org.test', inherited: true })
    const plain = await audit({ domain: 'news.plain.test', dkimSelectors: ['x'] })
    t.match(plain.dmarc, {
      foundAt: 'plain.test',
      policy: 'quarantine',
      subdomainPolicy: null,
      effectivePolicy: 'quarantine',
    })
    t.notOk(ids(plain).some((id: string) => id.startsWith('dmarc-')))
    const own = await audit({ domain: 'good.test', dkimSelectors: ['x'] })
    t.match(own.dmarc, { foundAt: 'good.test', inherited: false, effectivePolicy: 'reject' })
    const none = await audit({ domain: 'alone.test', dkimSelectors: ['x'] })
    t.match(none.dmarc, { found: false, foundAt: null })
    t.ok(ids(none).includes('dmarc-missing'))
    t.notOk(dns.queries.includes('TXT _dmarc.test'), 'the top-level domain is never asked')
  })

  t.test('a DKIM key published as a bare RSAPublicKey (PKCS#1) is read', async (t) => {
    const out = await audit({ domain: 'good.test', dkimSelectors: ['pkcs1'] })
    t.match(out.dkim.found, [{ selector: 'pkcs1', keyType: 'rsa', keyBits: 2048, revoked: false }])
    t.notOk(ids(out).includes('dkim-bad-key'))
  })

  t.test(
    'void lookups: names of a, mx, exists and include terms that do not exist, over 2 is a permerror',
    async (t) => {
      const two = await audit({ domain: 'void2.test', dkimSelectors: ['selector1'] })
      t.equal(
        two.spf.voidLookups,
        2,
        'a:gone (neither A nor AAAA) and mx:nomx (a name without MX); the a term with an AAAA only is not void',
      )
      t.notOk(ids(two).includes('spf-too-many-void-lookups'), 'two are within the limit')
      const three = await audit({ domain: 'void3.test', dkimSelectors: ['selector1'] })
      t.equal(three.spf.voidLookups, 3)
      t.ok(ids(three).includes('spf-too-many-void-lookups'), 'the third one is reported')
      t.equal(three.findings.find((f: any) => f.id === 'spf-too-many-void-lookups').severity, 'high')
      t.ok(three.spf.problems.some((p: string) => /3 void lookups.*limit of 2/.test(p)))
      const macro = await audit({ domain: 'voidmacro.test', dkimSelectors: ['selector1'] })
      t.equal(macro.spf.voidLookups, 0, 'names with macros depend on the sender and are not queried')
    },
  )

  t.test('a domain that does not exist: 422', async (t) => {
    t.match(await runInline(handler, { domain: 'nowhere.test' }, { providers }), {
      ok: false,
      status: 422,
      field: 'domain',
    })
  })
})

t.test('no DNS answer at all: 502', async (t) => {
  const silent = await startDnsStandIn(t, [], {
    servfail: [
      'x.test',
      '_dmarc.x.test',
      '_mta-sts.x.test',
      '_smtp._tls.x.test',
      'default._bimi.x.test',
      'a._domainkey.x.test',
    ],
  })
  await t.rejects(
    runInline(handler, { domain: 'x.test', dkimSelectors: ['a'] }, { providers: { DNS_SERVERS: silent.server } }),
    { code: 'upstream_failed' },
  )
})

t.test('bad input names the field', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'domain' })
  t.match(await runInline(handler, { domain: 'not a domain' }), { ok: false, status: 400, field: 'domain' })
  t.match(await runInline(handler, { domain: 'localhost' }), { ok: false, status: 400, field: 'domain' })
  t.match(await runInline(handler, { domain: 'example.com', dkimSelectors: [] }), {
    ok: false,
    status: 400,
    field: 'dkimSelectors',
  })
  t.match(await runInline(handler, { domain: 'example.com', dkimSelectors: ['a b'] }), {
    ok: false,
    status: 400,
    field: 'dkimSelectors.0',
  })
  t.match(
    await runInline(handler, { domain: 'example.com', dkimSelectors: Array.from({ length: 11 }, (_, i) => `s${i}`) }),
    { ok: false, status: 400, field: 'dkimSelectors' },
  )
})
