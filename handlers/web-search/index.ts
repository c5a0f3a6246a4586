import {
  braveWebSearch,
  BRAVE_MAX_COUNT,
  BRAVE_MAX_QUERY,
  SEARCH_PROVIDERS,
  type Safesearch,
} from '../_shared/search-brave.js'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

interface Input {
  q: string
  count: number
  offset: number
  country?: string
  language?: string
  freshness?: string
  safesearch: Safesearch
  extraSnippets: boolean
}

export const FRESHNESS_PATTERN = '^(pd|pw|pm|py|\\d{4}-\\d{2}-\\d{2}to\\d{4}-\\d{2}-\\d{2})$'

/**
 * Web search through the Brave Search API (its own independent index). The answer is Brave's
 * results mapped field by field; nothing is ranked or rewritten here.
 */
export default defineHandler<Input>({
  slug: 'web-search',
  description:
    'Search the web (Brave Search index): titles, URLs, snippets, page age and language of the top results, with country, language, freshness and safe-search options.',
  providers: SEARCH_PROVIDERS,
  inputSchema: {
    type: 'object',
    required: ['q'],
    additionalProperties: false,
    properties: {
      q: {
        type: 'string',
        minLength: 1,
        maxLength: BRAVE_MAX_QUERY,
        description: `the search query, at most ${BRAVE_MAX_QUERY} characters and 50 words`,
      },
      count: {
        type: 'integer',
        minimum: 1,
        maximum: BRAVE_MAX_COUNT,
        default: 10,
        description: `number of results, 1–${BRAVE_MAX_COUNT} (Brave may return fewer)`,
      },
      offset: {
        type: 'integer',
        minimum: 0,
        maximum: 9,
        default: 0,
        description: 'page offset in steps of count (0 = first page), at most 9',
      },
      country: {
        type: 'string',
        pattern: '^([A-Za-z]{2}|ALL|all)$',
        description: "two-letter country code the results come from (e.g. US, DE, GB), or ALL; default: Brave's (US)",
      },
      language: {
        type: 'string',
        pattern: '^[A-Za-z]{2}(-[A-Za-z]{2,4})?$',
        description:
          "language of the results as Brave names it (e.g. en, de, fr, en-gb, pt-br, zh-hans); default: Brave's (en)",
      },
      freshness: {
        type: 'string',
        pattern: FRESHNESS_PATTERN,
        description:
          'only pages discovered within: pd (a day), pw (a week), pm (a month), py (a year), or a range YYYY-MM-DDtoYYYY-MM-DD',
      },
      safesearch: {
        type: 'string',
        enum: ['off', 'moderate', 'strict'],
        default: 'moderate',
        description: 'adult content filter: off, moderate (default) or strict',
      },
      extraSnippets: {
        type: 'boolean',
        default: false,
        description: "also return up to 5 extra excerpts per result when Brave's plan provides them",
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'query (as sent), alteredQuery (the spelling Brave used instead, else null), offset, count (results returned), moreResultsAvailable, ' +
      'results[]: position, title, url, description (snippet), age (as Brave shows it, null when undated), pageAge (ISO date when known), language, familyFriendly, hostname (and extraSnippets when asked); source.',
    schema: {
      type: 'object',
      properties: {
        query: { type: 'string' },
        alteredQuery: { type: ['string', 'null'] },
        offset: { type: 'integer' },
        count: { type: 'integer' },
        moreResultsAvailable: { type: ['boolean', 'null'] },
        results: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              position: { type: 'integer' },
              title: { type: 'string' },
              url: { type: 'string' },
              description: { type: ['string', 'null'] },
              age: { type: ['string', 'null'] },
              pageAge: { type: ['string', 'null'] },
              language: { type: ['string', 'null'] },
              familyFriendly: { type: ['boolean', 'null'] },
              hostname: { type: ['string', 'null'] },
              extraSnippets: { type: 'array', items: { type: 'string' } },
            },
          },
        },
        source: { type: 'string' },
      },
    },
    example: {
      query: 'x402 payment protocol',
      alteredQuery: 'x402 payments protocol',
      offset: 0,
      count: 2,
      moreResultsAvailable: true,
      results: [
        {
          position: 1,
          title: 'x402 & HTTP 402',
          url: 'https://www.x402.org/',
          description: 'An open protocol for internet-native payments.',
          age: 'May 6, 2025',
          pageAge: '2025-05-06T00:00:00',
          language: 'en',
          familyFriendly: true,
          hostname: 'www.x402.org',
        },
        {
          position: 2,
          title: 'coinbase/x402',
          url: 'https://github.com/coinbase/x402',
          description: 'A payments protocol for the internet. Built on HTTP.',
          age: null,
          pageAge: null,
          language: 'en',
          familyFriendly: true,
          hostname: 'github.com',
        },
      ],
      source: 'Brave Search API',
    },
  },
  example: {
    q: 'x402 payment protocol',
    count: 5,
    offset: 0,
    country: 'US',
    language: 'en',
    safesearch: 'moderate',
    extraSnippets: false,
  },
  async run(input, ctx) {
    const q = input.q.trim()
    if (q === '') throw new HandlerInputError('q', 'q must not be blank')
    if (q.split(/\s+/).length > 50)
      throw new HandlerInputError('q', 'q has more than 50 words, which Brave Search does not accept')
    if (input.freshness?.includes('to')) checkRange(input.freshness, 'freshness')
    // result fields (title, url, description, age, page_age, language, family_friendly, meta_url.hostname, extra_snippets) and
    // query.original/altered/more_results_available as brave/brave-search-mcp-server src/tools/web/types.ts types them
    const answer = await braveWebSearch(ctx, {
      q,
      count: input.count,
      offset: input.offset,
      country: input.country?.toUpperCase(),
      searchLang: input.language?.toLowerCase(),
      safesearch: input.safesearch,
      freshness: input.freshness,
      extraSnippets: input.extraSnippets,
      fields: {
        q: 'q',
        country: 'country',
        search_lang: 'language',
        freshness: 'freshness',
        safesearch: 'safesearch',
        count: 'count',
        offset: 'offset',
      },
    })
    return {
      body: {
        query: answer.query,
        alteredQuery: answer.alteredQuery,
        offset: input.offset,
        count: answer.results.length,
        moreResultsAvailable: answer.moreResultsAvailable,
        results: answer.results.map((r, i) => ({ position: input.offset * input.count + i + 1, ...r })),
        source: 'Brave Search API',
      },
    }
  },
})

/** YYYY-MM-DDtoYYYY-MM-DD: real dates, the first not after the second */
export function checkRange(range: string, field: string): void {
  const [from, to] = range.split('to') as [string, string]
  const valid = (d: string) =>
    !Number.isNaN(Date.parse(`${d}T00:00:00Z`)) && new Date(`${d}T00:00:00Z`).toISOString().startsWith(d)
  if (!valid(from) || !valid(to)) throw new HandlerInputError(field, `${field} holds a date that does not exist`)
  if (from > to) throw new HandlerInputError(field, `${field}: the range starts after it ends`)
}
