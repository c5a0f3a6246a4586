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
import { braveSettings, braveValidationError, braveWebResponse } from '../../test/helpers/search-brave-stand-in.js'
import handler, { checkCitations } from './index.js'

const TOPIC = 'How does the x402 payment protocol work?'
const PAGE_HTML =
  '<html><head><title>x402</title><script>var tracking = 1</script></head><body><nav>Home | Docs</nav><main><h1>x402</h1><p>A server answers <b>402 Payment Required</b> with payment requirements.</p><p>The client signs an EIP-3009 authorization.</p></main><footer>© 2025</footer></body></html>'

const REPORT = {
  title: 'How x402 works',
  summary: 'x402 uses HTTP 402 to ask for payment [1]. A facilitator settles the transfer [3].',
  sections: [
    {
      heading: '## The flow',
      markdown:
        'The server answers 402 with requirements [1, 2]; see https://docs.example/x402/facilitator for the facilitator.',
    },
    { heading: 'Settlement', markdown: '- The facilitator verifies and settles [3-4].' },
  ],
}

interface StandOpts {
  report?: Answer | ((data: any) => Answer)
  plan?: Answer
  empty?: boolean
}

/** Brave, the model and the result pages on one stand-in */
async function stand(t: Parameters<typeof providerStandIn>[0], o: StandOpts = {}) {
  let base = ''
  const route = (req: Received): Answer => {
    if (req.path === '/res/v1/web/search') {
      const q = req.query.get('q')!
      if (o.empty) return { json: braveWebResponse(q, []) }
      if (q === TOPIC || q === 'x402 overview') {
        return {
          json: braveWebResponse(q, [
            { title: 'x402 overview', url: `${base}/page/overview`, description: 'x402 revives HTTP 402.' },
            { title: 'Plain notes', url: `${base}/page/notes`, description: 'Notes in plain text.' },
            { title: 'Gone', url: `${base}/page/gone`, description: 'A removed page.' },
          ]),
        }
      }
      return {
        json: braveWebResponse(q, [
          {
            title: 'Facilitator [docs]',
            url: 'https://docs.example/x402/facilitator',
            description: 'The facilitator verifies and settles payments.',
          },
          { title: 'x402 overview (dup)', url: `${base}/page/overview/`, description: 'duplicate' },
        ]),
      }
    }
    if (req.path === '/v1/chat/completions') {
      if (/Plan web searches/.test(sentSystem(req)))
        return (
          o.plan ?? {
            json: chatCompletion(
              { queries: ['x402 facilitator settlement'] },
              { usage: { prompt_tokens: 40, completion_tokens: 10, total_tokens: 50 } },
            ),
          }
        )
      const r = o.report ?? { json: chatCompletion(REPORT) }
      return typeof r === 'function' ? r(sentData(req)) : r
    }
    if (req.path === '/page/overview')
      return { text: PAGE_HTML, headers: { 'content-type': 'text/html; charset=utf-8' } }
    if (req.path === '/page/notes')
      return { text: 'Line one of the notes.\n\n\n\nLine two.', headers: { 'content-type': 'text/plain' } }
    return { status: 404, text: 'not found' }
  }
  const p = await providerStandIn(t, route)
  base = p.url
  return { ...p, providers: { ...braveSettings(p.url), ...llmSettings(p.url) } }
}

t.test('the example validates', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('plans searches, reads pages, writes a cited report', async (t) => {
  const s = await stand(t)
  const out = okBody(
    await runInline(
      handler,
      { topic: TOPIC, searches: 2, resultsPerSearch: 3, fetchPages: 4 },
      { providers: s.providers },
    ),
  )
  const searches = s.received.filter((r) => r.path === '/res/v1/web/search')
  t.same(
    searches.map((r) => r.query.get('q')).sort(),
    [TOPIC, 'x402 facilitator settlement'].sort(),
    'the topic and the planned search',
  )
  t.ok(searches.every((r) => r.query.get('count') === '3' && r.headers['x-subscription-token'] === 'brave-test-token'))
  t.same(out.queries, [TOPIC, 'x402 facilitator settlement'])

  // interleaved, the duplicate (trailing slash) merged
  t.same(
    out.sources.map((x: any) => x.title),
    ['x402 overview', 'Facilitator [docs]', 'Plain notes', 'Gone'],
  )
  t.same(
    out.sources.map((x: any) => x.n),
    [1, 2, 3, 4],
  )
  const chats = s.received.filter((r) => r.path === '/v1/chat/completions')
  t.equal(chats.length, 2)
  const given = sentData(chats[1]!)
  t.equal(given.topic, TOPIC)
  t.match(
    given.sources[0].pageText,
    /402 Payment Required with payment requirements\.\nThe client signs/,
    'readable text, block by block',
  )
  t.notMatch(given.sources[0].pageText, /tracking|Home \| Docs/, 'no scripts, no site chrome')
  t.equal(given.sources[1].pageText, undefined, 'docs.example is not reachable here: snippet only')
  t.equal(given.sources[2].pageText, 'Line one of the notes.\n\nLine two.')
  t.equal(given.sources[3].pageText, undefined, '404')
  t.match(out.sources[0], { fetched: true, fetchNote: null })
  t.match(out.sources[1], { fetched: false, fetchNote: 'the page could not be fetched: its host does not resolve' })
  t.match(out.sources[2], { fetched: true, pageChars: 'Line one of the notes.\n\nLine two.'.length })
  t.match(out.sources[3], { fetched: false, fetchNote: 'the page answered HTTP 404' })
  t.equal(out.sources[0].text, undefined, 'page texts are not echoed')

  t.same(out.citations, [1, 2, 3, 4], '[1], [1, 2], the URL of source 2, [3-4]')
  t.equal(out.title, 'How x402 works')
  t.same(
    out.sections.map((x: any) => x.heading),
    ['The flow', 'Settlement'],
    'heading marks stripped',
  )
  t.match(out.markdown, /^# How x402 works\n\nx402 uses HTTP 402/)
  t.match(
    out.markdown,
    /## Sources\n\n1\. \[x402 overview\]\(http:\/\/127\.0\.0\.1:\d+\/page\/overview\)\n2\. \[Facilitator \\\[docs\\\]\]\(https:\/\/docs\.example\/x402\/facilitator\)/,
  )
  t.equal(out.model, 'gpt-4o-mini-2024-07-18')
  t.same(out.usage, { promptTokens: 361, completionTokens: 64, totalTokens: 425 }, 'both model calls counted')
})

t.test('given queries: no planning; fetchPages 0 reads nothing', async (t) => {
  const s = await stand(t, {
    report: {
      json: chatCompletion({
        ...REPORT,
        summary: 'Only one source [2].',
        sections: [
          { heading: 'A', markdown: 'x [2]' },
          { heading: 'B', markdown: 'y' },
        ],
      }),
    },
  })
  const out = okBody(
    await runInline(
      handler,
      { topic: TOPIC, queries: ['x402 overview'], fetchPages: 0 },
      { from: 'query', providers: s.providers },
    ),
  )
  t.equal(s.received.filter((r) => r.path === '/v1/chat/completions').length, 1)
  t.equal(s.received.filter((r) => r.path.startsWith('/page/')).length, 0)
  t.same(out.queries, ['x402 overview'])
  t.same(out.citations, [2])
  t.match(out.markdown, /## Sources\n\n2\. \[Plain notes\]/)
  t.notMatch(out.markdown, /x402 overview\]\(/, 'uncited sources are not listed')
  t.ok(out.sources.every((x: any) => x.fetchNote === 'not fetched (beyond fetchPages)'))
})

t.test('without the private-network switch, result pages on internal addresses are not read', async (t) => {
  const s = await stand(t, {
    report: {
      json: chatCompletion({
        title: 'T',
        summary: 'S [1].',
        sections: [
          { heading: 'A', markdown: 'a [2]' },
          { heading: 'B', markdown: 'b' },
        ],
      }),
    },
  })
  const out = okBody(
    await runInline(
      handler,
      { topic: TOPIC, queries: ['x402 overview'], fetchPages: 2 },
      { providers: s.providers, allowPrivateNetwork: false },
    ),
  )
  t.equal(s.received.filter((r) => r.path.startsWith('/page/')).length, 0)
  t.match(out.sources[0], { fetched: false, fetchNote: 'refused: not a public address' })
})

t.test('invented citations, URLs and shapes are refused (502)', async (t) => {
  const bad: Answer[] = [
    { json: chatCompletion({ ...REPORT, summary: 'See [7].' }) },
    { json: chatCompletion({ ...REPORT, summary: 'See [0].' }) },
    {
      json: chatCompletion({
        ...REPORT,
        sections: [
          { heading: 'A', markdown: 'Per [the spec](https://invented.example/spec) [1].' },
          REPORT.sections[1],
        ],
      }),
    },
    {
      json: chatCompletion({
        title: 'T',
        summary: 'No citations.',
        sections: [
          { heading: 'A', markdown: 'a' },
          { heading: 'B', markdown: 'b' },
        ],
      }),
    },
    { json: chatCompletion({ ...REPORT, sections: [REPORT.sections[0]] }) },
    { json: chatCompletion({ ...REPORT, references: ['x'] }) },
    { json: chatCompletion({ ...REPORT, title: '' }) },
  ]
  for (const a of bad) {
    const s = await stand(t, { report: a })
    await t.rejects(
      runInline(handler, { topic: TOPIC, queries: ['x402 overview'], fetchPages: 0 }, { providers: s.providers }),
      { name: 'HandlerUpstreamError', code: 'upstream_failed' },
      JSON.stringify(a).slice(180, 330),
    )
  }
  const s = await stand(t, { plan: { json: chatCompletion({ queries: [] }) } })
  await t.rejects(
    runInline(handler, { topic: TOPIC, searches: 3 }, { providers: s.providers }),
    { code: 'upstream_failed' },
    'an empty search plan',
  )
})

t.test('a source title carrying HTML is listed as text, not markup', async (t) => {
  const p = await providerStandIn(t, (req) => {
    if (req.path === '/res/v1/web/search')
      return {
        json: braveWebResponse(req.query.get('q')!, [
          { title: 'Tips &lt;img src=x onerror=alert(1)&gt; [here]', url: 'https://tips.example/a', description: 'd' },
        ]),
      }
    return {
      json: chatCompletion({
        title: 'T',
        summary: 'S [1].',
        sections: [
          { heading: 'A', markdown: 'a' },
          { heading: 'B', markdown: 'b' },
        ],
      }),
    }
  })
  const out = okBody(
    await runInline(
      handler,
      { topic: TOPIC, queries: ['tips'], fetchPages: 0 },
      { providers: { ...braveSettings(p.url), ...llmSettings(p.url) } },
    ),
  )
  t.equal(out.sources[0].title, 'Tips <img src=x onerror=alert(1)> [here]', 'the title as Brave shows it')
  t.match(out.markdown, '1. [Tips \\<img src=x onerror=alert(1)> \\[here\\]](https://tips.example/a)')
  t.notMatch(out.markdown, / <img/)
})

t.test('title and headings stay on one line', async (t) => {
  const s = await stand(t, {
    report: {
      json: chatCompletion({
        title: 'T\n\n## Sources\n\n1. fake',
        summary: 'S [1].',
        sections: [
          { heading: 'A\n\n## Sources', markdown: 'a' },
          { heading: 'B', markdown: 'b' },
        ],
      }),
    },
  })
  const out = okBody(
    await runInline(handler, { topic: TOPIC, queries: ['x402 overview'], fetchPages: 0 }, { providers: s.providers }),
  )
  t.equal(out.title, 'T ## Sources 1. fake')
  t.same(
    out.sections.map((x: any) => x.heading),
    ['A ## Sources', 'B'],
  )
  t.equal(out.markdown.match(/^## Sources$/gm)?.length, 1, "one Sources list, the handler's")
})

t.test('a query Brave refuses is a 400 on that query, counted as the buyer sent them', async (t) => {
  const p = await providerStandIn(t, (req) =>
    req.query.get('q') === 'bad'
      ? { status: 422, json: braveValidationError('q', 'refused') }
      : { json: braveWebResponse(req.query.get('q')!, []) },
  )
  t.match(
    await runInline(
      handler,
      { topic: TOPIC, queries: ['same', 'same', 'bad'], fetchPages: 0 },
      { providers: { ...braveSettings(p.url), ...llmSettings(p.url) } },
    ),
    { ok: false, status: 400, field: 'queries.2' },
  )
})

t.test("a search the model planned that Brave refuses is an upstream failure, not the buyer's mistake", async (t) => {
  const p = await providerStandIn(t, (req) => {
    if (req.path === '/v1/chat/completions') return { json: chatCompletion({ queries: ['bad'] }) }
    return req.query.get('q') === 'bad'
      ? { status: 422, json: braveValidationError('q', 'refused') }
      : { json: braveWebResponse(req.query.get('q')!, []) }
  })
  await t.rejects(
    runInline(
      handler,
      { topic: TOPIC, searches: 2, fetchPages: 0 },
      { providers: { ...braveSettings(p.url), ...llmSettings(p.url) } },
    ),
    { name: 'HandlerUpstreamError', code: 'upstream_failed' },
  )
})

t.test('checkCitations', async (t) => {
  const urls = ['https://a.example/x', 'https://b.example/']
  t.same(checkCitations(['[2] and [1;2]', 'see https://b.example.'], urls), [1, 2])
  t.same(checkCitations(['[1–2]'], urls), [1, 2])
  t.throws(() => checkCitations(['[3-1]'], urls), { code: 'upstream_failed' })
  t.throws(() => checkCitations(['https://a.example/y [1]'], urls), { code: 'upstream_failed' })
  // links a renderer makes although no http(s):// URL is written: each must point to a source
  for (const text of [
    '[1](javascript:alert(1))',
    'see [the docs](//evil.example/x) [1]',
    '[x][1] [1]\n\n[1]: //evil.example',
    'mail <mailto:a@evil.example> [1]',
    'visit www.evil.example today [1]',
    '<a href="//evil.example">docs</a> [1]',
    '<img src=x onerror=alert(1)> [1]',
    'fine [1] <script>alert(1)</script>',
    '[1] <b>bold</b>',
  ]) {
    t.throws(() => checkCitations([text], urls), { code: 'upstream_failed' }, text)
  }
  t.same(checkCitations(['[docs](https://b.example/) and [1]'], urls), [1, 2], 'a link to a source counts as citing it')
  t.same(checkCitations(['see www.b.example [1]'], ['https://a.example/x', 'http://www.b.example/']), [1, 2])
  t.same(
    checkCitations(['if a < b and c > d [1], see <https://b.example/>'], urls),
    [1, 2],
    'comparisons and autolinks to sources are not HTML',
  )
})

t.test('searches that find nothing: 422 on the topic', async (t) => {
  const s = await stand(t, { empty: true })
  t.match(await runInline(handler, { topic: TOPIC, searches: 1 }, { providers: s.providers }), {
    ok: false,
    status: 422,
    field: 'topic',
  })
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = { ...braveSettings('http://127.0.0.1:1'), ...llmSettings('http://127.0.0.1:1') }
  t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'topic' })
  t.match(await runInline(handler, { topic: ' a ' }, { providers }), { ok: false, status: 400, field: 'topic' })
  t.match(await runInline(handler, { topic: 'x'.repeat(301) }, { providers }), {
    ok: false,
    status: 400,
    field: 'topic',
  })
  t.match(await runInline(handler, { topic: Array(60).fill('w').join(' ') }, { providers }), {
    ok: false,
    status: 400,
    field: 'topic',
    message: /queries/,
  })
  t.match(await runInline(handler, { topic: TOPIC, queries: [] }, { providers }), {
    ok: false,
    status: 400,
    field: 'queries',
  })
  t.match(await runInline(handler, { topic: TOPIC, queries: ['ok', '   '] }, { providers }), {
    ok: false,
    status: 400,
    field: 'queries.1',
  })
  t.match(await runInline(handler, { topic: TOPIC, queries: ['a', 'b', 'c', 'd', 'e', 'f'] }, { providers }), {
    ok: false,
    status: 400,
    field: 'queries',
  })
  t.match(await runInline(handler, { topic: TOPIC, searches: 6 }, { providers }), {
    ok: false,
    status: 400,
    field: 'searches',
  })
  t.match(await runInline(handler, { topic: TOPIC, fetchPages: 6 }, { providers }), {
    ok: false,
    status: 400,
    field: 'fetchPages',
  })
  t.match(await runInline(handler, { topic: TOPIC, resultsPerSearch: 11 }, { providers }), {
    ok: false,
    status: 400,
    field: 'resultsPerSearch',
  })
})

t.test('provider problems: 503 unconfigured before any call, 502 failed', async (t) => {
  await t.rejects(runInline(handler, { topic: TOPIC }, { providers: {} }), { code: 'upstream_not_configured' })
  const s = await stand(t)
  await t.rejects(runInline(handler, { topic: TOPIC }, { providers: braveSettings(s.url) }), {
    code: 'upstream_not_configured',
  })
  await t.rejects(runInline(handler, { topic: TOPIC }, { providers: llmSettings(s.url) }), {
    code: 'upstream_not_configured',
  })
  t.equal(s.received.length, 0, 'nothing is called while a provider is unconfigured')
  const down = await providerStandIn(t, () => ({ status: 500, text: 'down' }))
  await t.rejects(
    runInline(
      handler,
      { topic: TOPIC, queries: ['x402'] },
      { providers: { ...braveSettings(down.url), ...llmSettings(down.url) } },
    ),
    { code: 'upstream_failed' },
  )
})
