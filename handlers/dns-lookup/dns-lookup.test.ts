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
      { name: 'example.test', type: 'A', data: '192.0.2.10', ttl: 120 },
      { name: 'example.test', type: 'A', data: '192.0.2.11', ttl: 120 },
      { name: 'example.test', type: 'AAAA', data: '2001:db8::10' },
      { name: 'example.test', type: 'MX', data: { preference: 10, exchange: 'mx1.example.test' } },
      { name: 'example.test', type: 'MX', data: { preference: 20, exchange: 'mx2.example.test' } },
      { name: 'example.test', type: 'TXT', data: ['v=spf1 ', '-all'] },
      { name: 'example.test', type: 'NS', data: 'ns1.example.test' },
      {
        name: 'example.test',
        type: 'SOA',
        data: {
          mname: 'ns1.example.test',
          rname: 'hostmaster.example.test',
          serial: 2026112301,
          refresh: 7200,
          retry: 900,
          expire: 1209600,
          minimum: 300,
        },
      },
      { name: 'example.test', type: 'CAA', data: { flags: 0, tag: 'issue', value: 'letsencrypt.org' } },
      { name: 'www.example.test', type: 'CNAME', data: 'example.test' },
      { name: 'dangling.example.test', type: 'CNAME', data: 'gone.test' },
      {
        name: '_sip._tcp.example.test',
        type: 'SRV',
        data: { priority: 10, weight: 5, port: 5060, target: 'sip.example.test' },
      },
      { name: '10.2.0.192.in-addr.arpa', type: 'PTR', data: 'host.example.test' },
      {
        name: '1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa',
        type: 'PTR',
        data: 'v6.example.test',
      },
      { name: 'xn--bcher-kva.test', type: 'A', data: '192.0.2.20' },
    ],
    { servfail: ['broken.test'] },
  )
  const providers = { DNS_SERVERS: dns.server }
  const run = (input: unknown, from: 'body' | 'query' = 'body') => runInline(handler, input, { providers, from })

  t.test('all default types of a domain', async (t) => {
    const out = okBody(await run({ name: 'Example.Test.' }))
    t.equal(out.name, 'example.test')
    t.equal(out.exists, true)
    t.same(Object.keys(out.records), ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'NS', 'SOA', 'CAA'])
    t.same(out.records.A.records.map((r: any) => r.address).sort(), ['192.0.2.10', '192.0.2.11'])
    t.equal(out.records.A.records[0].ttl, 120)
    t.same(
      out.records.AAAA.records.map((r: any) => r.address),
      ['2001:db8::10'],
    )
    t.same(out.records.CNAME, { found: false, reason: 'NODATA' })
    t.same(
      out.records.MX.records.sort((a: any, b: any) => a.priority - b.priority),
      [
        { priority: 10, exchange: 'mx1.example.test' },
        { priority: 20, exchange: 'mx2.example.test' },
      ],
    )
    t.same(out.records.TXT.records, ['v=spf1 -all'], 'character-strings joined')
    t.same(out.records.NS.records, ['ns1.example.test'])
    t.match(out.records.SOA.records[0], {
      nsname: 'ns1.example.test',
      hostmaster: 'hostmaster.example.test',
      serial: 2026112301,
      refresh: 7200,
      retry: 900,
      expire: 1209600,
      minttl: 300,
    })
    t.same(out.records.CAA.records, [{ critical: 0, tag: 'issue', value: 'letsencrypt.org' }])
    t.equal(out.queries, 8)
  })

  t.test('a CNAME, SRV and an IDN', async (t) => {
    const www = okBody(await run({ name: 'www.example.test', types: ['CNAME', 'A'] }))
    t.same(www.records.CNAME.records, ['example.test'])
    t.same(www.records.A.records.map((r: any) => r.address).sort(), ['192.0.2.10', '192.0.2.11'], 'A follows the CNAME')
    const srv = okBody(await run({ name: '_sip._tcp.example.test', types: ['SRV'] }))
    t.same(srv.records.SRV.records, [{ priority: 10, weight: 5, port: 5060, name: 'sip.example.test' }])
    const idn = okBody(await run({ name: 'bücher.test', types: ['A'] }))
    t.equal(idn.name, 'xn--bcher-kva.test')
    t.equal(idn.records.A.records[0].address, '192.0.2.20')
  })

  t.test('NXDOMAIN is found:false per type, not an error', async (t) => {
    const out = okBody(await run({ name: 'nope.test', types: ['A', 'MX'] }))
    t.equal(out.exists, false)
    t.same(out.records, { A: { found: false, reason: 'NXDOMAIN' }, MX: { found: false, reason: 'NXDOMAIN' } })
  })

  t.test('a CNAME to a name that is gone: the name exists, its other types are NXDOMAIN', async (t) => {
    const out = okBody(await run({ name: 'dangling.example.test', types: ['CNAME', 'A', 'MX'] }))
    t.same(out.records.CNAME, { found: true, records: ['gone.test'] })
    t.same(out.records.A, { found: false, reason: 'NXDOMAIN' })
    t.equal(out.exists, true)
  })

  t.test('reverse lookups of IPv4 and IPv6 addresses', async (t) => {
    const v4 = okBody(await run({ name: '192.0.2.10' }))
    t.equal(v4.reverse, true)
    t.equal(v4.reverseName, '10.2.0.192.in-addr.arpa')
    t.same(v4.records.PTR.records, ['host.example.test'])
    const v6 = okBody(await run({ name: '2001:db8::1', types: ['PTR'] }, 'query'))
    t.same(v6.records.PTR.records, ['v6.example.test'])
    const none = okBody(await run({ name: '192.0.2.99' }))
    t.same(none.records.PTR, { found: false, reason: 'NXDOMAIN' })
    t.ok(dns.queries.includes('PTR 10.2.0.192.in-addr.arpa'), 'the stand-in was asked the in-addr.arpa name')
  })

  t.test('GET with a single type', async (t) => {
    const out = okBody(await run({ name: 'example.test', types: 'NS' }, 'query'))
    t.same(Object.keys(out.records), ['NS'])
  })

  t.test('a resolver failure for one name is an upstream failure, not an answer', async (t) => {
    await t.rejects(run({ name: 'broken.test', types: ['A'] }), {
      name: 'HandlerUpstreamError',
      code: 'upstream_failed',
    })
  })
})

t.test('an unreachable resolver: 502', async (t) => {
  // a bound UDP port that never answers
  const silent = await startDnsStandIn(t, [], { drop: ['example.test'] })
  await t.rejects(
    runInline(handler, { name: 'example.test', types: ['A'] }, { providers: { DNS_SERVERS: silent.server } }),
    { code: 'upstream_failed' },
  )
})

t.test('bad input names the field', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'name' })
  t.match(await runInline(handler, { name: '' }), { ok: false, status: 400, field: 'name' })
  t.match(await runInline(handler, { name: 'exa mple.com' }), { ok: false, status: 400, field: 'name' })
  t.match(await runInline(handler, { name: `${'a'.repeat(64)}.com` }), { ok: false, status: 400, field: 'name' })
  t.match(await runInline(handler, { name: 'x'.repeat(254) }), { ok: false, status: 400, field: 'name' })
  t.match(await runInline(handler, { name: 'example.com', types: ['ANY'] }), {
    ok: false,
    status: 400,
    field: 'types.0',
  })
  t.match(await runInline(handler, { name: '192.0.2.1', types: ['A'] }), { ok: false, status: 400, field: 'types' })
  t.match(await runInline(handler, { name: 'example.com', extra: 1 }), { ok: false, status: 400, field: 'extra' })
})
