import { assertLlmConfigured, chatJson, LLM_PROVIDERS, llmReportSchema } from '../_shared/llm-chat.js'
import { optionalSetting, providerSetting } from '../_shared/outbound.js'
import { braveSuggest } from '../_shared/search-brave.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

const INTENTS = ['informational', 'commercial', 'transactional', 'navigational'] as const
/** query patterns tried besides the seed itself, in this order (`expansions` takes the first n) */
export const EXPANSIONS = [
  'best {seed}',
  'how {seed}',
  '{seed} vs',
  'what is {seed}',
  '{seed} for',
  '{seed} near me',
] as const
const VOLUME_NOTE =
  'No search volumes: Brave Suggest returns query suggestions without volume or traffic data, and none are estimated here.'

interface Input {
  keyword: string
  expansions: number
  count: number
  country?: string
  language?: string
}

interface Cluster {
  name: string
  intent: (typeof INTENTS)[number]
  keywords: string[]
}

/**
 * Keyword research without invented numbers: related queries come from the Brave Suggest API
 * (the seed and a few fixed patterns around it), and a language model groups them into clusters
 * with a search intent. Every clustered keyword is checked against the suggestions; an answer
 * with a keyword that was not suggested, or one placed twice, is refused (502).
 */
export default defineHandler<Input>({
  slug: 'keyword-research',
  description:
    'Related search queries for a seed keyword from Brave Search suggestions, grouped by a language model into clusters with a search intent (informational, commercial, transactional, navigational). No search volumes: the source has none.',
  // suggestions use BRAVE_SUGGEST_API_KEY when the operator has that plan, else the search key
  providers: ['BRAVE_SEARCH_URL', ['BRAVE_SUGGEST_API_KEY', 'BRAVE_SEARCH_API_KEY'], ...LLM_PROVIDERS],
  timeoutMs: 60_000,
  inputSchema: {
    type: 'object',
    required: ['keyword'],
    additionalProperties: false,
    properties: {
      keyword: {
        type: 'string',
        minLength: 2,
        maxLength: 100,
        description: 'the seed keyword or phrase, at most 100 characters',
      },
      expansions: {
        type: 'integer',
        minimum: 0,
        maximum: EXPANSIONS.length,
        default: 3,
        description: `how many query patterns to ask suggestions for besides the seed itself, in this order: ${EXPANSIONS.map((e) => `"${e}"`).join(', ')} (0–${EXPANSIONS.length}; one Suggest call each)`,
      },
      count: {
        type: 'integer',
        minimum: 1,
        maximum: 20,
        default: 10,
        description: 'suggestions asked for per query, 1–20 (Brave may return fewer)',
      },
      country: {
        type: 'string',
        pattern: '^([A-Za-z]{2}|ALL|all)$',
        description: "two-letter country code the suggestions are for, or ALL; default: Brave's (US)",
      },
      language: {
        type: 'string',
        pattern: '^[A-Za-z]{2}(-[A-Za-z]{2,4})?$',
        description: "language of the suggestions (e.g. en, de, fr); default: Brave's (en)",
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'seed, keywords[] {keyword, from (the query that suggested it), cluster, intent}, clusters[] {name, intent, keywords[]}, unclustered[] (suggestions the model left out), ' +
      `intentCounts {informational, commercial, transactional, navigational}, queries (the Suggest calls made), volume: null with volumeNote ("${VOLUME_NOTE}"), model and usage (tokens; null when there was nothing to cluster).`,
    schema: {
      type: 'object',
      properties: {
        seed: { type: 'string' },
        keywords: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              keyword: { type: 'string' },
              from: { type: 'string' },
              cluster: { type: ['string', 'null'] },
              intent: { type: ['string', 'null'] },
            },
          },
        },
        clusters: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              name: { type: 'string' },
              intent: { type: 'string', enum: [...INTENTS] },
              keywords: { type: 'array', items: { type: 'string' } },
            },
          },
        },
        unclustered: { type: 'array', items: { type: 'string' } },
        intentCounts: { type: 'object' },
        queries: { type: 'array', items: { type: 'string' } },
        volume: { type: 'null' },
        volumeNote: { type: 'string' },
        model: { type: ['string', 'null'] },
        usage: { ...llmReportSchema.properties.usage, type: ['object', 'null'] },
      },
    },
    example: {
      seed: 'running shoes',
      queries: ['running shoes', 'best running shoes', 'how running shoes'],
      volume: null,
      volumeNote:
        'No search volumes: Brave Suggest returns query suggestions without volume or traffic data, and none are estimated here.',
      keywords: [
        { keyword: 'running shoes for women', from: 'running shoes', cluster: 'Choosing', intent: 'commercial' },
        { keyword: 'running shoes sale', from: 'running shoes', cluster: 'Buying', intent: 'transactional' },
        { keyword: 'Running Shoes Nike', from: 'running shoes', cluster: 'Brands', intent: 'navigational' },
        { keyword: 'best running shoes', from: 'best running shoes', cluster: 'Choosing', intent: 'commercial' },
      ],
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
      unclustered: [],
      intentCounts: { informational: 1, commercial: 3, transactional: 1, navigational: 1 },
      model: 'gpt-4o-mini-2024-07-18',
      usage: { promptTokens: 321, completionTokens: 54, totalTokens: 375 },
    },
  },
  example: { keyword: 'running shoes', expansions: 3, count: 10, country: 'US', language: 'en' },
  async run(input, ctx) {
    const seed = input.keyword.trim().replace(/\s+/g, ' ')
    if (seed.length < 2) throw new HandlerInputError('keyword', 'keyword is too short')
    providerSetting(ctx, 'BRAVE_SEARCH_URL', 'query suggestions')
    if (!optionalSetting(ctx, 'BRAVE_SUGGEST_API_KEY'))
      providerSetting(ctx, 'BRAVE_SEARCH_API_KEY', 'query suggestions (or BRAVE_SUGGEST_API_KEY)')
    assertLlmConfigured(ctx)

    const queries = [seed, ...EXPANSIONS.slice(0, input.expansions).map((p) => p.replace('{seed}', () => seed))]
    const answers = await Promise.all(
      queries.map((q) =>
        braveSuggest(ctx, {
          q,
          count: input.count,
          country: input.country?.toUpperCase(),
          lang: input.language?.toLowerCase(),
          fields: { q: 'keyword', country: 'country', lang: 'language' },
        }),
      ),
    )
    // distinct suggestions, first query wins; the seed itself is not a suggestion
    const from = new Map<string, { keyword: string; from: string }>()
    answers.forEach((a, i) => {
      for (const s of a.suggestions) {
        const k = s.query.trim().replace(/\s+/g, ' ')
        const key = k.toLowerCase()
        if (k === '' || key === seed.toLowerCase() || from.has(key)) continue
        from.set(key, { keyword: k, from: queries[i]! })
      }
    })
    const list = [...from.values()]
    const base = { seed, queries, volume: null, volumeNote: VOLUME_NOTE }
    if (list.length === 0) {
      return {
        body: {
          ...base,
          keywords: [],
          clusters: [],
          unclustered: [],
          intentCounts: Object.fromEntries(INTENTS.map((i) => [i, 0])),
          model: null,
          usage: null,
        },
      }
    }

    const names = list.map((k) => k.keyword)
    const schema = {
      type: 'object',
      additionalProperties: false,
      required: ['clusters'],
      properties: {
        clusters: {
          type: 'array',
          minItems: 1,
          maxItems: Math.min(12, names.length),
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['name', 'intent', 'keywords'],
            properties: {
              name: { type: 'string', minLength: 1, maxLength: 80, pattern: '\\S' },
              intent: { type: 'string', enum: [...INTENTS] },
              keywords: { type: 'array', minItems: 1, items: { type: 'string', enum: names } },
            },
          },
        },
      },
    }
    const task =
      'Group the search queries in "keywords" (suggestions related to the "seed") into clusters of queries a searcher types for the same need. ' +
      'Give each cluster a short descriptive name and one search intent: informational (wants to learn), commercial (compares or researches before buying), ' +
      'transactional (wants to buy, sign up or get something now) or navigational (wants a specific site or brand). ' +
      'Put every keyword in exactly one cluster, copied exactly as given; add no other keywords. Do not estimate search volumes. ' +
      'Answer with JSON of the shape {"clusters": [{"name": "...", "intent": "...", "keywords": ["...", ...]}]}.'
    const { json, llm } = await chatJson<{ clusters: Cluster[] }>(ctx, {
      task,
      data: { seed, keywords: names },
      schema,
      maxTokens: 400 + names.length * 25,
      temperature: 0,
    })

    const placed = new Map<string, Cluster>()
    for (const c of json.clusters) {
      for (const k of c.keywords) {
        if (placed.has(k))
          throw new HandlerUpstreamError('upstream_failed', 'the language model put a keyword in more than one cluster')
        placed.set(k, c)
      }
    }
    const clusters = json.clusters.map((c) => ({ name: c.name.trim(), intent: c.intent, keywords: c.keywords }))
    return {
      body: {
        ...base,
        keywords: list.map((k) => ({
          ...k,
          cluster: placed.get(k.keyword)?.name.trim() ?? null,
          intent: placed.get(k.keyword)?.intent ?? null,
        })),
        clusters,
        unclustered: names.filter((k) => !placed.has(k)),
        intentCounts: Object.fromEntries(
          INTENTS.map((i) => [i, list.filter((k) => placed.get(k.keyword)?.intent === i).length]),
        ),
        model: llm.model,
        usage: llm.usage,
      },
    }
  },
})
