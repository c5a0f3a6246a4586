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
} from '../../test/helpers/llm-stand-in.js'
import { braveSettings, braveWebResponse, type StandInResult } from '../../test/helpers/search-brave-stand-in.js'
import handler from './index.js'

const CLAIM = 'The Eiffel Tower is taller than 300 metres.'
const RESULTS: StandInResult[] = [
  {
    title: 'Eiffel Tower - Wikipedia',
    url: 'https://en.wikipedia.org/wiki/Eiffel_Tower',
    description: 'The tower is 330 metres (1,083 ft) tall, about the same height as an 81-storey building.',
    age: 'November 2, 2025',
    extra_snippets: ['It was the tallest man-made structure in the world until 1930.'],
  },
  {
    title: 'The Eiffel Tower in figures',
    url: 'https://www.toureiffel.paris/en/the-monument/key-figures',
    description: 'Height: 330 m since 2022 with the new antenna.',
  },
  { title: 'Paris travel guide', url: 'https://example.org/paris/' },
]

/** one stand-in serving Brave at /res/v1/... and the model at /v1/chat/completions */
async function stand(
  t: Parameters<typeof providerStandIn>[0],
  model: Answer | ((data: any) => Answer),
  results = RESULTS,
) {
  const p = await providerStandIn(t, (req) => {
    if (req.path === '/res/v1/web/search') return { json: braveWebResponse(req.query.get('q')!, results) }
    if (req.path === '/v1/chat/completions') return typeof model === 'function' ? model(sentData(req)) : model
    return { status: 404, text: 'no route' }
  })
  return { ...p, providers: { ...braveSettings(p.url), ...llmSettings(p.url) } }
}

t.test('the example validates', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('search, then a verdict citing search results only', async (t) => {
  const s = await stand(t, (data) => ({
    json: chatCompletion({
      verdict: 'supported',
      confidence: 0.934,
      explanation: 'Source 1 and 2 give a height of 330 m.',
      citations: [
        { url: data.sources[0].url, stance: 'supports' },
        { url: 'https://www.toureiffel.paris/en/the-monument/key-figures/', stance: 'supports' },
        { url: data.sources[0].url, stance: 'supports' },
      ],
    }),
  }))
  const out = okBody(await runInline(handler, { claim: CLAIM, count: 5, language: 'en' }, { providers: s.providers }))
  const [search, chat] = s.received
  t.equal(search!.path, '/res/v1/web/search')
  t.equal(search!.query.get('q'), CLAIM)
  t.equal(search!.query.get('count'), '5')
  t.equal(search!.query.get('search_lang'), 'en')
  t.equal(search!.headers['x-subscription-token'], 'brave-test-token')
  t.equal(chat!.headers.authorization, 'Bearer sk-test-llm-key')
  const data = sentData(chat!)
  t.equal(data.claim, CLAIM)
  t.same(
    data.sources.map((x: any) => x.url),
    RESULTS.map((r) => r.url),
    'the model sees the search results',
  )
  t.same(data.sources[0].extraSnippets, ['It was the tallest man-made structure in the world until 1930.'])
  t.equal(data.sources[0].snippet, RESULTS[0]!.description)
  t.match(sentSystem(chat!), /only the numbered search results/)

  t.equal(out.verdict, 'supported')
  t.equal(out.confidence, 0.93)
  t.same(
    out.citations,
    [
      {
        position: 1,
        url: 'https://en.wikipedia.org/wiki/Eiffel_Tower',
        title: 'Eiffel Tower - Wikipedia',
        stance: 'supports',
      },
      {
        position: 2,
        url: 'https://www.toureiffel.paris/en/the-monument/key-figures',
        title: 'The Eiffel Tower in figures',
        stance: 'supports',
      },
    ],
    'URLs as the search gave them, each once',
  )
  t.equal(out.sources.length, 3)
  t.match(out.sources[0], { position: 1, age: 'November 2, 2025' })
  t.equal(out.searchQuery, CLAIM)
  t.equal(out.model, 'gpt-4o-mini-2024-07-18')
  t.same(out.usage, { promptTokens: 321, completionTokens: 54, totalTokens: 375 })
})

t.test('an explanation naming the search results it was given is accepted', async (t) => {
  const s = await stand(t, {
    json: chatCompletion({
      verdict: 'supported',
      confidence: 0.8,
      explanation: 'Source 1 (https://en.wikipedia.org/wiki/Eiffel_Tower) and [2-3] put it at 330 m.',
      citations: [{ url: RESULTS[0]!.url, stance: 'supports' }],
    }),
  })
  t.match(okBody(await runInline(handler, { claim: CLAIM }, { providers: s.providers })), {
    verdict: 'supported',
    explanation: /Source 1/,
  })
})

t.test('a citation of a search result written in another form of its URL maps to that result', async (t) => {
  const results = [...RESULTS, { title: 'Köln', url: 'https://de.wikipedia.org/wiki/K%C3%B6ln' }]
  const s = await stand(
    t,
    {
      json: chatCompletion({
        verdict: 'supported',
        confidence: 0.8,
        explanation: 'x',
        citations: [
          { url: 'https://EN.Wikipedia.org/wiki/Eiffel_Tower#Height', stance: 'supports' },
          { url: 'https://de.wikipedia.org/wiki/Köln', stance: 'context' },
        ],
      }),
    },
    results,
  )
  const out = okBody(await runInline(handler, { claim: CLAIM }, { providers: s.providers }))
  t.same(
    out.citations.map((c: any) => [c.position, c.url]),
    [
      [1, RESULTS[0]!.url],
      [4, 'https://de.wikipedia.org/wiki/K%C3%B6ln'],
    ],
    'the URLs as the search gave them',
  )
})

t.test('a searchQuery is searched instead of the claim', async (t) => {
  const s = await stand(t, {
    json: chatCompletion({
      verdict: 'unverifiable',
      confidence: 0.2,
      explanation: 'The sources do not say.',
      citations: [],
    }),
  })
  const out = okBody(
    await runInline(
      handler,
      { claim: CLAIM, searchQuery: 'eiffel tower height' },
      { from: 'query', providers: s.providers },
    ),
  )
  t.equal(s.received[0]!.query.get('q'), 'eiffel tower height')
  t.equal(s.received[0]!.query.get('count'), '8', 'default count')
  t.match(out, { verdict: 'unverifiable', citations: [], searchQuery: 'eiffel tower height' })
})

t.test('no search results: unverifiable, no model call', async (t) => {
  const s = await stand(t, { status: 500, text: 'must not be called' }, [])
  const out = okBody(await runInline(handler, { claim: CLAIM }, { providers: s.providers }))
  t.equal(s.received.length, 1, 'only the search')
  t.match(out, { verdict: 'unverifiable', confidence: null, citations: [], sources: [], model: null, usage: null })
})

t.test('invented citations and bad verdicts are refused (502)', async (t) => {
  const bad: Answer[] = [
    {
      json: chatCompletion({
        verdict: 'supported',
        confidence: 0.9,
        explanation: 'x',
        citations: [{ url: 'https://made-up.example.com/eiffel', stance: 'supports' }],
      }),
    },
    { json: chatCompletion({ verdict: 'refuted', confidence: 0.9, explanation: 'x', citations: [] }) },
    { json: chatCompletion({ verdict: 'true', confidence: 0.9, explanation: 'x', citations: [] }) },
    {
      json: chatCompletion({
        verdict: 'supported',
        confidence: 90,
        explanation: 'x',
        citations: [{ url: RESULTS[0]!.url, stance: 'supports' }],
      }),
    },
    {
      json: chatCompletion({
        verdict: 'supported',
        confidence: 0.9,
        explanation: 'x',
        citations: [{ url: RESULTS[0]!.url, stance: 'agrees' }],
      }),
    },
    {
      json: chatCompletion({
        verdict: 'supported',
        confidence: 0.9,
        citations: [{ url: RESULTS[0]!.url, stance: 'supports' }],
      }),
    },
    {
      json: chatCompletion({
        verdict: 'supported',
        confidence: 0.9,
        explanation: 'x',
        citations: [{ url: RESULTS[0]!.url, stance: 'supports', title: 'invented title' }],
      }),
    },
    // the explanation must not name what the search did not return either
    {
      json: chatCompletion({
        verdict: 'supported',
        confidence: 0.9,
        explanation: 'Confirmed by https://made-up.example.com/eiffel and source 1.',
        citations: [{ url: RESULTS[0]!.url, stance: 'supports' }],
      }),
    },
    {
      json: chatCompletion({
        verdict: 'supported',
        confidence: 0.9,
        explanation: 'Sources [1] and [7] agree.',
        citations: [{ url: RESULTS[0]!.url, stance: 'supports' }],
      }),
    },
    {
      json: chatCompletion({
        verdict: 'supported',
        confidence: 0.9,
        explanation: 'Source 5 gives 330 m.',
        citations: [{ url: RESULTS[0]!.url, stance: 'supports' }],
      }),
    },
  ]
  for (const a of bad) {
    const s = await stand(t, a)
    await t.rejects(
      runInline(handler, { claim: CLAIM }, { providers: s.providers }),
      { name: 'HandlerUpstreamError', code: 'upstream_failed' },
      JSON.stringify(a).slice(200, 380),
    )
  }
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = { ...braveSettings('http://127.0.0.1:1'), ...llmSettings('http://127.0.0.1:1') }
  t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'claim' })
  t.match(await runInline(handler, { claim: 'hi' }, { providers }), { ok: false, status: 400, field: 'claim' })
  t.match(await runInline(handler, { claim: '   hi       ' }, { providers }), {
    ok: false,
    status: 400,
    field: 'claim',
  })
  t.match(await runInline(handler, { claim: 'x'.repeat(501) }, { providers }), {
    ok: false,
    status: 400,
    field: 'claim',
  })
  t.match(await runInline(handler, { claim: Array(60).fill('word').join(' ') }, { providers }), {
    ok: false,
    status: 400,
    field: 'claim',
    message: /searchQuery/,
  })
  t.match(await runInline(handler, { claim: CLAIM, searchQuery: '   ' }, { providers }), {
    ok: false,
    status: 400,
    field: 'searchQuery',
  })
  t.match(await runInline(handler, { claim: CLAIM, count: 2 }, { providers }), {
    ok: false,
    status: 400,
    field: 'count',
  })
  t.match(await runInline(handler, { claim: CLAIM, country: 'France' }, { providers }), {
    ok: false,
    status: 400,
    field: 'country',
  })
})

t.test('provider problems: 503 unconfigured, 502 failed', async (t) => {
  await t.rejects(runInline(handler, { claim: CLAIM }, { providers: {} }), { code: 'upstream_not_configured' })
  const s = await stand(t, { json: chatCompletion({}) })
  await t.rejects(
    runInline(handler, { claim: CLAIM }, { providers: braveSettings(s.url) }),
    { code: 'upstream_not_configured', message: /LLM_API_URL/ },
    'search configured, model not',
  )
  t.equal(s.received.length, 0, 'nothing is searched when the model is not configured')
  const down = await providerStandIn(t, () => ({ status: 502, text: 'bad gateway' }))
  await t.rejects(
    runInline(handler, { claim: CLAIM }, { providers: { ...braveSettings(down.url), ...llmSettings(down.url) } }),
    { code: 'upstream_failed', message: /Brave Search/ },
  )
})
