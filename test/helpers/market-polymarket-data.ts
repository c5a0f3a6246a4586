/**
 * Polymarket Gamma answers in their documented shape
 * (https://docs.polymarket.com/developers/gamma-markets-api/get-markets and .../get-events) for
 * the prediction-market-data and prediction-event-resolver tests: outcomes and outcomePrices are
 * JSON-encoded strings, volume/liquidity strings on markets and numbers on events.
 */
export const openMarket = {
  id: '516710',
  question: 'Will Bitcoin reach $150,000 by December 31?',
  conditionId: '0xabc123',
  slug: 'will-bitcoin-reach-150k-by-december-31',
  resolutionSource: 'https://www.binance.com/en/trade/BTC_USDT',
  endDate: '2026-12-31T12:00:00Z',
  startDate: '2026-01-05T18:00:00Z',
  liquidity: '52000.5',
  liquidityNum: 52000.5,
  volume: '1250000.25',
  volumeNum: 1250000.25,
  volume24hr: 35000.1,
  outcomes: '["Yes", "No"]',
  outcomePrices: '["0.235", "0.765"]',
  active: true,
  closed: false,
  archived: false,
  lastTradePrice: 0.24,
  bestBid: 0.23,
  bestAsk: 0.24,
  umaResolutionStatus: null,
  description: 'This market will resolve to "Yes" if Binance BTC/USDT trades at or above $150,000 before the end date.',
}

export const smallMarket = {
  ...openMarket,
  id: '516711',
  question: 'Will Bitcoin reach $200,000 by December 31?',
  slug: 'will-bitcoin-reach-200k-by-december-31',
  volume: '90000',
  volumeNum: 90000,
  outcomePrices: '["0.04", "0.96"]',
  conditionId: '0xabc124',
}

export const resolvedMarket = {
  ...openMarket,
  id: '253591',
  question: 'Will the Fed cut rates in September?',
  slug: 'fed-cut-in-september',
  conditionId: '0xfed',
  outcomes: '["Yes", "No"]',
  outcomePrices: '["1", "0"]',
  active: true,
  closed: true,
  closedTime: '2025-09-17 18:30:00+00',
  umaResolutionStatus: 'resolved',
  resolutionSource: 'https://www.federalreserve.gov',
  endDate: '2025-09-17T00:00:00Z',
}

export const awaitingMarket = {
  ...resolvedMarket,
  id: '253592',
  slug: 'fed-cut-50bp-in-september',
  question: 'Will the Fed cut 50bp in September?',
  outcomePrices: '["0.0005", "0.9995"]',
  umaResolutionStatus: 'proposed',
  closedTime: null,
}

export const btcEvent = {
  id: '16167',
  ticker: 'bitcoin-price-2026',
  slug: 'what-price-will-bitcoin-hit-in-2026',
  title: 'What price will Bitcoin hit in 2026?',
  description: 'x'.repeat(600),
  startDate: '2026-01-05T18:00:00Z',
  endDate: '2026-12-31T12:00:00Z',
  active: true,
  closed: false,
  liquidity: 104001,
  volume: 1340000.25,
  volume24hr: 41000,
  tags: [
    { id: '21', label: 'Crypto', slug: 'crypto' },
    { id: '235', label: 'Bitcoin', slug: 'bitcoin' },
  ],
  markets: [smallMarket, openMarket],
}

export const fedEvent = {
  id: '2001',
  slug: 'fed-decision-in-september',
  title: 'Fed decision in September?',
  description: 'Fed decision',
  resolutionSource: 'https://www.federalreserve.gov',
  startDate: '2025-07-01T00:00:00Z',
  endDate: '2025-09-17T00:00:00Z',
  active: true,
  closed: true,
  liquidity: 0,
  volume: 9000000,
  tags: [{ id: '2', label: 'Politics', slug: 'politics' }],
  markets: [resolvedMarket, awaitingMarket],
}
