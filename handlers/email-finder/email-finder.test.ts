import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { standIn, type ReceivedRequest } from '../../test/helpers/provider-stand-in.js'
import handler from './index.js'

const KEY = 'hunter-secret-key'
const source = (n: number) => ({
  domain: 'example.com',
  uri: `http://example.com/page-${n}`,
  extracted_on: '2015-07-29',
  last_seen_on: '2017-07-01',
  still_on_page: n % 2 === 0,
})

// Hunter API v2 shapes, https://hunter.io/api-documentation/v2 (Email Finder, Domain Search, errors)
function hunterStandIn(req: ReceivedRequest) {
  if (req.query.get('api_key') !== KEY)
    return {
      status: 401,
      json: { errors: [{ id: 'authentication_failed', code: 401, details: 'No user found for the API key supplied' }] },
    }
  if (req.path === '/v2/email-finder') {
    const last = req.query.get('last_name') ?? req.query.get('full_name')
    if (req.query.get('domain') === 'bad..domain.com' || req.query.get('company') === '!!!')
      return {
        status: 400,
        json: {
          errors: [{ id: 'wrong_params', code: 400, details: 'You are missing the domain or the company parameter' }],
        },
      }
    if (last === 'Private')
      return {
        status: 451,
        json: {
          errors: [
            {
              id: 'claimed_email',
              code: 451,
              details:
                'The person behind this email address has asked us directly or indirectly to stop the processing of this email.',
            },
          ],
        },
      }
    if (last === 'Nobody')
      return {
        json: {
          data: {
            first_name: 'No',
            last_name: 'Nobody',
            email: null,
            score: null,
            domain: 'reddit.com',
            sources: [],
            verification: { date: null, status: null },
          },
          meta: { params: {} },
        },
      }
    return {
      json: {
        data: {
          first_name: 'Alexis',
          last_name: 'Ohanian',
          email: 'alexis@reddit.com',
          score: 97,
          domain: 'reddit.com',
          accept_all: false,
          position: 'Cofounder',
          twitter: 'alexisohanian',
          linkedin_url: null,
          phone_number: null,
          company: 'Reddit',
          sources: Array.from({ length: 7 }, (_, i) => source(i)),
          verification: { date: '2019-12-06', status: 'valid' },
        },
        meta: {
          params: {
            first_name: 'Alexis',
            last_name: 'Ohanian',
            full_name: null,
            domain: 'reddit.com',
            company: null,
            max_duration: null,
          },
        },
      },
    }
  }
  if (req.path === '/v2/domain-search') {
    const limit = Number(req.query.get('limit'))
    const emails = [
      {
        value: 'ciaran@stripe.com',
        type: 'personal',
        confidence: 92,
        sources: [source(1), source(2)],
        first_name: 'Ciaran',
        last_name: 'Lee',
        position: 'Support Engineer',
        seniority: 'senior',
        department: 'it',
        linkedin: null,
        twitter: 'ciaranlee',
        phone_number: null,
        verification: { date: '2022-05-01', status: 'valid' },
      },
      {
        value: 'press@stripe.com',
        type: 'generic',
        confidence: 88,
        sources: [source(3)],
        first_name: null,
        last_name: null,
        position: null,
        seniority: null,
        department: 'communication',
        linkedin: null,
        twitter: null,
        phone_number: null,
        verification: { date: null, status: 'accept_all' },
      },
    ].filter((e) => !req.query.get('type') || e.type === req.query.get('type'))
    return {
      json: {
        data: {
          domain: 'stripe.com',
          disposable: false,
          webmail: false,
          accept_all: true,
          pattern: '{first}',
          organization: 'Stripe',
          emails: emails.slice(0, limit),
        },
        meta: { results: 35, limit, offset: 0, params: {} },
      },
    }
  }
  return {
    status: 404,
    json: { errors: [{ id: 'route_not_found', code: 404, details: 'This route does not exist.' }] },
  }
}

t.test('against a Hunter stand-in', async (t) => {
  const p = await standIn(t, hunterStandIn)
  const providers = { HUNTER_API_URL: p.url, HUNTER_API_KEY: KEY }
  const run = (input: unknown, from: 'query' | 'body' = 'body') => runInline(handler, input, { providers, from })

  t.test('finding a person maps email, score, sources and verification', async (t) => {
    const out = okBody(await run(handler.example))
    t.match(out, {
      mode: 'finder',
      found: true,
      email: 'alexis@reddit.com',
      score: 97,
      firstName: 'Alexis',
      lastName: 'Ohanian',
      domain: 'reddit.com',
      company: 'Reddit',
      position: 'Cofounder',
      acceptAll: false,
      twitter: 'alexisohanian',
      linkedin: null,
    })
    t.equal(out.sourcesCount, 7)
    t.equal(out.sources.length, 5, 'the first five sources are listed')
    t.same(out.sources[0], {
      uri: 'http://example.com/page-0',
      extractedOn: '2015-07-29',
      lastSeenOn: '2017-07-01',
      stillOnPage: true,
    })
    t.same(out.verification, { status: 'valid', date: '2019-12-06' })
    const sent = p.received.at(-1)!
    t.equal(sent.path, '/v2/email-finder')
    t.equal(sent.query.get('domain'), 'reddit.com')
    t.equal(sent.query.get('first_name'), 'Alexis')
    t.equal(sent.query.get('last_name'), 'Ohanian')
    t.equal(sent.query.get('api_key'), KEY)
  })

  t.test('full name with company; a URL-ish domain is reduced to its host', async (t) => {
    okBody(await run({ company: 'Reddit', fullName: 'Alexis Ohanian' }))
    t.equal(p.received.at(-1)!.query.get('company'), 'Reddit')
    t.equal(p.received.at(-1)!.query.get('full_name'), 'Alexis Ohanian')
    okBody(await run({ domain: 'https://www.Reddit.com/about', firstName: 'Alexis', lastName: 'Ohanian' }))
    t.equal(p.received.at(-1)!.query.get('domain'), 'reddit.com')
  })

  t.test('no address, or a person who opted out, is found:false', async (t) => {
    t.match(okBody(await run({ domain: 'reddit.com', firstName: 'No', lastName: 'Nobody' })), {
      found: false,
      email: null,
      reason: /no address/,
    })
    t.match(okBody(await run({ domain: 'reddit.com', firstName: 'Very', lastName: 'Private' })), {
      found: false,
      email: null,
      reason: /asked Hunter not to process/,
    })
  })

  t.test('domain search lists addresses, bounded by limit', async (t) => {
    const out = okBody(await run({ domain: 'stripe.com', limit: '2' }, 'query'))
    t.match(out, {
      mode: 'domain-search',
      domain: 'stripe.com',
      organization: 'Stripe',
      pattern: '{first}',
      acceptAll: true,
      webmail: false,
      total: 35,
    })
    t.same(out.emails[0], {
      email: 'ciaran@stripe.com',
      type: 'personal',
      confidence: 92,
      firstName: 'Ciaran',
      lastName: 'Lee',
      position: 'Support Engineer',
      seniority: 'senior',
      department: 'it',
      linkedin: null,
      twitter: 'ciaranlee',
      sourcesCount: 2,
      verification: { status: 'valid', date: '2022-05-01' },
    })
    t.equal(out.emails[1].verification.status, 'accept_all')
    const sent = p.received.at(-1)!
    t.equal(sent.path, '/v2/domain-search')
    t.equal(sent.query.get('limit'), '2')
    const generic = okBody(await run({ domain: 'stripe.com', type: 'generic' }))
    t.same(
      generic.emails.map((e: any) => e.email),
      ['press@stripe.com'],
    )
    t.equal(p.received.at(-1)!.query.get('limit'), '10', 'default limit')
  })

  t.test('Hunter refusing the parameters is 400 naming the field', async (t) => {
    t.match(await run({ company: '!!!', firstName: 'A', lastName: 'B' }), { ok: false, status: 400, field: 'domain' })
  })

  t.test('bad input: 400 naming the field', async (t) => {
    t.match(await run({}), { ok: false, status: 400, field: 'domain' })
    t.match(await run({ domain: 'not a domain' }), { ok: false, status: 400, field: 'domain' })
    t.match(await run({ domain: 'reddit.com', firstName: 'Alexis' }), { ok: false, status: 400, field: 'lastName' })
    t.match(await run({ domain: 'reddit.com', lastName: 'Ohanian' }), { ok: false, status: 400, field: 'firstName' })
    t.match(await run({ firstName: 'Alexis', lastName: 'Ohanian' }), { ok: false, status: 400, field: 'domain' })
    t.match(await run({ domain: 'reddit.com', fullName: 'Alexis Ohanian', firstName: 'Alexis' }), {
      ok: false,
      status: 400,
      field: 'fullName',
    })
    t.match(await run({ domain: 'reddit.com', firstName: 'A', lastName: 'B', limit: 5 }), {
      ok: false,
      status: 400,
      field: 'limit',
    })
    t.match(await run({ company: 'Reddit' }), { ok: false, status: 400, field: 'firstName' })
    t.match(await run({ domain: 'stripe.com', limit: 51 }), { ok: false, status: 400, field: 'limit' })
    t.match(await run({ domain: 'stripe.com', type: 'role' }), { ok: false, status: 400, field: 'type' })
    t.match(await run({ domain: 'x'.repeat(254) }), { ok: false, status: 400, field: 'domain' })
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), {
    code: 'upstream_not_configured',
    message: /HUNTER_API_URL/,
  })
  const p = await standIn(t, hunterStandIn)
  await t.rejects(runInline(handler, handler.example, { providers: { HUNTER_API_URL: p.url } }), {
    code: 'upstream_not_configured',
    message: /HUNTER_API_KEY/,
  })
  const err = await runInline(handler, handler.example, {
    providers: { HUNTER_API_URL: p.url, HUNTER_API_KEY: 'wrong-key-value' },
  }).catch((e) => e)
  t.match(err, { code: 'upstream_failed', message: /401/ })
  t.notMatch(err.message, /wrong-key-value/)
  const limited = await standIn(t, () => ({
    status: 429,
    json: { errors: [{ id: 'too_many_requests', code: 429, details: 'You have reached the rate limit.' }] },
  }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { HUNTER_API_URL: limited.url, HUNTER_API_KEY: KEY } }),
    { code: 'upstream_failed', message: /429/ },
  )
  const garbage = await standIn(t, () => ({ text: 'upstream connect error' }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { HUNTER_API_URL: garbage.url, HUNTER_API_KEY: KEY } }),
    { code: 'upstream_failed', message: /not JSON/ },
  )
})

t.test('null entries in Hunter lists (sources, emails) are skipped, not a crash', async (t) => {
  const odd = await standIn(t, (req) =>
    req.path === '/v2/email-finder'
      ? {
          json: {
            data: {
              first_name: 'Alexis',
              last_name: 'Ohanian',
              email: 'alexis@reddit.com',
              score: 97,
              sources: [null, source(1)],
            },
            meta: { params: {} },
          },
        }
      : {
          json: {
            data: {
              domain: 'stripe.com',
              emails: [null, { value: 'jane@stripe.com', type: 'personal', confidence: 90 }],
            },
            meta: { results: 2 },
          },
        },
  )
  const providers = { HUNTER_API_URL: odd.url, HUNTER_API_KEY: KEY }
  const found = okBody(await runInline(handler, handler.example, { providers }))
  t.match(found, {
    found: true,
    email: 'alexis@reddit.com',
    sourcesCount: 2,
    sources: [{ uri: 'http://example.com/page-1' }],
  })
  t.equal(found.sources.length, 1)
  const domain = okBody(await runInline(handler, { domain: 'stripe.com' }, { providers }))
  t.same(
    domain.emails.map((e: any) => e.email),
    ['jane@stripe.com'],
  )
})
