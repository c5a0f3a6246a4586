import {
  eventUrl,
  flag,
  gammaBySlug,
  gammaGet,
  outcomesOf,
  text,
  type GammaObject,
} from '../_shared/market-polymarket.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  slug?: string
  eventId?: string
  marketId?: string
}

const MAX_MARKETS = 100

type MarketStatus = 'open' | 'closed-awaiting-resolution' | 'resolved'

/**
 * Whether a Polymarket market is resolved, from the Gamma fields (shapes and doc links in
 * handlers/_shared/market-polymarket.ts): a resolved market is closed and its outcomePrices are
 * the payouts, "1" for the winning outcome and "0" for the others; umaResolutionStatus tells the
 * UMA oracle's state ("proposed", "disputed", "resolved"). A closed market whose prices are not yet
 * settled is awaiting resolution; nothing is inferred from a price that is merely high.
 */
export function resolveMarket(m: GammaObject) {
  const outcomes = outcomesOf(m)
  const closed = flag(m.closed) === true
  const uma = text(m.umaResolutionStatus)
  const prices = outcomes.map((o) => o.price)
  const settled =
    outcomes.length > 1 && prices.every((p) => p === 0 || p === 1) && prices.filter((p) => p === 1).length === 1
  let status: MarketStatus = 'open'
  let basis: string
  if (!closed) basis = 'the market is not closed'
  else if (settled) {
    status = 'resolved'
    basis =
      uma === 'resolved' ? 'UMA resolution status "resolved" and final outcome prices 1/0' : 'final outcome prices 1/0'
  } else if (uma === 'resolved' && prices.every((p) => p !== null)) {
    status = 'resolved'
    basis = 'UMA resolution status "resolved"; the payout is split across outcomes (see outcome prices)'
  } else {
    status = 'closed-awaiting-resolution'
    basis = uma ? `closed; UMA resolution status "${uma}"` : 'closed; the outcome prices are not settled yet'
  }
  const winner = status === 'resolved' && settled ? (outcomes.find((o) => o.price === 1)?.name ?? null) : null
  return {
    id: text(m.id) ?? (typeof m.id === 'number' ? String(m.id) : null),
    slug: text(m.slug),
    question: text(m.question),
    conditionId: text(m.conditionId),
    status,
    resolved: status === 'resolved',
    winningOutcome: winner,
    outcomes,
    umaResolutionStatus: uma,
    basis,
    resolutionSource: text(m.resolutionSource),
    endDate: text(m.endDate),
    closedTime: text(m.closedTime),
  }
}

export default defineHandler<Input>({
  slug: 'prediction-event-resolver',
  description:
    'Resolution of a Polymarket event or market, by slug or id: whether it is still open, closed and awaiting resolution, or resolved, the winning outcome when resolved, the UMA oracle status, resolution source and dates.',
  providers: ['POLYMARKET_GAMMA_URL'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      slug: {
        type: 'string',
        minLength: 1,
        maxLength: 200,
        pattern: '^[a-z0-9][a-z0-9-]*$',
        description: 'Event or market slug, as in polymarket.com/event/<slug>. Give one of slug, eventId, marketId.',
      },
      eventId: { type: 'string', pattern: '^[0-9]{1,12}$', description: 'Gamma event id (digits).' },
      marketId: { type: 'string', pattern: '^[0-9]{1,12}$', description: 'Gamma market id (digits).' },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'source ("polymarket"), found (false when nothing has that slug or id), kind ("event" or "market"), event { id, slug, title, url, status (open, closed-awaiting-resolution, partially-resolved, resolved), resolved, winningMarkets[] (questions whose outcome "Yes" won, for multi-market events), resolutionSource, startDate, endDate, closed }, markets[] (at most 100; marketCount gives all): { id, slug, question, conditionId, status (open, closed-awaiting-resolution, resolved), resolved, winningOutcome (null unless resolved to one outcome), outcomes[] { name, price } (after resolution the payouts), umaResolutionStatus, basis (which fields decided the status), resolutionSource, endDate, closedTime }.',
    schema: {
      type: 'object',
      properties: {
        source: { type: 'string' },
        found: { type: 'boolean' },
        kind: { type: 'string' },
        event: { type: 'object' },
        marketCount: { type: 'integer' },
        markets: { type: 'array', items: { type: 'object' } },
      },
    },
    example: {
      source: 'polymarket',
      found: true,
      kind: 'event',
      event: {
        id: '2001',
        slug: 'fed-decision-in-september',
        title: 'Fed decision in September?',
        url: 'https://polymarket.com/event/fed-decision-in-september',
        status: 'partially-resolved',
        resolved: false,
        winningMarkets: ['Will the Fed cut rates in September?'],
        resolutionSource: 'https://www.federalreserve.gov',
        startDate: '2025-07-01T00:00:00Z',
        endDate: '2025-09-17T00:00:00Z',
        closed: true,
      },
      marketCount: 2,
      markets: [
        {
          id: '253591',
          slug: 'fed-cut-in-september',
          question: 'Will the Fed cut rates in September?',
          conditionId: '0xfed',
          status: 'resolved',
          resolved: true,
          winningOutcome: 'Yes',
          outcomes: [
            { name: 'Yes', price: 1 },
            { name: 'No', price: 0 },
          ],
          umaResolutionStatus: 'resolved',
          basis: 'UMA resolution status "resolved" and final outcome prices 1/0',
          resolutionSource: 'https://www.federalreserve.gov',
          endDate: '2025-09-17T00:00:00Z',
          closedTime: '2025-09-17 18:30:00+00',
        },
        {
          id: '253592',
          slug: 'fed-cut-50bp-in-september',
          question: 'Will the Fed cut 50bp in September?',
          conditionId: '0xfed',
          status: 'closed-awaiting-resolution',
          resolved: false,
          winningOutcome: null,
          outcomes: [
            { name: 'Yes', price: 0.0005 },
            { name: 'No', price: 0.9995 },
          ],
          umaResolutionStatus: 'proposed',
          basis: 'closed; UMA resolution status "proposed"',
          resolutionSource: 'https://www.federalreserve.gov',
          endDate: '2025-09-17T00:00:00Z',
          closedTime: null,
        },
      ],
    },
  },
  example: { slug: 'fed-decision-in-september' },
  async run(input, ctx) {
    const given = (['slug', 'eventId', 'marketId'] as const).filter((k) => input[k] !== undefined)
    if (given.length !== 1)
      throw new HandlerInputError(given[1] ?? 'slug', 'give exactly one of slug, eventId and marketId')
    let event: GammaObject | undefined
    let market: GammaObject | undefined
    if (input.slug) {
      // GET /events/slug/{slug} and /markets/slug/{slug} answer one object whatever its status, 404 when none
      // (https://docs.polymarket.com/api-reference/events/get-event-by-slug, .../markets/get-market-by-slug)
      event = await gammaBySlug(ctx, 'events', input.slug)
      if (!event) market = await gammaBySlug(ctx, 'markets', input.slug)
    } else if (input.eventId) event = asObject(await gammaGet(ctx, `/events/${input.eventId}`))
    else market = asObject(await gammaGet(ctx, `/markets/${input.marketId}`))

    if (market)
      return {
        body: { source: 'polymarket', found: true, kind: 'market', marketCount: 1, markets: [resolveMarket(market)] },
      }
    if (!event)
      return {
        body: {
          source: 'polymarket',
          found: false,
          markets: [],
          note: 'no Polymarket event or market has this slug or id',
        },
      }

    const markets = (Array.isArray(event.markets) ? event.markets : [])
      .filter((m): m is GammaObject => !!m && typeof m === 'object')
      .map(resolveMarket)
    const resolvedCount = markets.filter((m) => m.resolved).length
    const status =
      markets.length === 0
        ? flag(event.closed)
          ? 'closed-awaiting-resolution'
          : 'open'
        : resolvedCount === markets.length
          ? 'resolved'
          : resolvedCount > 0
            ? 'partially-resolved'
            : markets.some((m) => m.status === 'closed-awaiting-resolution')
              ? 'closed-awaiting-resolution'
              : 'open'
    const slug = text(event.slug)
    return {
      body: {
        source: 'polymarket',
        found: true,
        kind: 'event',
        event: {
          id: text(event.id) ?? (typeof event.id === 'number' ? String(event.id) : null),
          slug,
          title: text(event.title),
          url: slug ? eventUrl(slug) : null,
          status,
          resolved: status === 'resolved',
          winningMarkets:
            markets.length > 1 ? markets.filter((m) => m.winningOutcome === 'Yes').map((m) => m.question) : [],
          resolutionSource: text(event.resolutionSource),
          startDate: text(event.startDate),
          endDate: text(event.endDate),
          closed: flag(event.closed),
        },
        marketCount: markets.length,
        markets: markets.slice(0, MAX_MARKETS),
      },
    }
  },
})

function asObject(json: unknown): GammaObject | undefined {
  if (json === undefined) return undefined
  if (!json || typeof json !== 'object' || Array.isArray(json))
    throw new HandlerUpstreamError('upstream_failed', 'Polymarket Gamma answered something that is not an object')
  return json as GammaObject
}
