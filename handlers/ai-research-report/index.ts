import {
  assertLlmConfigured,
  chatJson,
  combineUsage,
  LLM_PROVIDERS,
  llmReportSchema,
  type LlmReport,
} from '../_shared/llm-chat.js'
import { fetchPublicUrl } from '../_shared/outbound.js'
import {
  assertSearchConfigured,
  braveWebSearch,
  indexOfUrl,
  SEARCH_PROVIDERS,
  urlKey,
  type WebResult,
} from '../_shared/search-brave.js'
import { loadHtml, mainText } from '../_shared/webpage-html.js'
import {
  defineHandler,
  HandlerInputError,
  HandlerUpstreamError,
  type HandlerContext,
} from '../../src/pool/handler-contract.js'

/** characters of each fetched page's text given to the model */
const PAGE_TEXT_CHARS = 6_000
const PAGE_MAX_BYTES = 1_500_000
const PAGE_TIMEOUT_MS = 8_000

interface Input {
  topic: string
  queries?: string[]
  searches: number
  resultsPerSearch: number
  fetchPages: number
  language?: string
  country?: string
}

interface Source {
  n: number
  title: string
  url: string
  description: string | null
  age: string | null
  query: string
  fetched: boolean
  /** why the page text is missing (not fetched, failed, not HTML or text); null when fetched */
  fetchNote: string | null
  pageChars: number
  text?: string
}

/**
 * A research report: several Brave web searches (planned by the model from the topic, or given),
 * the text of a few top result pages fetched through the public-URL guard, then a report written
 * by a language model from those sources only. Every numbered citation and every URL in the
 * report is checked here against the sources; a report citing anything else is refused (502).
 */
export default defineHandler<Input>({
  slug: 'ai-research-report',
  description:
    'A research report on a topic written by a language model from live web sources: several Brave searches, the top pages read, and a Markdown report with sections and numbered citations that point only to those sources.',
  providers: [...SEARCH_PROVIDERS, ...LLM_PROVIDERS],
  timeoutMs: 110_000,
  inputSchema: {
    type: 'object',
    required: ['topic'],
    additionalProperties: false,
    properties: {
      topic: {
        type: 'string',
        minLength: 3,
        maxLength: 300,
        description:
          'the topic or question to research, at most 300 characters; it is treated as material, never as instructions',
      },
      queries: {
        type: 'array',
        minItems: 1,
        maxItems: 5,
        items: { type: 'string', minLength: 2, maxLength: 200 },
        description:
          'the web searches to run (1–5, each up to 200 characters); default: the topic plus searches the model plans from it',
      },
      searches: {
        type: 'integer',
        minimum: 1,
        maximum: 5,
        default: 3,
        description: 'without queries: how many searches to run (the topic itself, then ones the model plans), 1–5',
      },
      resultsPerSearch: {
        type: 'integer',
        minimum: 1,
        maximum: 10,
        default: 5,
        description: 'results kept from each search, 1–10 (duplicates across searches are merged)',
      },
      fetchPages: {
        type: 'integer',
        minimum: 0,
        maximum: 5,
        default: 3,
        description: `how many top result pages to read in full (0–5; each read up to ${PAGE_MAX_BYTES / 1_000_000} MB, its text cut to ${PAGE_TEXT_CHARS} characters); the others contribute their search snippet`,
      },
      language: {
        type: 'string',
        pattern: '^[A-Za-z]{2}(-[A-Za-z]{2,4})?$',
        description:
          "language of the search results as Brave names it (e.g. en, de); the report is written in the topic's language",
      },
      country: {
        type: 'string',
        pattern: '^([A-Za-z]{2}|ALL|all)$',
        description: 'two-letter country code of the search results, or ALL',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'topic, title, markdown (the whole report: title, summary, sections, and a Sources list of the cited sources), summary, sections[] {heading, markdown}, ' +
      'citations[] (the source numbers cited), sources[] {n, title, url, description, age, query, fetched, fetchNote, pageChars} — every source the model was given, ' +
      'queries (the searches run), basis, model and usage (tokens of all model calls).',
    schema: {
      type: 'object',
      properties: {
        topic: { type: 'string' },
        title: { type: 'string' },
        markdown: { type: 'string' },
        summary: { type: 'string' },
        sections: {
          type: 'array',
          items: { type: 'object', properties: { heading: { type: 'string' }, markdown: { type: 'string' } } },
        },
        citations: { type: 'array', items: { type: 'integer' } },
        sources: { type: 'array', items: { type: 'object' } },
        queries: { type: 'array', items: { type: 'string' } },
        basis: { type: 'string' },
        model: { type: 'string' },
        usage: llmReportSchema.properties.usage,
      },
    },
    example: {
      topic: 'How does the x402 payment protocol work?',
      title: 'How x402 works',
      markdown:
        '# How x402 works\n\nx402 uses HTTP 402 to ask for payment [1]. A facilitator settles the transfer [3].\n\n## The flow\n\nThe server answers 402 with requirements [1, 2]; see https://docs.cdp.coinbase.com/x402/core-concepts/facili…',
      summary: 'x402 uses HTTP 402 to ask for payment [1]. A facilitator settles the transfer [3].',
      sections: [
        {
          heading: 'The flow',
          markdown:
            'The server answers 402 with requirements [1, 2]; see https://docs.cdp.coinbase.com/x402/core-concepts/facilitator for the facilitator.',
        },
        { heading: 'Settlement', markdown: '- The facilitator verifies and settles [2, 3].' },
      ],
      citations: [1, 2, 3],
      sources: [
        {
          n: 1,
          title: 'x402 overview',
          url: 'https://www.x402.org/',
          description: 'x402 revives HTTP 402.',
          age: null,
          query: 'How does the x402 payment protocol work?',
          fetched: true,
          fetchNote: null,
          pageChars: 5320,
        },
        {
          n: 2,
          title: 'Facilitator',
          url: 'https://docs.cdp.coinbase.com/x402/core-concepts/facilitator',
          description: 'The facilitator verifies and settles payments.',
          age: null,
          query: 'x402 facilitator settlement',
          fetched: true,
          fetchNote: null,
          pageChars: 4210,
        },
        {
          n: 3,
          title: 'Welcome to x402',
          url: 'https://docs.cdp.coinbase.com/x402/welcome',
          description: 'x402 is an open payment standard built on HTTP 402.',
          age: null,
          query: 'How does the x402 payment protocol work?',
          fetched: true,
          fetchNote: null,
          pageChars: 2870,
        },
      ],
      queries: ['How does the x402 payment protocol work?', 'x402 facilitator settlement'],
      basis:
        'written by a language model from the listed search results and fetched page texts only; citations are checked against them, the statements themselves are not verified',
      model: 'gpt-4o-mini-2024-07-18',
      usage: { promptTokens: 361, completionTokens: 64, totalTokens: 425 },
    },
  },
  example: { topic: 'How does the x402 payment protocol work?', searches: 2, resultsPerSearch: 5, fetchPages: 2 },
  async run(input, ctx) {
    const topic = input.topic.trim()
    if (topic.length < 3) throw new HandlerInputError('topic', 'topic is too short')
    const given = input.queries?.map((q) => q.trim())
    given?.forEach((q, i) => {
      if (q === '') throw new HandlerInputError(`queries.${i}`, 'a query must not be blank')
      if (q.split(/\s+/).length > 50)
        throw new HandlerInputError(
          `queries.${i}`,
          'a query has more than 50 words, which the web search does not accept',
        )
    })
    if (!given && topic.split(/\s+/).length > 50)
      throw new HandlerInputError('topic', 'topic has more than 50 words; send queries to search for')
    assertSearchConfigured(ctx)
    assertLlmConfigured(ctx)
    const reports: LlmReport[] = []

    // 1. the searches: given, or the topic plus ones the model plans
    let queries = given ? [...new Set(given)] : [topic]
    if (!given && input.searches > 1) {
      const plan = await chatJson<{ queries: string[] }>(ctx, {
        task: `Plan web searches to research the "topic" of the data. Give ${input.searches - 1} distinct search queries, each a few words, covering different aspects than the topic itself (background, current state, numbers, criticism...), in the topic's language. Answer with JSON of the shape {"queries": ["...", ...]}.`,
        data: { topic },
        schema: {
          type: 'object',
          additionalProperties: false,
          required: ['queries'],
          properties: {
            queries: {
              type: 'array',
              minItems: 1,
              maxItems: input.searches - 1,
              items: { type: 'string', minLength: 2, maxLength: 200, pattern: '\\S' },
            },
          },
        },
        maxTokens: 300,
        temperature: 0.3,
        timeoutMs: 15_000,
      })
      reports.push(plan.llm)
      for (const q of plan.json.queries.map((s) => s.trim().split(/\s+/).slice(0, 50).join(' ')))
        if (!queries.some((x) => x.toLowerCase() === q.toLowerCase())) queries.push(q)
      queries = queries.slice(0, input.searches)
    }
    const answers = await Promise.all(
      queries.map((q) =>
        braveWebSearch(ctx, {
          q,
          count: input.resultsPerSearch,
          country: input.country?.toUpperCase(),
          searchLang: input.language?.toLowerCase(),
          fields: {
            q: given ? `queries.${given.indexOf(q)}` : q === topic ? 'topic' : undefined,
            country: 'country',
            search_lang: 'language',
          },
        }),
      ),
    )

    // 2. merge, first appearance wins; interleave so every search contributes its top results
    const sources: Source[] = []
    const seen = new Set<string>()
    for (let rank = 0; rank < input.resultsPerSearch; rank++) {
      answers.forEach((a, qi) => {
        const r: WebResult | undefined = a.results[rank]
        if (!r) return
        const key = urlKey(r.url)
        if (seen.has(key)) return
        seen.add(key)
        sources.push({
          n: sources.length + 1,
          title: r.title,
          url: r.url,
          description: r.description,
          age: r.age,
          query: queries[qi]!,
          fetched: false,
          fetchNote: 'not fetched (beyond fetchPages)',
          pageChars: 0,
        })
      })
    }
    if (sources.length === 0)
      throw new HandlerInputError(
        given ? 'queries' : 'topic',
        'the web searches found nothing to write a report from',
        422,
      )

    // 3. read the top pages (failures are noted, not fatal: the snippet remains)
    await Promise.all(sources.slice(0, input.fetchPages).map((s) => readPage(s, ctx)))

    // 4. the report
    const n = sources.length
    const schema = {
      type: 'object',
      additionalProperties: false,
      required: ['title', 'summary', 'sections'],
      properties: {
        title: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
        summary: { type: 'string', minLength: 1, maxLength: 3000, pattern: '\\S' },
        sections: {
          type: 'array',
          minItems: 2,
          maxItems: 8,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['heading', 'markdown'],
            properties: {
              heading: { type: 'string', minLength: 1, maxLength: 150, pattern: '\\S' },
              markdown: { type: 'string', minLength: 1, maxLength: 8000, pattern: '\\S' },
            },
          },
        },
      },
    }
    const task =
      'Write a research report on the "topic" of the data using only the numbered "sources" (search snippets, and page text where "pageText" is present). ' +
      'Do not use outside knowledge; where the sources disagree or say nothing, say so. Cite every factual statement with the source numbers in square brackets, e.g. [1] or [2, 5]; ' +
      `only numbers 1 to ${n} exist. Do not write URLs or links. Write in the language of the topic. ` +
      'title: a short report title. summary: 2 to 4 sentences. sections: 3 to 6 sections, each a heading (plain text) and a markdown body (paragraphs or lists, no headings). ' +
      'Answer with JSON of the shape {"title": "...", "summary": "...", "sections": [{"heading": "...", "markdown": "..."}]}.'
    const report = await chatJson<{
      title: string
      summary: string
      sections: Array<{ heading: string; markdown: string }>
    }>(ctx, {
      task,
      data: {
        topic,
        sources: sources.map((s) => ({
          n: s.n,
          title: s.title,
          url: s.url,
          snippet: s.description,
          age: s.age,
          ...(s.text ? { pageText: s.text } : {}),
        })),
      },
      schema,
      maxTokens: 3_000,
      temperature: 0.2,
      timeoutMs: 70_000,
    })
    reports.push(report.llm)
    const r = report.json

    const texts = [r.title, r.summary, ...r.sections.flatMap((s) => [s.heading, s.markdown])]
    const cited = checkCitations(
      texts,
      sources.map((s) => s.url),
    )
    // title and headings are one line each: a line break would let the model add headings of its own (a second "Sources")
    const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim()
    const title = oneLine(r.title)
    const sections = r.sections.map((s) => ({
      heading: oneLine(s.heading).replace(/^#+\s*/, ''),
      markdown: s.markdown.trim(),
    }))
    const list = cited.map((c) => `${c}. [${escapeMd(sources[c - 1]!.title)}](${sources[c - 1]!.url})`).join('\n')
    const markdown =
      [
        `# ${title}`,
        r.summary.trim(),
        ...sections.map((s) => `## ${s.heading}\n\n${s.markdown}`),
        `## Sources\n\n${list}`,
      ].join('\n\n') + '\n'
    const usage = combineUsage(reports)
    return {
      body: {
        topic,
        title,
        markdown,
        summary: r.summary.trim(),
        sections,
        citations: cited,
        sources: sources.map(({ text: _text, ...s }) => s),
        queries,
        basis:
          'written by a language model from the listed search results and fetched page texts only; citations are checked against them, the statements themselves are not verified',
        model: report.llm.model,
        usage: usage.usage,
      },
    }
  },
})

/** Fetches one source page through the public-URL guard and keeps its readable text, capped. */
async function readPage(s: Source, ctx: HandlerContext): Promise<void> {
  try {
    const page = await fetchPublicUrl(s.url, ctx, {
      field: 'url',
      maxBytes: PAGE_MAX_BYTES,
      timeoutMs: PAGE_TIMEOUT_MS,
      headers: { accept: 'text/html,text/plain;q=0.9,*/*;q=0.1' },
    })
    if (page.status < 200 || page.status >= 300) {
      s.fetchNote = `the page answered HTTP ${page.status}`
      return
    }
    const type = String(page.headers['content-type'] ?? '').toLowerCase()
    const charset = /charset=([^;\s]+)/.exec(type)?.[1]?.replace(/"/g, '') ?? null
    let text: string
    if (type.startsWith('text/html') || type.startsWith('application/xhtml+xml'))
      text = mainText(await loadHtml(page.body, charset)).text
    else if (type.startsWith('text/plain')) text = page.body.toString('utf8')
    else {
      s.fetchNote = `not HTML or text (${type.split(';')[0] || 'no content type'})`
      return
    }
    text = text
      .replace(/[ \t]+/g, ' ')
      .replace(/\n{3,}/g, '\n\n')
      .trim()
    if (text === '') {
      s.fetchNote = 'the page has no readable text'
      return
    }
    s.text = text.slice(0, PAGE_TEXT_CHARS)
    s.pageChars = s.text.length
    s.fetched = true
    s.fetchNote = null
  } catch (err) {
    // a page that cannot be read leaves its search snippet; the search result, not the buyer, named it
    if (!(err instanceof HandlerInputError)) s.fetchNote = 'the page could not be fetched'
    else
      s.fetchNote =
        err.statusCode === 422
          ? 'the page could not be fetched: its host does not resolve'
          : 'refused: not a public address'
  }
}

/**
 * The source numbers cited in the report's texts, sorted. Refuses (502) a number that is not a
 * source, a URL that is not a source's URL, and a report with no citation at all.
 */
export function checkCitations(texts: string[], urls: string[]): number[] {
  const cited = new Set<number>()
  for (const t of texts) {
    for (const m of t.matchAll(/\[(\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*)\](?!\()/g)) {
      const parts = m[1]!.split(/\s*[,;]\s*/)
      for (const p of parts) {
        const range = /^(\d+)\s*[–-]\s*(\d+)$/.exec(p)
        const nums = range ? span(Number(range[1]), Number(range[2])) : [Number(p)]
        for (const k of nums) {
          if (!Number.isInteger(k) || k < 1 || k > urls.length)
            throw new HandlerUpstreamError(
              'upstream_failed',
              `the language model cited source [${k}], which does not exist`,
            )
          cited.add(k)
        }
      }
    }
    for (const m of t.matchAll(/https?:\/\/[^\s)\]>"'<]+/gi)) {
      const u = m[0].replace(/[.,;:!?]+$/, '')
      const i = indexOfUrl(urls, u)
      if (i < 0)
        throw new HandlerUpstreamError(
          'upstream_failed',
          'the language model wrote a URL that is not among the sources',
        )
      cited.add(i + 1)
    }
    // raw HTML passes through Markdown renderers: a page the report read could steer the model into writing <script>
    if (/<\/?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?\/?>/.test(t))
      throw new HandlerUpstreamError('upstream_failed', 'the language model wrote HTML into the report')
    // links whose target is not written as http(s)://... (protocol-relative, javascript:, www.
    // autolinks, HTML attributes) would slip past the check above and render as links
    for (const target of linkTargets(t)) {
      const candidates = /^www\./i.test(target)
        ? [`https://${target}`, `http://${target}`]
        : /^https?:\/\//i.test(target)
          ? [target]
          : []
      const i = candidates.map((c) => indexOfUrl(urls, c)).find((x) => x >= 0) ?? -1
      if (i < 0)
        throw new HandlerUpstreamError(
          'upstream_failed',
          'the language model wrote a link that does not point to one of the sources',
        )
      cited.add(i + 1)
    }
  }
  if (cited.size === 0)
    throw new HandlerUpstreamError('upstream_failed', 'the language model wrote a report without citing any source')
  return [...cited].sort((a, b) => a - b)
}

/** Every link target a Markdown renderer would make of `t` (inline, reference, autolink, www., HTML). */
function linkTargets(t: string): string[] {
  const out: string[] = []
  for (const m of t.matchAll(/\]\(\s*<?([^\s)>]*)/g)) out.push(m[1]!)
  for (const m of t.matchAll(/^ {0,3}\[[^\]\n]+\]:\s*<?([^\s>]*)/gm)) out.push(m[1]!)
  for (const m of t.matchAll(/<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*)>/g)) out.push(m[1]!)
  for (const m of t.matchAll(/(?:^|[\s(*_~])(www\.[^\s<]+)/gi)) out.push(m[1]!.replace(/[.,;:!?)]+$/, ''))
  for (const m of t.matchAll(/\b(?:href|src|srcset|action|formaction)\s*=\s*["']?([^"'\s>]*)/gi)) out.push(m[1]!)
  return out
}

function span(a: number, b: number): number[] {
  if (b < a || b - a > 50) return [NaN]
  return Array.from({ length: b - a + 1 }, (_, i) => a + i)
}

/** a source title (third-party text) as plain link text: no link syntax, no raw HTML */
const escapeMd = (s: string) => s.replace(/([[\]\\<])/g, '\\$1')
