import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { startDnsStandIn } from '../../test/helpers/netcheck-dns-server.js'
import handler from './index.js'

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('against a DNS stand-in', async (t) => {
  const dns = await startDnsStandIn(
    t,
    [
      { name: 'corp.test', type: 'MX', data: { preference: 20, exchange: 'mx2.corp.test' } },
      { name: 'corp.test', type: 'MX', data: { preference: 10, exchange: 'mx1.corp.test' } },
      { name: 'noMx.test', type: 'A', data: '192.0.2.5' },
      { name: 'nullmx.test', type: 'MX', data: { preference: 0, exchange: '.' } },
      { name: 'txtonly.test', type: 'TXT', data: 'hello' },
      { name: 'v6fails.test', type: 'TXT', data: 'hello' },
      // real provider domains answered by the stand-in, so the offline lists are what is tested
      { name: 'gmail.com', type: 'MX', data: { preference: 5, exchange: 'gmail-smtp-in.l.google.com' } },
      { name: 'mailinator.com', type: 'MX', data: { preference: 10, exchange: 'mail.mailinator.com' } },
      { name: 'example.com', type: 'MX', data: { preference: 0, exchange: '.' } },
      { name: 'x.33mail.com', type: 'MX', data: { preference: 10, exchange: 'mx.33mail.com' } },
    ],
    { servfail: ['broken.test', 'AAAA v6fails.test'] },
  )
  const providers = { DNS_SERVERS: dns.server }
  const check = async (email: string) => okBody(await runInline(handler, { email }, { providers, from: 'query' }))

  t.test('a plausible corporate address: unknown, never "yes"', async (t) => {
    const out = await check('Jane.Doe+news@CORP.test')
    t.equal(out.email, 'Jane.Doe+news@corp.test')
    t.equal(out.localPart, 'Jane.Doe+news')
    t.equal(out.domain, 'corp.test')
    t.same(out.syntax, { valid: true, reason: null })
    t.match(out.domainCheck, { exists: true, acceptsMail: true, via: 'MX', nullMx: false })
    t.same(
      out.domainCheck.mx,
      [
        { priority: 10, exchange: 'mx1.corp.test' },
        { priority: 20, exchange: 'mx2.corp.test' },
      ],
      'sorted by priority',
    )
    t.equal(out.disposable, false)
    t.equal(out.role, false)
    t.equal(out.freeProvider, false)
    t.equal(out.smtpProbe, 'not performed')
    t.equal(out.deliverable, 'unknown')
    t.equal(out.dnsQueries, 1)
  })

  t.test('A fallback, null MX, no mail host, no such domain', async (t) => {
    const fallback = await check('a@nomx.test')
    t.match(fallback.domainCheck, { acceptsMail: true, via: 'A/AAAA fallback', mx: [] })
    t.equal(fallback.deliverable, 'unknown')
    t.equal(fallback.dnsQueries, 3)
    const nullMx = await check('a@nullmx.test')
    t.match(nullMx.domainCheck, { acceptsMail: false, nullMx: true })
    t.equal(nullMx.deliverable, 'no')
    const noHost = await check('a@txtonly.test')
    t.match(noHost.domainCheck, { exists: true, acceptsMail: false, via: null })
    t.equal(noHost.deliverable, 'no')
    const missing = await check('a@missing.test')
    t.match(missing.domainCheck, { exists: false, acceptsMail: false })
    t.equal(missing.deliverable, 'no')
    t.match(missing.reasons[0], /does not exist/)
  })

  t.test('free, disposable (exact and wildcard) and role flags', async (t) => {
    const free = await check('someone@gmail.com')
    t.match(free, { freeProvider: true, disposable: false, role: false, deliverable: 'unknown' })
    const throwaway = await check('x@mailinator.com')
    t.match(throwaway, { disposable: true, freeProvider: false })
    const wildcard = await check('x@x.33mail.com')
    t.equal(wildcard.disposable, true, 'a subdomain of a wildcard-listed domain')
    const documentation = await check('someone@example.com')
    t.equal(documentation.freeProvider, false, 'the RFC 2606 names on the free list are not providers')
    const role = await check('Postmaster@corp.test')
    t.match(role, { role: true, roleName: 'postmaster' })
    const roleTag = await check('info+x@corp.test')
    t.match(roleTag, { role: true, roleName: 'info' })
  })

  t.test('syntax errors are answers (deliverable "no"), with no DNS query', async (t) => {
    const before = dns.queries.length
    for (const bad of [
      'no-at-sign',
      '@corp.test',
      'a..b@corp.test',
      '.a@corp.test',
      '"quoted"@corp.test',
      'a@[192.0.2.1]',
      'a@localhost',
      'a b@corp.test',
      `${'x'.repeat(65)}@corp.test`,
      'a@-corp.test',
    ]) {
      const out = await check(bad)
      t.equal(out.syntax.valid, false, bad)
      t.equal(out.deliverable, 'no', bad)
      t.type(out.syntax.reason, 'string')
    }
    t.equal(dns.queries.length, before)
  })

  t.test('a failing resolver is a 502, not "undeliverable"', async (t) => {
    await t.rejects(runInline(handler, { email: 'a@broken.test' }, { providers }), {
      name: 'HandlerUpstreamError',
      code: 'upstream_failed',
    })
    // no MX, no A, and the AAAA query failed: whether a host exists is unknown, not "no"
    await t.rejects(runInline(handler, { email: 'a@v6fails.test' }, { providers }), {
      name: 'HandlerUpstreamError',
      code: 'upstream_failed',
      message: /AAAA query/,
    })
  })
})

t.test('bad input names the field', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'email' })
  t.match(await runInline(handler, { email: '' }), { ok: false, status: 400, field: 'email' })
  t.match(await runInline(handler, { email: 'a'.repeat(321) }), { ok: false, status: 400, field: 'email' })
  t.match(await runInline(handler, { email: 'a@b.com', smtp: true }), { ok: false, status: 400, field: 'smtp' })
})
