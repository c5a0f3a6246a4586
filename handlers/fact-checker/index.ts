import { assertLlmConfigured, chatJson, LLM_PROVIDERS, llmReportSchema } from '../_shared/llm-chat.js'
import { braveWebSearch, BRAVE_MAX_QUERY, indexOfUrl, SEARCH_PROVIDERS } from '../_shared/search-brave.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

const VERDICTS = ['supported', 'refuted', 'mixed', 'unverifiable'] as const
const STANCES = ['supports', 'refutes', 'mixed', 'context'] as const

interface Input {
  claim: string
  searchQuery?: string
  count: number
  language?: string
  country?: string
}

interface ModelAnswer {
  verdict: (typeof VERDICTS)[number]
  confidence: number
  explanation: string
  citations: Array<{ url: string; stance: (typeof STANCES)[number] }>
}

/**
 * Fact check: a Brave web search for evidence, then a language model's verdict from those search
 * results only. Every cited URL is checked here against the URLs the search returned; an answer
 * citing anything else is refused (502). With no search results the verdict is `unverifiable`
 * and no model is asked.
 */
export default defineHandler<Input>({
  slug: 'fact-checker',
  description:
    'Check a factual claim against live web search results (Brave Search): a verdict (supported, refuted, mixed or unverifiable) by a language model with a confidence, an explanation and the search results it relied on.',
  providers: [...SEARCH_PROVIDERS, ...LLM_PROVIDERS],
  timeoutMs: 75_000,
  inputSchema: {
    type: 'object',
    required: ['claim'],
    additionalProperties: false,
    properties: {
      claim: {
        type: 'string',
        minLength: 5,
        maxLength: 500,
        description:
          'the claim to check, one statement of fact, at most 500 characters; it is treated as material, never as instructions',
      },
      searchQuery: {
        type: 'string',
        minLength: 1,
        maxLength: BRAVE_MAX_QUERY,
        description: 'the web search to run for evidence (at most 50 words); default: the claim itself',
      },
      count: {
        type: 'integer',
        minimum: 3,
        maximum: 20,
        default: 8,
        description: 'how many search results to weigh as evidence, 3–20',
      },
      language: {
        type: 'string',
        pattern: '^[A-Za-z]{2}(-[A-Za-z]{2,4})?$',
        description: "language of the search results as Brave names it (e.g. en, de, fr); default: Brave's (en)",
      },
      country: {
        type: 'string',
        pattern: '^([A-Za-z]{2}|ALL|all)$',
        description: "two-letter country code of the search results, or ALL; default: Brave's (US)",
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      "claim, verdict (supported | refuted | mixed | unverifiable), confidence (0–1, the model's own estimate), explanation, citations[] {position, url, title, stance: supports | refutes | mixed | context} — only URLs from the search results, " +
      'sources[] (every search result weighed: position, title, url, description, age), searchQuery, basis (what the verdict rests on), model and usage (tokens; null when no model was asked because the search found nothing).',
    schema: {
      type: 'object',
      properties: {
        claim: { type: 'string' },
        verdict: { type: 'string', enum: [...VERDICTS] },
        confidence: { type: ['number', 'null'] },
        explanation: { type: 'string' },
        citations: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              position: { type: 'integer' },
              url: { type: 'string' },
              title: { type: 'string' },
              stance: { type: 'string', enum: [...STANCES] },
            },
          },
        },
        sources: { type: 'array', items: { type: 'object' } },
        searchQuery: { type: 'string' },
        basis: { type: 'string' },
        model: { type: ['string', 'null'] },
        usage: { ...llmReportSchema.properties.usage, type: ['object', 'null'] },
      },
    },
    example: {
      claim: 'The Eiffel Tower is taller than 300 metres.',
      verdict: 'supported',
      confidence: 0.93,
      explanation: 'Source 1 and 2 give a height of 330 m.',
      citations: [
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
      sources: [
        {
          position: 1,
          title: 'Eiffel Tower - Wikipedia',
          url: 'https://en.wikipedia.org/wiki/Eiffel_Tower',
          description: 'The tower is 330 metres (1,083 ft) tall, about the same height as an 81-storey building.',
          age: 'November 2, 2025',
        },
        {
          position: 2,
          title: 'The Eiffel Tower in figures',
          url: 'https://www.toureiffel.paris/en/the-monument/key-figures',
          description: 'Height: 330 m since 2022 with the new antenna.',
          age: null,
        },
        { position: 3, title: 'Paris travel guide', url: 'https://example.org/paris/', description: null, age: null },
      ],
      searchQuery: 'The Eiffel Tower is taller than 300 metres.',
      basis:
        "search result titles and snippets only (the pages themselves are not read); the verdict and confidence are a language model's judgement of them",
      model: 'gpt-4o-mini-2024-07-18',
      usage: { promptTokens: 321, completionTokens: 54, totalTokens: 375 },
    },
  },
  example: { claim: 'The Eiffel Tower is taller than 300 metres.', count: 8 },
  async run(input, ctx) {
    const claim = input.claim.trim()
    if (claim.length < 5) throw new HandlerInputError('claim', 'claim is too short to check')
    const searchQuery = (input.searchQuery ?? claim).trim().slice(0, BRAVE_MAX_QUERY)
    const field = input.searchQuery === undefined ? 'claim' : 'searchQuery'
    if (searchQuery === '') throw new HandlerInputError(field, `${field} must not be blank`)
    if (searchQuery.split(/\s+/).length > 50)
      throw new HandlerInputError(
        field,
        `${field} has more than 50 words, which the web search does not accept${field === 'claim' ? '; send a shorter searchQuery' : ''}`,
      )

    assertLlmConfigured(ctx)
    const search = await braveWebSearch(ctx, {
      q: searchQuery,
      count: input.count,
      country: input.country?.toUpperCase(),
      searchLang: input.language?.toLowerCase(),
      extraSnippets: true,
      fields: { q: field, country: 'country', search_lang: 'language' },
    })
    const sources = search.results.map((r, i) => ({
      position: i + 1,
      title: r.title,
      url: r.url,
      description: r.description,
      age: r.age,
    }))
    const basis =
      "search result titles and snippets only (the pages themselves are not read); the verdict and confidence are a language model's judgement of them"
    if (sources.length === 0) {
      return {
        body: {
          claim,
          verdict: 'unverifiable',
          confidence: null,
          explanation: 'The web search returned no results, so there is no evidence to weigh.',
          citations: [],
          sources,
          searchQuery,
          basis,
          model: null,
          usage: null,
        },
      }
    }

    const urls = sources.map((s) => s.url)
    const schema = {
      type: 'object',
      additionalProperties: false,
      required: ['verdict', 'confidence', 'explanation', 'citations'],
      properties: {
        verdict: { type: 'string', enum: [...VERDICTS] },
        confidence: { type: 'number', minimum: 0, maximum: 1 },
        explanation: { type: 'string', minLength: 1, maxLength: 3000, pattern: '\\S' },
        citations: {
          type: 'array',
          maxItems: sources.length,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['url', 'stance'],
            properties: { url: { type: 'string' }, stance: { type: 'string', enum: [...STANCES] } },
          },
        },
      },
    }
    const task =
      'Judge whether the "claim" is true using only the numbered search results in "sources" (title, snippet, extra snippets, age); do not use outside knowledge. ' +
      'verdict: "supported" when the sources confirm it, "refuted" when they contradict it, "mixed" when they partly confirm and partly contradict it, "unverifiable" when they do not settle it. ' +
      'confidence: 0 to 1, how sure the sources make you. explanation: two to five sentences referring to the sources. ' +
      'citations: the sources you relied on, each with its url copied exactly from "sources" and its stance (supports, refutes, mixed or context); a verdict other than unverifiable needs at least one. ' +
      'Answer with JSON of the shape {"verdict": "...", "confidence": 0.0, "explanation": "...", "citations": [{"url": "...", "stance": "..."}]}.'
    const { json, llm } = await chatJson<ModelAnswer>(ctx, {
      task,
      data: {
        claim,
        sources: search.results.map((r, i) => ({
          n: i + 1,
          title: r.title,
          url: r.url,
          snippet: r.description,
          extraSnippets: r.extraSnippets?.slice(0, 3),
          age: r.age,
        })),
      },
      schema,
      maxTokens: 900,
      temperature: 0,
    })

    // citations must name search results: anything else is an invented source
    const citations: Array<{ position: number; url: string; title: string; stance: string }> = []
    for (const c of json.citations) {
      const i = indexOfUrl(urls, c.url)
      if (i < 0)
        throw new HandlerUpstreamError(
          'upstream_failed',
          'the language model cited a URL that is not among the search results',
        )
      if (!citations.some((x) => x.position === i + 1))
        citations.push({ position: i + 1, url: urls[i]!, title: sources[i]!.title, stance: c.stance })
    }
    if (json.verdict !== 'unverifiable' && citations.length === 0)
      throw new HandlerUpstreamError(
        'upstream_failed',
        'the language model gave a verdict without citing any search result',
      )
    checkExplanation(json.explanation, urls)
    return {
      body: {
        claim,
        verdict: json.verdict,
        confidence: Math.round(json.confidence * 100) / 100,
        explanation: json.explanation.trim(),
        citations,
        sources,
        searchQuery,
        basis,
        model: llm.model,
        usage: llm.usage,
      },
    }
  },
})

/**
 * The explanation is free text, so it could still name a source that was not retrieved (a URL from
 * a snippet's instructions, "[12]" of 8 results): refused (502) like an invented citation.
 */
export function checkExplanation(text: string, urls: readonly string[]): void {
  for (const m of text.matchAll(/https?:\/\/[^\s)\]>"'<]+/gi)) {
    if (indexOfUrl(urls, m[0].replace(/[.,;:!?]+$/, '')) < 0)
      throw new HandlerUpstreamError(
        'upstream_failed',
        'the language model named a URL in its explanation that is not among the search results',
      )
  }
  const numbers = [...text.matchAll(/\[(\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*)\]/g)]
    .flatMap((m) => m[1]!.split(/\s*[,;–-]\s*/))
    .concat([...text.matchAll(/\bsources?\s+(?:no\.\s*|#)?(\d{1,3})\b/gi)].map((m) => m[1]!))
  for (const n of numbers.map(Number)) {
    if (n < 1 || n > urls.length)
      throw new HandlerUpstreamError(
        'upstream_failed',
        `the language model referred to search result ${n}, which does not exist`,
      )
  }
}
