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
import handler, { DEFAULT_TOPICS } from './index.js'

const TEXT = 'The central bank raised interest rates by half a point, sending tech stocks lower.'
const LABELS = ['economy', 'sports', 'technology', 'weather']

t.test('the example validates', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('multi-label: scores sorted, labels at or above the threshold', async (t) => {
  const llm = await providerStandIn(t, () => ({
    json: chatCompletion({
      scores: [
        { label: 'economy', score: 0.93 },
        { label: 'sports', score: 0.01 },
        { label: 'technology', score: 0.55 },
        { label: 'weather', score: 0 },
      ],
    }),
  }))
  const out = okBody(
    await runInline(
      handler,
      { text: TEXT, labels: LABELS, multiLabel: true, threshold: 0.5 },
      { providers: llmSettings(llm.url) },
    ),
  )
  const req = llm.received[0]!
  t.equal(req.path, '/v1/chat/completions')
  t.equal(req.headers.authorization, 'Bearer sk-test-llm-key')
  t.same(req.json.response_format, { type: 'json_object' })
  t.same(sentData(req), { labels: LABELS, text: TEXT })
  t.match(sentSystem(req), /several, one or none/)
  t.same(out.scores, [
    { label: 'economy', score: 0.93 },
    { label: 'technology', score: 0.55 },
    { label: 'sports', score: 0.01 },
    { label: 'weather', score: 0 },
  ])
  t.equal(out.label, 'economy')
  t.same(out.labels, ['economy', 'technology'])
  t.equal(out.threshold, 0.5)
  t.equal(out.labelSet, 'given')
  t.same(out.usage, { promptTokens: 321, completionTokens: 54, totalTokens: 375 })
})

t.test('single-label with the default topics', async (t) => {
  const scores = DEFAULT_TOPICS.map((label) => ({
    label,
    score: label === 'finance' ? 0.7 : label === 'business' ? 0.2 : 0.1 / (DEFAULT_TOPICS.length - 2),
  }))
  const llm = await providerStandIn(t, () => ({ json: chatCompletion({ scores }) }))
  const out = okBody(await runInline(handler, { text: TEXT }, { from: 'query', providers: llmSettings(llm.url) }))
  t.same(sentData(llm.received[0]!).labels, [...DEFAULT_TOPICS])
  t.match(sentSystem(llm.received[0]!), /Exactly one label applies/)
  t.equal(out.label, 'finance')
  t.same(out.labels, ['finance'])
  t.equal(out.scores.length, DEFAULT_TOPICS.length)
  t.equal(out.threshold, null)
  t.equal(out.labelSet, 'default-topics')
})

t.test('labels the model invents, drops or repeats are refused (502)', async (t) => {
  const s = (...pairs: Array<[string, number]>) => ({
    json: chatCompletion({ scores: pairs.map(([label, score]) => ({ label, score })) }),
  })
  const bad: Answer[] = [
    s(['economy', 0.9], ['sports', 0.1], ['technology', 0.2]), // one missing
    s(['economy', 0.9], ['sports', 0.1], ['technology', 0.2], ['politics', 0.4]), // invented
    s(['economy', 0.9], ['economy', 0.8], ['technology', 0.2], ['weather', 0.1]), // repeated
    s(['Economy', 0.9], ['sports', 0.1], ['technology', 0.2], ['weather', 0.1]), // respelled
    s(['economy', 1.4], ['sports', 0.1], ['technology', 0.2], ['weather', 0.1]), // out of range
    s(['economy', 0.9], ['sports', 0.1], ['technology', 0.2], ['weather', 0.1], ['economy', 0.1]),
    { json: chatCompletion({ economy: 0.9, sports: 0.1, technology: 0.2, weather: 0.1 }) },
    {
      json: chatCompletion({
        scores: [
          { label: 'economy', score: '0.9' },
          { label: 'sports', score: 0 },
          { label: 'technology', score: 0 },
          { label: 'weather', score: 0 },
        ],
      }),
    },
  ]
  for (const a of bad) {
    const llm = await providerStandIn(t, () => a)
    await t.rejects(
      runInline(handler, { text: TEXT, labels: LABELS }, { providers: llmSettings(llm.url) }),
      { name: 'HandlerUpstreamError', code: 'upstream_failed' },
      JSON.stringify(a).slice(60, 200),
    )
  }
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = llmSettings('http://127.0.0.1:1')
  t.match(await runInline(handler, { labels: LABELS }, { providers }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: ' ', labels: LABELS }, { providers }), {
    ok: false,
    status: 400,
    field: 'text',
  })
  t.match(await runInline(handler, { text: 'x'.repeat(20_001) }, { providers }), {
    ok: false,
    status: 400,
    field: 'text',
  })
  t.match(await runInline(handler, { text: 'a', labels: ['one'] }, { providers }), {
    ok: false,
    status: 400,
    field: 'labels',
  })
  t.match(await runInline(handler, { text: 'a', labels: ['one', 'one'] }, { providers }), {
    ok: false,
    status: 400,
    field: 'labels',
  })
  t.match(await runInline(handler, { text: 'a', labels: ['One', 'one '] }, { providers }), {
    ok: false,
    status: 400,
    field: 'labels',
    message: /distinct/,
  })
  t.match(await runInline(handler, { text: 'a', labels: ['one', '  '] }, { providers }), {
    ok: false,
    status: 400,
    field: 'labels',
  })
  t.match(
    await runInline(handler, { text: 'a', labels: Array.from({ length: 51 }, (_, i) => `l${i}`) }, { providers }),
    { ok: false, status: 400, field: 'labels' },
  )
  t.match(await runInline(handler, { text: 'a', labels: ['one', 'x'.repeat(61)] }, { providers }), {
    ok: false,
    status: 400,
    field: 'labels.1',
  })
  t.match(await runInline(handler, { text: 'a', threshold: 1.5 }, { providers }), {
    ok: false,
    status: 400,
    field: 'threshold',
  })
})

t.test('provider problems: 503 unconfigured, 502 failed', async (t) => {
  await t.rejects(runInline(handler, { text: 'a' }, { providers: {} }), { code: 'upstream_not_configured' })
  const llm = await providerStandIn(t, () => ({
    status: 429,
    json: { error: { message: 'Rate limit reached', type: 'requests' } },
  }))
  await t.rejects(runInline(handler, { text: 'a' }, { providers: llmSettings(llm.url) }), {
    code: 'upstream_failed',
    message: /HTTP 429/,
  })
})
