import {
  eventUrl,
  flag,
  gammaBySlug,
  gammaGet,
  gammaList,
  num,
  presentMarket,
  text,
  type GammaObject,
} from '../_shared/market-polymarket.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  search?: string
  slug?: string
  tag?: string
  active?: boolean
  closed?: boolean
  order?: 'volume24hr' | 'volume' | 'liquidity' | 'endDate' | 'startDate'
  limit?: number
  maxMarketsPerEvent?: number
}

const DESCRIPTION_CHARS = 500

/**
 * Prediction markets from the Polymarket Gamma API (shapes and doc links in
 * handlers/_shared/market-polymarket.ts): `GET /events` (list, by slug or tag_slug) with their
 * markets, `GET /markets?slug=` for a market slug, and `GET /public-search?q=` for text search
 * (https://docs.polymarket.com/api-reference/search/search-markets-events-and-profiles, answering
 * { events[], tags[], profiles[] }).
 */
export default defineHandler<Input>({
  slug: 'prediction-market-data',
  description:
    'Polymarket prediction markets: the most active events, or those matching a search, tag or slug, with each market question, outcome prices (implied probabilities), volume, liquidity and end date.',
  providers: ['POLYMARKET_GAMMA_URL'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      search: {
        type: 'string',
        minLength: 2,
        maxLength: 100,
        description: 'Free-text search over events and markets (e.g. "bitcoin", "election").',
      },
      slug: {
        type: 'string',
        minLength: 1,
        maxLength: 200,
        pattern: '^[a-z0-9][a-z0-9-]*$',
        description: 'An event or market slug, as in polymarket.com/event/<slug>.',
      },
      tag: {
        type: 'string',
        minLength: 1,
        maxLength: 60,
        pattern: '^[a-z0-9][a-z0-9-]*$',
        description: 'A Polymarket tag slug (crypto, politics, sports, ...).',
      },
      active: {
        type: 'boolean',
        default: true,
        description: 'Only active events (default true). Not applied to slug look-ups.',
      },
      closed: {
        type: 'boolean',
        default: false,
        description: 'true: only closed events; false (default): only open ones. Not applied to slug look-ups.',
      },
      order: {
        type: 'string',
        enum: ['volume24hr', 'volume', 'liquidity', 'endDate', 'startDate'],
        default: 'volume24hr',
        description:
          "Order of events, highest/latest first (default volume24hr). Search results keep Polymarket's relevance order.",
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 50,
        default: 10,
        description: 'Events returned (1–50); default 10.',
      },
      maxMarketsPerEvent: {
        type: 'integer',
        minimum: 1,
        maximum: 50,
        default: 10,
        description: 'Markets listed per event, by volume (1–50); default 10. marketCount gives the full count.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'source ("polymarket"), query (what was asked), events[]: { id, slug, title, url, description (first 500 characters), startDate, endDate, active, closed, volume, volume24hr, liquidity (USD), tags[], marketCount, markets[] by volume: { id, slug, question, conditionId, outcomes[] { name, price (0–1, the implied probability) }, volume, volume24hr, liquidity, lastTradePrice, bestBid, bestAsk, startDate, endDate, active, closed } }; markets[] (a slug that names a single market). Figures Polymarket does not give are null.',
    schema: {
      type: 'object',
      properties: {
        source: { type: 'string' },
        query: { type: 'object' },
        events: { type: 'array', items: { type: 'object' } },
        markets: { type: 'array', items: { type: 'object' } },
      },
    },
    example: {
      source: 'polymarket',
      query: { search: null, slug: null, tag: 'crypto', active: true, closed: false, order: 'volume24hr', limit: 5 },
      events: [
        {
          id: '16167',
          slug: 'what-price-will-bitcoin-hit-in-2026',
          title: 'What price will Bitcoin hit in 2026?',
          url: 'https://polymarket.com/event/what-price-will-bitcoin-hit-in-2026',
          description:
            'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…',
          startDate: '2026-01-05T18:00:00Z',
          endDate: '2026-12-31T12:00:00Z',
          active: true,
          closed: false,
          volume: 1340000.25,
          volume24hr: 41000,
          liquidity: 104001,
          tags: ['Crypto', 'Bitcoin'],
          marketCount: 2,
          markets: [
            {
              id: '516710',
              slug: 'will-bitcoin-reach-150k-by-december-31',
              question: 'Will Bitcoin reach $150,000 by December 31?',
              conditionId: '0xabc123',
              outcomes: [
                { name: 'Yes', price: 0.235 },
                { name: 'No', price: 0.765 },
              ],
              volume: 1250000.25,
              volume24hr: 35000.1,
              liquidity: 52000.5,
              lastTradePrice: 0.24,
              bestBid: 0.23,
              bestAsk: 0.24,
              startDate: '2026-01-05T18:00:00Z',
              endDate: '2026-12-31T12:00:00Z',
              active: true,
              closed: false,
            },
            {
              id: '516711',
              slug: 'will-bitcoin-reach-200k-by-december-31',
              question: 'Will Bitcoin reach $200,000 by December 31?',
              conditionId: '0xabc124',
              outcomes: [
                { name: 'Yes', price: 0.04 },
                { name: 'No', price: 0.96 },
              ],
              volume: 90000,
              volume24hr: 35000.1,
              liquidity: 52000.5,
              lastTradePrice: 0.24,
              bestBid: 0.23,
              bestAsk: 0.24,
              startDate: '2026-01-05T18:00:00Z',
              endDate: '2026-12-31T12:00:00Z',
              active: true,
              closed: false,
            },
          ],
        },
      ],
      markets: [],
    },
  },
  example: { tag: 'crypto', limit: 5 },
  async run(input, ctx) {
    const given = ['search', 'slug', 'tag'].filter((k) => input[k as keyof Input] !== undefined)
    if (given.length > 1)
      throw new HandlerInputError(given[1]!, `give one of search, slug and tag, not ${given.join(' and ')}`)
    const limit = input.limit ?? 10
    const perEvent = input.maxMarketsPerEvent ?? 10
    const active = input.active ?? true
    const closed = input.closed ?? false
    const order = input.order ?? 'volume24hr'
    const query = {
      search: input.search ?? null,
      slug: input.slug ?? null,
      tag: input.tag ?? null,
      active,
      closed,
      order,
      limit,
    }
    const events = (list: GammaObject[]) => list.slice(0, limit).map((e) => presentEvent(e, perEvent))

    if (input.slug) {
      // by-slug routes answer one object whatever its status, 404 when none (https://docs.polymarket.com/api-reference/events/get-event-by-slug)
      const byEvent = await gammaBySlug(ctx, 'events', input.slug)
      if (byEvent) return { body: { source: 'polymarket', query, events: events([byEvent]), markets: [] } }
      const byMarket = await gammaBySlug(ctx, 'markets', input.slug)
      return {
        body: {
          source: 'polymarket',
          query,
          events: [],
          markets: byMarket ? [presentMarket(byMarket)] : [],
          ...(byMarket ? {} : { note: 'no event or market has this slug' }),
        },
      }
    }

    if (input.search) {
      // /public-search takes events_status and keep_closed_markets (https://docs.polymarket.com/api-reference/search/search-markets-events-and-profiles);
      // its default mixes closed events in, which could fill limit_per_type before an open one, so open searches ask
      // events_status=active, and closed searches keep their (closed) markets with keep_closed_markets=1
      const json = await gammaGet(ctx, '/public-search', {
        q: input.search,
        limit_per_type: Math.min(50, limit * 2),
        events_status: closed ? undefined : 'active',
        keep_closed_markets: closed ? 1 : undefined,
      })
      if (json !== undefined && (typeof json !== 'object' || json === null || Array.isArray(json)))
        throw new HandlerUpstreamError('upstream_failed', 'Polymarket Gamma answered a search that is not an object')
      const found = Array.isArray((json as { events?: unknown } | undefined)?.events)
        ? ((json as { events: unknown[] }).events.filter((x) => !!x && typeof x === 'object') as GammaObject[])
        : []
      // the search answers open and closed events alike: apply the same status filters as the list
      const kept = found.filter(
        (e) => (input.active === undefined || flag(e.active) === active) && flag(e.closed) === closed,
      )
      return { body: { source: 'polymarket', query, events: events(kept), markets: [] } }
    }

    const list = await gammaList(ctx, '/events', {
      limit,
      active,
      closed,
      order,
      ascending: false,
      tag_slug: input.tag,
    })
    return { body: { source: 'polymarket', query, events: events(list), markets: [] } }
  },
})

function presentEvent(e: GammaObject, perEvent: number) {
  const markets = (Array.isArray(e.markets) ? e.markets : [])
    .filter((m): m is GammaObject => !!m && typeof m === 'object')
    .map(presentMarket)
  markets.sort((a, b) => (b.volume ?? -1) - (a.volume ?? -1))
  const slug = text(e.slug)
  const description = text(e.description)
  return {
    id: text(e.id) ?? (typeof e.id === 'number' ? String(e.id) : null),
    slug,
    title: text(e.title),
    url: slug ? eventUrl(slug) : null,
    description:
      description && description.length > DESCRIPTION_CHARS
        ? `${description.slice(0, DESCRIPTION_CHARS)}…`
        : description,
    startDate: text(e.startDate),
    endDate: text(e.endDate),
    active: flag(e.active),
    closed: flag(e.closed),
    volume: num(e.volume),
    volume24hr: num(e.volume24hr),
    liquidity: num(e.liquidity),
    tags: (Array.isArray(e.tags) ? e.tags : [])
      .map((tg) => text((tg as GammaObject)?.label) ?? text((tg as GammaObject)?.slug))
      .filter((x): x is string => !!x),
    marketCount: markets.length,
    markets: markets.slice(0, perEvent),
  }
}
