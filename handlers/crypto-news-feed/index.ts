import { callProvider, joinUrl, providerSetting } from '../_shared/outbound.js'
import { defineHandler, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  currencies?: string[]
  filter?: 'rising' | 'hot' | 'bullish' | 'bearish' | 'important' | 'saved' | 'lol'
  kind?: 'news' | 'media' | 'all'
  regions?: string[]
  limit?: number
}

type Post = Record<string, unknown>

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)

/**
 * Crypto news from the CryptoPanic API, `GET /api/{plan}/v2/posts/?auth_token=…&public=true`
 * (documented at https://cryptopanic.com/developers/api/ — the v2 path carries the plan name:
 * developer, growth or enterprise; the older /api/v1/posts/ path is retired). The plan is the one
 * in CRYPTOPANIC_API_URL when it names one (`https://cryptopanic.com/api/growth/v2`), else
 * "developer". The answer is
 * { next, previous, results[] } with each post's id, title, description, kind, published_at,
 * created_at, url / original_url, source { title, region, domain }, currencies[] (v1) or
 * instruments[] (v2) { code, title, slug }, votes { positive, negative, important, liked, disliked,
 * lol, toxic, saved, comments } and panic_score (by plan). Fields a plan leaves out are null here.
 */
export default defineHandler<Input>({
  slug: 'crypto-news-feed',
  description:
    'Latest crypto news from CryptoPanic, optionally for given coins (BTC, ETH, ...) and filtered by rising, hot, bullish, bearish or important: title, link, source, publication time, coins mentioned and community votes.',
  providers: ['CRYPTOPANIC_API_URL', 'CRYPTOPANIC_API_KEY'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      currencies: {
        type: 'array',
        minItems: 1,
        maxItems: 20,
        uniqueItems: true,
        items: { type: 'string', pattern: '^[A-Za-z0-9]{1,15}$' },
        description: 'Coin tickers to follow (e.g. ["BTC","ETH"]); at most 20. Default: all coins.',
      },
      filter: {
        type: 'string',
        enum: ['rising', 'hot', 'bullish', 'bearish', 'important', 'saved', 'lol'],
        description: "CryptoPanic's feed filter (by community votes and trends).",
      },
      kind: {
        type: 'string',
        enum: ['news', 'media', 'all'],
        default: 'all',
        description: 'news (articles), media (videos, podcasts) or all (default).',
      },
      regions: {
        type: 'array',
        minItems: 1,
        maxItems: 10,
        uniqueItems: true,
        items: { type: 'string', enum: ['en', 'de', 'nl', 'es', 'fr', 'it', 'pt', 'ru', 'tr', 'ar', 'cn', 'jp', 'ko'] },
        description: 'Language regions of the posts (default en, as CryptoPanic does).',
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 50,
        default: 20,
        description: "Posts returned (1–50) from CryptoPanic's first page; default 20.",
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'source ("cryptopanic"), query (as sent), count, posts[] newest first: { id, title, description, kind (news or media), url (CryptoPanic link), originalUrl (the article itself, when the plan gives it), source { title, domain, region }, publishedAt, currencies[] (tickers), votes { positive, negative, important, liked, disliked, lol, toxic, saved, comments }, panicScore }. Fields the configured CryptoPanic plan does not return are null.',
    schema: {
      type: 'object',
      properties: {
        source: { type: 'string' },
        count: { type: 'integer' },
        posts: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              id: { type: ['number', 'string', 'null'] },
              title: { type: ['string', 'null'] },
              url: { type: ['string', 'null'] },
              publishedAt: { type: ['string', 'null'] },
              currencies: { type: 'array', items: { type: 'string' } },
              votes: { type: ['object', 'null'] },
            },
          },
        },
      },
    },
    example: {
      source: 'cryptopanic',
      query: { currencies: 'BTC,ETH', filter: 'hot', kind: 'news', regions: null },
      count: 2,
      posts: [
        {
          id: 21712345,
          title: 'Bitcoin ETFs see record inflows',
          description: 'Spot bitcoin ETFs took in $1.2B on Monday.',
          kind: 'news',
          url: 'https://cryptopanic.com/news/21712345/Bitcoin-ETFs-see-record-inflows',
          originalUrl: 'https://www.coindesk.com/markets/2026/11/23/bitcoin-etfs',
          source: { title: 'CoinDesk', domain: 'coindesk.com', region: 'en' },
          publishedAt: '2026-11-23T12:30:00Z',
          currencies: ['BTC', 'IBIT'],
          votes: {
            positive: 14,
            negative: 1,
            important: 6,
            liked: 3,
            disliked: 0,
            lol: 0,
            toxic: 0,
            saved: 2,
            comments: 1,
          },
          panicScore: 71,
        },
        {
          id: 21712300,
          title: 'Ethereum developers set upgrade date',
          description: null,
          kind: 'news',
          url: null,
          originalUrl: null,
          source: { title: 'The Block', domain: 'theblock.co', region: null },
          publishedAt: '2026-11-23T11:00:00Z',
          currencies: ['ETH'],
          votes: null,
          panicScore: null,
        },
      ],
    },
  },
  example: { currencies: ['BTC', 'ETH'], filter: 'hot', kind: 'news', limit: 10 },
  async run(input, ctx) {
    const base = providerSetting(ctx, 'CRYPTOPANIC_API_URL', 'CryptoPanic news')
    const key = providerSetting(ctx, 'CRYPTOPANIC_API_KEY', 'CryptoPanic news')
    const query = {
      currencies: input.currencies?.map((c) => c.toUpperCase()).join(','),
      filter: input.filter,
      kind: input.kind && input.kind !== 'all' ? input.kind : undefined,
      regions: input.regions?.join(','),
    }
    // the token travels in the query string as CryptoPanic requires; callProvider never puts the URL in an error
    const r = await callProvider(
      'CryptoPanic',
      joinUrl(base, postsPath(base), { auth_token: key, public: 'true', ...query }),
    )
    const json = r.json as { results?: unknown } | undefined
    if (!json || typeof json !== 'object' || !Array.isArray(json.results))
      throw new HandlerUpstreamError('upstream_failed', 'CryptoPanic answered without a results list')
    const posts = (json.results as unknown[])
      .filter((p): p is Post => !!p && typeof p === 'object')
      .slice(0, input.limit ?? 20)
      .map(present)
    return {
      body: {
        source: 'cryptopanic',
        query: {
          currencies: query.currencies ?? null,
          filter: query.filter ?? null,
          kind: input.kind ?? 'all',
          regions: query.regions ?? null,
        },
        count: posts.length,
        posts,
      },
    }
  },
})

/**
 * The posts path under the configured base. CryptoPanic's v2 URLs name the account's plan
 * (`{base}/{plan}/v2/posts/`, plan developer, growth or enterprise: tigusigalpa/cryptopanic-php
 * src/CryptoPanicClient.php buildUrl and its README, which also notes the free developer plan was
 * discontinued), so a base that already ends in /api/<plan>/v2 is used as it is.
 */
function postsPath(base: string): string {
  const path = new URL(base).pathname.replace(/\/+$/, '')
  return /\/api\/[A-Za-z0-9_-]+\/v2$/.test(path) ? 'posts/' : 'api/developer/v2/posts/'
}

function present(p: Post) {
  const src = (p.source && typeof p.source === 'object' ? p.source : {}) as Record<string, unknown>
  const coins = (
    Array.isArray(p.instruments) ? p.instruments : Array.isArray(p.currencies) ? p.currencies : []
  ) as Array<Record<string, unknown> | null>
  const votes = p.votes && typeof p.votes === 'object' ? (p.votes as Record<string, unknown>) : null
  return {
    id: typeof p.id === 'number' || typeof p.id === 'string' ? p.id : null,
    title: str(p.title),
    description: str(p.description),
    kind: str(p.kind),
    url: str(p.url),
    originalUrl: str(p.original_url),
    source: { title: str(src.title), domain: str(src.domain), region: str(src.region) },
    publishedAt: str(p.published_at),
    currencies: coins.map((c) => str(c?.code)).filter((c): c is string => !!c),
    votes: votes
      ? Object.fromEntries(
          ['positive', 'negative', 'important', 'liked', 'disliked', 'lol', 'toxic', 'saved', 'comments'].map((k) => [
            k,
            num(votes[k]),
          ]),
        )
      : null,
    panicScore: num(p.panic_score),
  }
}
