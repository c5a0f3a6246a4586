import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { PDL_TOKEN, pdlStandIn } from '../../test/helpers/misc-pdl-stand-in.js'
import { standIn } from '../../test/helpers/provider-stand-in.js'
import handler from './index.js'

t.test('against a People Data Labs stand-in', async (t) => {
  const p = await standIn(t, pdlStandIn)
  const providers = { PDL_API_URL: p.url, PDL_API_KEY: PDL_TOKEN }
  const run = (input: unknown, from: 'query' | 'body' = 'body') => runInline(handler, input, { providers, from })

  t.test('the example maps the documented subset and the likelihood', async (t) => {
    const out = okBody(await run(handler.example))
    t.equal(out.found, true)
    t.equal(out.likelihood, 9)
    t.match(out.company, {
      id: 'aKCIYBNF9ey6o5CjHCCO4goHYKlf',
      name: 'google',
      displayName: 'Google',
      domain: 'google.com',
      alternativeDomains: ['google.org'],
      industry: 'internet',
      size: '10001+',
      employeeCount: 271000,
      founded: 1998,
      type: 'public',
      ticker: 'googl',
      headline: 'search and advertising',
      location: {
        name: 'mountain view, california, united states',
        locality: 'mountain view',
        region: 'california',
        country: 'united states',
        continent: 'north america',
      },
      linkedinUrl: 'linkedin.com/company/google',
      twitterUrl: 'twitter.com/google',
    })
    t.equal(out.company.tags.length, 20, 'tags capped at 20')
    t.equal(out.company.tags[0], 'tag 1')
    t.notMatch(JSON.stringify(out), /amphitheatre|94043/, 'no street address')
    const sent = p.received.at(-1)!
    t.equal(sent.path, '/v5/company/enrich')
    t.equal(sent.headers['x-api-key'], PDL_TOKEN)
    t.equal(sent.query.get('website'), 'google.com')
  })

  t.test('a website URL is reduced to its domain; name, profile and ticker are passed on', async (t) => {
    okBody(await run({ website: 'https://www.Google.com/about?x=1' }, 'query'))
    t.equal(p.received.at(-1)!.query.get('website'), 'google.com')
    okBody(await run({ name: 'Google', ticker: 'GOOGL' }))
    t.equal(p.received.at(-1)!.query.get('name'), 'Google')
    t.equal(p.received.at(-1)!.query.get('ticker'), 'GOOGL')
    okBody(await run({ profile: 'linkedin.com/company/google' }))
    t.equal(p.received.at(-1)!.query.get('profile'), 'linkedin.com/company/google')
  })

  t.test('PDL 404 is found:false', async (t) => {
    t.match(okBody(await run({ website: 'no-such-company.example' })), {
      found: false,
      company: null,
      likelihood: null,
      reason: /No records/,
    })
  })

  t.test('missing fields are null', async (t) => {
    const sparse = await standIn(t, () => ({
      json: { status: 200, name: 'tiny co', likelihood: 3, location: null, tags: null },
    }))
    const out = okBody(
      await runInline(handler, { name: 'tiny co' }, { providers: { PDL_API_URL: sparse.url, PDL_API_KEY: PDL_TOKEN } }),
    )
    t.match(out.company, {
      name: 'tiny co',
      employeeCount: null,
      founded: null,
      domain: null,
      tags: [],
      location: { name: null, country: null },
    })
  })

  t.test('bad input: 400 naming the field', async (t) => {
    t.match(await run({}), { ok: false, status: 400, field: 'website' })
    t.match(await run({ website: 'not a domain' }), { ok: false, status: 400, field: 'website' })
    t.match(await run({ name: ' x ' }), { ok: false, status: 400, field: 'name' })
    t.match(await run({ ticker: 'GOO GL' }), { ok: false, status: 400, field: 'ticker' })
    t.match(await run({ profile: 'javascript:alert(1)' }), { ok: false, status: 400, field: 'profile' })
    t.match(await run({ website: `${'a'.repeat(250)}.com` }), { ok: false, status: 400, field: 'website' })
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), {
    code: 'upstream_not_configured',
    message: /PDL_API_URL/,
  })
  const p = await standIn(t, pdlStandIn)
  const err = await runInline(handler, handler.example, {
    providers: { PDL_API_URL: p.url, PDL_API_KEY: 'nope-key-77' },
  }).catch((e) => e)
  t.match(err, { code: 'upstream_failed', message: /401/ })
  t.notMatch(err.message, /nope-key-77/)
  const limited = await standIn(t, () => ({
    status: 429,
    json: { status: 429, error: { type: 'rate_limit_error', message: 'slow down' } },
  }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { PDL_API_URL: limited.url, PDL_API_KEY: PDL_TOKEN } }),
    { code: 'upstream_failed', message: /429/ },
  )
  const broken = await standIn(t, () => ({ status: 500, text: 'internal error' }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { PDL_API_URL: broken.url, PDL_API_KEY: PDL_TOKEN } }),
    { code: 'upstream_failed', message: /500/ },
  )
})
