import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { providerStandIn } from '../../test/helpers/llm-stand-in.js'
import { braveSettings, braveValidationError, braveWebResponse } from '../../test/helpers/search-brave-stand-in.js'
import handler from './index.js'

const RESULTS = [
  {
    title: 'x402 &amp; <strong>HTTP</strong> 402',
    url: 'https://www.x402.org/',
    description: 'An open protocol for <strong>internet-native</strong> payments.',
    age: 'May 6, 2025',
    page_age: '2025-05-06T00:00:00',
    language: 'en',
    family_friendly: true,
    extra_snippets: ['first extra', 'second extra'],
  },
  {
    title: 'coinbase/x402',
    url: 'https://github.com/coinbase/x402',
    description: 'A payments protocol for the internet. Built on HTTP.',
    language: 'en',
    family_friendly: true,
  },
  { title: 'not a web page', url: 'ftp://files.example.com/x' },
]

t.test('the example validates', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('maps Brave web results and sends the right request', async (t) => {
  const brave = await providerStandIn(t, (req) => ({
    json: braveWebResponse(req.query.get('q')!, RESULTS, { altered: 'x402 payments protocol', more: true }),
  }))
  const out = okBody(
    await runInline(
      handler,
      {
        q: ' x402 payment protocol ',
        count: '5',
        country: 'de',
        language: 'EN-GB',
        freshness: 'pw',
        safesearch: 'strict',
      },
      { from: 'query', providers: braveSettings(brave.url) },
    ),
  )
  const sent = brave.received[0]!
  t.equal(sent.path, '/res/v1/web/search')
  t.equal(sent.headers['x-subscription-token'], 'brave-test-token')
  t.equal(sent.query.get('q'), 'x402 payment protocol', 'trimmed')
  t.equal(sent.query.get('count'), '5')
  t.equal(sent.query.get('country'), 'DE')
  t.equal(sent.query.get('search_lang'), 'en-gb')
  t.equal(sent.query.get('freshness'), 'pw')
  t.equal(sent.query.get('safesearch'), 'strict')
  t.equal(sent.query.get('text_decorations'), 'false')
  t.equal(sent.query.has('offset'), false, 'no offset on the first page')
  t.equal(sent.query.has('extra_snippets'), false)

  t.equal(out.query, 'x402 payment protocol')
  t.equal(out.alteredQuery, 'x402 payments protocol')
  t.equal(out.moreResultsAvailable, true)
  t.equal(out.count, 2, 'the ftp result is dropped')
  t.same(out.results[0], {
    position: 1,
    title: 'x402 & HTTP 402',
    url: 'https://www.x402.org/',
    description: 'An open protocol for internet-native payments.',
    age: 'May 6, 2025',
    pageAge: '2025-05-06T00:00:00',
    language: 'en',
    familyFriendly: true,
    hostname: 'www.x402.org',
  })
  t.match(out.results[1], {
    position: 2,
    url: 'https://github.com/coinbase/x402',
    age: null,
    pageAge: null,
    hostname: 'github.com',
  })
  t.equal(out.source, 'Brave Search API')
})

t.test('numeric character references in titles and snippets are decoded', async (t) => {
  const brave = await providerStandIn(t, () => ({
    json: braveWebResponse('q', [
      {
        title: 'It&#x27;s &#8220;fast&#8221; &amp; free',
        url: 'https://a.example/',
        description: 'Don&#39;t wait &#X2014; go',
        extra_snippets: ['&#xD800; stays &#0;'],
      },
    ]),
  }))
  const out = okBody(await runInline(handler, { q: 'x', extraSnippets: true }, { providers: braveSettings(brave.url) }))
  t.equal(out.results[0].title, "It's \u201cfast\u201d & free")
  t.equal(out.results[0].description, "Don't wait \u2014 go")
  t.same(out.results[0].extraSnippets, ['&#xD800; stays &#0;'], 'references that are not characters stay as written')
})

t.test('second page positions and extra snippets', async (t) => {
  const brave = await providerStandIn(t, () => ({ json: braveWebResponse('q', RESULTS.slice(0, 1)) }))
  const out = okBody(
    await runInline(
      handler,
      { q: 'x402', count: 3, offset: 2, extraSnippets: true },
      { providers: braveSettings(brave.url) },
    ),
  )
  t.equal(brave.received[0]!.query.get('offset'), '2')
  t.equal(brave.received[0]!.query.get('extra_snippets'), 'true')
  t.equal(out.results[0].position, 7)
  t.same(out.results[0].extraSnippets, ['first extra', 'second extra'])
})

t.test('no results: an empty list, not an error', async (t) => {
  const brave = await providerStandIn(t, (req) => ({ json: braveWebResponse(req.query.get('q')!, []) }))
  const out = okBody(
    await runInline(handler, { q: 'qwzxv nothing matches this' }, { providers: braveSettings(brave.url) }),
  )
  t.same(out.results, [])
  t.equal(out.count, 0)
  t.equal(out.moreResultsAvailable, false)
  t.equal(brave.received[0]!.query.get('count'), '10', 'default count')
  t.equal(brave.received[0]!.query.get('safesearch'), 'moderate', 'default safesearch')
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = braveSettings('http://127.0.0.1:1')
  t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'q' })
  t.match(await runInline(handler, { q: '' }, { providers }), { ok: false, status: 400, field: 'q' })
  t.match(await runInline(handler, { q: '   ' }, { providers }), { ok: false, status: 400, field: 'q' })
  t.match(await runInline(handler, { q: 'x'.repeat(401) }, { providers }), { ok: false, status: 400, field: 'q' })
  t.match(await runInline(handler, { q: Array(51).fill('w').join(' ') }, { providers }), {
    ok: false,
    status: 400,
    field: 'q',
    message: /50 words/,
  })
  t.match(await runInline(handler, { q: 'a', count: 21 }, { providers }), { ok: false, status: 400, field: 'count' })
  t.match(await runInline(handler, { q: 'a', offset: 10 }, { providers }), { ok: false, status: 400, field: 'offset' })
  t.match(await runInline(handler, { q: 'a', country: 'USA' }, { providers }), {
    ok: false,
    status: 400,
    field: 'country',
  })
  t.match(await runInline(handler, { q: 'a', language: 'english' }, { providers }), {
    ok: false,
    status: 400,
    field: 'language',
  })
  t.match(await runInline(handler, { q: 'a', freshness: 'yesterday' }, { providers }), {
    ok: false,
    status: 400,
    field: 'freshness',
  })
  t.match(await runInline(handler, { q: 'a', freshness: '2025-02-30to2025-03-01' }, { providers }), {
    ok: false,
    status: 400,
    field: 'freshness',
  })
  t.match(await runInline(handler, { q: 'a', freshness: '2025-03-01to2025-01-01' }, { providers }), {
    ok: false,
    status: 400,
    field: 'freshness',
  })
  t.match(await runInline(handler, { q: 'a', safesearch: 'none' }, { providers }), {
    ok: false,
    status: 400,
    field: 'safesearch',
  })
  t.match(await runInline(handler, { q: 'a', page: 2 }, { providers }), { ok: false, status: 400, field: 'page' })
})

t.test('a parameter Brave refuses (422) is a 400 on the buyer field', async (t) => {
  const brave = await providerStandIn(t, () => ({
    status: 422,
    json: braveValidationError('country', "Input should be 'AR', 'AU', ..."),
  }))
  t.match(await runInline(handler, { q: 'a', country: 'XX' }, { providers: braveSettings(brave.url) }), {
    ok: false,
    status: 400,
    field: 'country',
    message: /refused by Brave/,
  })
})

t.test('provider problems: 503 unconfigured, 502 failed', async (t) => {
  await t.rejects(runInline(handler, { q: 'a' }, { providers: {} }), {
    name: 'HandlerUpstreamError',
    code: 'upstream_not_configured',
  })
  await t.rejects(runInline(handler, { q: 'a' }, { providers: { BRAVE_SEARCH_URL: 'http://127.0.0.1:1' } }), {
    code: 'upstream_not_configured',
    message: /BRAVE_SEARCH_API_KEY/,
  })
  const answers = [
    { status: 500, text: 'boom' },
    { status: 401, json: { type: 'ErrorResponse', error: { code: 'SUBSCRIPTION_TOKEN_INVALID' } } },
    { text: '<html>not json</html>' },
    { json: { type: 'suggest', results: [] } },
    { json: { type: 'search', web: { results: 'nope' } } },
    { status: 422, text: 'nope' },
    { status: 422, json: { type: 'ErrorResponse', error: { meta: { errors: { loc: ['query', 'country'] } } } } },
    { status: 422, json: { type: 'ErrorResponse', error: { meta: { errors: [null] } } } },
    { status: 422, json: null },
  ]
  for (const a of answers) {
    const brave = await providerStandIn(t, () => a)
    const err = await runInline(handler, { q: 'a' }, { providers: braveSettings(brave.url) }).then(
      () => null,
      (e: Error) => e,
    )
    t.match(err, { name: 'HandlerUpstreamError', code: 'upstream_failed' }, JSON.stringify(a))
    t.notMatch(err?.message ?? '', /brave-test-token/)
  }
  const down = await runInline(handler, { q: 'a' }, { providers: braveSettings('http://127.0.0.1:1') }).then(
    () => null,
    (e: Error) => e,
  )
  t.match(down, { code: 'upstream_failed', message: /could not be reached/ })
})

// Brave answers a bad subscription token with HTTP 422 SUBSCRIPTION_TOKEN_INVALID, not 401, and a rate or
// quota limit with 429 RATE_LIMITED / QUOTA_LIMITED, in its ErrorResponse shape { type, error: { id, status,
// code, detail, meta }, time } (Brave's API reference at api-dashboard.search.brave.com/api-reference;
// brave/brave-search-mcp-server src/BraveAPI/types.ts RateLimitErrorResponse): the operator's problem, a 502, never a buyer's 400
t.test("Brave's documented token and rate-limit errors are a 502", async (t) => {
  const errors = [
    {
      status: 422,
      json: {
        type: 'ErrorResponse',
        error: {
          id: 'e1',
          status: 422,
          code: 'SUBSCRIPTION_TOKEN_INVALID',
          detail: 'The provided subscription token is invalid.',
          meta: { component: 'authentication' },
        },
        time: 1663072993,
      },
    },
    {
      status: 429,
      json: {
        type: 'ErrorResponse',
        error: {
          id: 'e2',
          status: 429,
          code: 'RATE_LIMITED',
          detail: 'Request rate limit exceeded for plan.',
          meta: {
            plan: 'Free',
            rate_limit: 1,
            rate_current: 2,
            quota_limit: 2000,
            quota_current: 10,
            component: 'rate_limiter',
          },
        },
        time: 1663072993,
      },
    },
  ]
  for (const answer of errors) {
    const brave = await providerStandIn(t, () => answer)
    const message =
      answer.status === 422 ? /HTTP 422 \(SUBSCRIPTION_TOKEN_INVALID\)$/ : new RegExp(`HTTP ${answer.status}`)
    await t.rejects(
      runInline(handler, { q: 'x' }, { providers: { BRAVE_SEARCH_URL: brave.url, BRAVE_SEARCH_API_KEY: 'k' } }),
      { code: 'upstream_failed', message },
      'the error names what Brave refused',
    )
  }
})
