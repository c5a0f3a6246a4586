import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import {
  chatCompletion,
  llmSettings,
  providerStandIn,
  sentData,
  sentSystem,
  type Answer,
  type Received,
} from '../../test/helpers/llm-stand-in.js'
import { braveSettings, braveSuggestResponse, braveValidationError } from '../../test/helpers/search-brave-stand-in.js'
import handler from './index.js'

const SUGGEST: Record<string, string[]> = {
  'running shoes': ['running shoes', 'running shoes for women', 'running shoes sale', 'Running  Shoes Nike'],
  'best running shoes': ['best running shoes', 'best running shoes for flat feet', 'running shoes sale'],
  'how running shoes': ['how running shoes should fit'],
}
const CLUSTERS = {
  clusters: [
    { name: 'Buying', intent: 'transactional', keywords: ['running shoes sale'] },
    {
      name: 'Choosing',
      intent: 'commercial',
      keywords: ['running shoes for women', 'best running shoes', 'best running shoes for flat feet'],
    },
    { name: 'Fit', intent: 'informational', keywords: ['how running shoes should fit'] },
    { name: 'Brands', intent: 'navigational', keywords: ['Running Shoes Nike'] },
  ],
}

async function stand(
  t: Parameters<typeof providerStandIn>[0],
  model: Answer = { json: chatCompletion(CLUSTERS) },
  suggest: (q: string) => Answer = (q) => ({ json: braveSuggestResponse(q, SUGGEST[q] ?? []) }),
) {
  const p = await providerStandIn(t, (req: Received) => {
    if (req.path === '/res/v1/suggest/search') return suggest(req.query.get('q')!)
    if (req.path === '/v1/chat/completions') return model
    return { status: 404, text: 'no route' }
  })
  return { ...p, providers: { ...braveSettings(p.url), ...llmSettings(p.url) } }
}

t.test('a keyword with $ signs goes into the query patterns unchanged', async (t) => {
  const s = await stand(t)
  okBody(await runInline(handler, { keyword: "save $$ with $& and $'", expansions: 2 }, { providers: s.providers }))
  t.same(
    s.received.filter((r) => r.path === '/res/v1/suggest/search').map((r) => r.query.get('q')),
    ["save $$ with $& and $'", "best save $$ with $& and $'", "how save $$ with $& and $'"],
  )
})

t.test('the example validates', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('suggestions, clustered by intent, no volumes', async (t) => {
  const s = await stand(t)
  const out = okBody(
    await runInline(
      handler,
      { keyword: '  running   shoes ', expansions: 2, count: 8, country: 'gb', language: 'EN' },
      { providers: s.providers },
    ),
  )
  const calls = s.received.filter((r) => r.path === '/res/v1/suggest/search')
  t.same(
    calls.map((r) => r.query.get('q')),
    ['running shoes', 'best running shoes', 'how running shoes'],
  )
  t.ok(
    calls.every((r) => r.query.get('count') === '8' && r.query.get('country') === 'GB' && r.query.get('lang') === 'en'),
  )
  t.ok(
    calls.every((r) => r.headers['x-subscription-token'] === 'brave-test-token'),
    'the search key when no suggest key is set',
  )
  const chat = s.received.find((r) => r.path === '/v1/chat/completions')!
  t.same(
    sentData(chat),
    {
      seed: 'running shoes',
      keywords: [
        'running shoes for women',
        'running shoes sale',
        'Running Shoes Nike',
        'best running shoes',
        'best running shoes for flat feet',
        'how running shoes should fit',
      ],
    },
    'distinct suggestions, the seed left out, white space normalised',
  )
  t.match(sentSystem(chat), /Do not estimate search volumes/)

  t.same(out.queries, ['running shoes', 'best running shoes', 'how running shoes'])
  t.equal(out.volume, null)
  t.match(out.volumeNote, /No search volumes/)
  t.same(
    out.keywords.find((k: any) => k.keyword === 'running shoes sale'),
    { keyword: 'running shoes sale', from: 'running shoes', cluster: 'Buying', intent: 'transactional' },
  )
  t.same(
    out.keywords.find((k: any) => k.keyword === 'best running shoes for flat feet'),
    {
      keyword: 'best running shoes for flat feet',
      from: 'best running shoes',
      cluster: 'Choosing',
      intent: 'commercial',
    },
  )
  t.same(out.intentCounts, { informational: 1, commercial: 3, transactional: 1, navigational: 1 })
  t.same(out.unclustered, [])
  t.equal(out.clusters.length, 4)
  t.ok(
    out.keywords.every((k: any) => !('volume' in k) && !('searchVolume' in k)),
    'no per-keyword volume',
  )
  t.same(out.usage, { promptTokens: 321, completionTokens: 54, totalTokens: 375 })
})

t.test('a dedicated suggest key is used when set; keywords the model leaves out are listed', async (t) => {
  const partial = { clusters: [{ name: 'Buying', intent: 'transactional', keywords: ['running shoes sale'] }] }
  const s = await stand(t, { json: chatCompletion(partial) })
  const out = okBody(
    await runInline(
      handler,
      { keyword: 'running shoes', expansions: 0 },
      { from: 'query', providers: { ...s.providers, BRAVE_SUGGEST_API_KEY: 'suggest-token' } },
    ),
  )
  t.equal(s.received[0]!.headers['x-subscription-token'], 'suggest-token')
  t.equal(s.received[0]!.query.get('count'), '10', 'default count')
  t.equal(s.received.filter((r) => r.path === '/res/v1/suggest/search').length, 1, 'expansions 0: the seed only')
  t.same(out.unclustered, ['running shoes for women', 'Running Shoes Nike'])
  t.match(
    out.keywords.find((k: any) => k.keyword === 'Running Shoes Nike'),
    { cluster: null, intent: null },
  )
  // without BRAVE_SEARCH_API_KEY at all, the suggest key alone is enough
  const only = { BRAVE_SEARCH_URL: s.url, BRAVE_SUGGEST_API_KEY: 'suggest-token', ...llmSettings(s.url) }
  t.ok(
    okBody(await runInline(handler, { keyword: 'running shoes', expansions: 0 }, { providers: only })).clusters.length,
  )
})

t.test('no suggestions: empty answer, no model call', async (t) => {
  const s = await stand(t, { status: 500, text: 'must not be called' })
  const out = okBody(await runInline(handler, { keyword: 'qzxv unknown' }, { providers: s.providers }))
  t.equal(s.received.filter((r) => r.path === '/v1/chat/completions').length, 0)
  t.match(out, { keywords: [], clusters: [], model: null, usage: null, volume: null })
})

t.test('invented, repeated or mis-shaped clusters are refused (502)', async (t) => {
  const bad = [
    { clusters: [{ name: 'X', intent: 'commercial', keywords: ['running shoes sale', 'cheap running shoes'] }] }, // not suggested
    {
      clusters: [
        { name: 'X', intent: 'commercial', keywords: ['running shoes sale'] },
        { name: 'Y', intent: 'transactional', keywords: ['running shoes sale'] },
      ],
    },
    { clusters: [{ name: 'X', intent: 'local', keywords: ['running shoes sale'] }] },
    { clusters: [{ name: 'X', intent: 'commercial', keywords: ['running shoes sale'], volume: 12000 }] },
    { clusters: [] },
    { keywords: [{ keyword: 'running shoes sale', intent: 'commercial' }] },
  ]
  for (const c of bad) {
    const s = await stand(t, { json: chatCompletion(c) })
    await t.rejects(
      runInline(handler, { keyword: 'running shoes', expansions: 0 }, { providers: s.providers }),
      { name: 'HandlerUpstreamError', code: 'upstream_failed' },
      JSON.stringify(c),
    )
  }
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = { ...braveSettings('http://127.0.0.1:1'), ...llmSettings('http://127.0.0.1:1') }
  t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'keyword' })
  t.match(await runInline(handler, { keyword: ' a ' }, { providers }), { ok: false, status: 400, field: 'keyword' })
  t.match(await runInline(handler, { keyword: 'x'.repeat(101) }, { providers }), {
    ok: false,
    status: 400,
    field: 'keyword',
  })
  t.match(await runInline(handler, { keyword: 'shoes', expansions: 7 }, { providers }), {
    ok: false,
    status: 400,
    field: 'expansions',
  })
  t.match(await runInline(handler, { keyword: 'shoes', count: 0 }, { providers }), {
    ok: false,
    status: 400,
    field: 'count',
  })
  t.match(await runInline(handler, { keyword: 'shoes', country: 'U' }, { providers }), {
    ok: false,
    status: 400,
    field: 'country',
  })
  t.match(await runInline(handler, { keyword: 'shoes', volume: true }, { providers }), {
    ok: false,
    status: 400,
    field: 'volume',
  })
  const s = await stand(t, undefined, () => ({
    status: 422,
    json: braveValidationError('lang', 'unsupported language'),
  }))
  t.match(await runInline(handler, { keyword: 'shoes', language: 'xx' }, { providers: s.providers }), {
    ok: false,
    status: 400,
    field: 'language',
  })
})

t.test('provider problems: 503 unconfigured before any call, 502 failed', async (t) => {
  await t.rejects(runInline(handler, { keyword: 'shoes' }, { providers: {} }), { code: 'upstream_not_configured' })
  const s = await stand(t)
  await t.rejects(
    runInline(handler, { keyword: 'shoes' }, { providers: { BRAVE_SEARCH_URL: s.url, ...llmSettings(s.url) } }),
    { code: 'upstream_not_configured', message: /BRAVE_SUGGEST_API_KEY/ },
  )
  await t.rejects(runInline(handler, { keyword: 'shoes' }, { providers: braveSettings(s.url) }), {
    code: 'upstream_not_configured',
    message: /LLM_API/,
  })
  t.equal(s.received.length, 0)
  const garbage = await stand(t, undefined, () => ({ json: { type: 'search', results: [] } }))
  await t.rejects(runInline(handler, { keyword: 'shoes', expansions: 0 }, { providers: garbage.providers }), {
    code: 'upstream_failed',
  })
  const down = await stand(t, undefined, () => ({
    status: 429,
    json: { type: 'ErrorResponse', error: { code: 'RATE_LIMITED' } },
  }))
  await t.rejects(runInline(handler, { keyword: 'shoes', expansions: 0 }, { providers: down.providers }), {
    code: 'upstream_failed',
    message: /HTTP 429/,
  })
})
