import { joinUrl, providerJson, providerSetting } from '../_shared/outbound.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  symbol?: string
  search?: string
}

const PROVIDER = 'Alpha Vantage'

/**
 * Alpha Vantage answers (https://www.alphavantage.co/documentation/, "Quote Endpoint" and "Search Endpoint"):
 *   GLOBAL_QUOTE → { "Global Quote": { "01. symbol": "IBM", "02. open": "219.5000", ..., "05. price": "222.9700",
 *     "06. volume": "3530040", "07. latest trading day": "2024-11-22", "08. previous close": "219.5000",
 *     "09. change": "3.4700", "10. change percent": "1.5809%" } }; an unknown symbol gives "Global Quote": {}
 *   SYMBOL_SEARCH → { bestMatches: [{ "1. symbol", "2. name", "3. type", "4. region", "5. marketOpen",
 *     "6. marketClose", "7. timezone", "8. currency", "9. matchScore" }] }
 * Problems come back as HTTP 200 too: { "Error Message": ... } (invalid call, e.g. a bad symbol),
 * { "Note": ... } or { "Information": ... } (rate limit, premium-only or bad key).
 */
type AvAnswer = Record<string, unknown> & {
  'Global Quote'?: Record<string, string>
  bestMatches?: Array<Record<string, string>>
}

const decimal = (v: unknown) => {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null
  if (typeof v !== 'string' || v.trim() === '') return null
  const n = Number(v.replace(/%$/, ''))
  return Number.isFinite(n) ? n : null
}

/** Throws 502 for Alpha Vantage's in-band rate-limit / key messages; returns the "Error Message" text when there is one. */
function inBandProblem(a: AvAnswer): string | null {
  const info = a.Note ?? a.Information
  if (typeof info === 'string') {
    const why = /frequency|rate limit|requests per|calls per/i.test(info)
      ? 'its rate limit was reached'
      : /apikey|api key/i.test(info)
        ? 'it refused the API key'
        : 'it declined the request'
    throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered without data: ${why}`)
  }
  const err = typeof a['Error Message'] === 'string' ? a['Error Message'] : null
  // a missing or invalid key comes back as an "Error Message" too: that is ours, not the buyer's symbol
  if (err !== null && /apikey|api key/i.test(err))
    throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered without data: it refused the API key`)
  return err
}

/** A stock quote (or a symbol search) from Alpha Vantage. */
export default defineHandler<Input>({
  slug: 'stock-price-quote',
  description:
    'Latest stock quote for a ticker symbol from Alpha Vantage (price, open, high, low, volume, previous close, change, latest trading day), or a symbol search by company name.',
  providers: ['ALPHAVANTAGE_URL', 'ALPHAVANTAGE_API_KEY'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      symbol: {
        type: 'string',
        minLength: 1,
        maxLength: 20,
        pattern: '^[A-Za-z0-9.:^=-]+$',
        description:
          'Ticker symbol, e.g. IBM, MSFT, TSCO.LON (exchange suffix as Alpha Vantage names it). Give symbol or search.',
      },
      search: {
        type: 'string',
        minLength: 1,
        maxLength: 100,
        description: 'Find symbols by company name or partial ticker instead, e.g. "tesco".',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'Quote: { mode: "quote", found, symbol, price, open, high, low, volume, previousClose, change, changePercent (percent), latestTradingDay (YYYY-MM-DD), currency: null (GLOBAL_QUOTE does not say; see search), source }. found:false with a reason when Alpha Vantage knows no such symbol. ' +
      'Search: { mode: "search", query, matches[] { symbol, name, type, region, marketOpen, marketClose, timezone, currency, matchScore } }. ' +
      'Alpha Vantage quotes may be delayed (end of day or 15 minutes, per plan); latestTradingDay says which day the figures are from.',
    schema: {
      type: 'object',
      properties: {
        mode: { type: 'string', enum: ['quote', 'search'] },
        found: { type: 'boolean' },
        symbol: { type: 'string' },
        price: { type: ['number', 'null'] },
        latestTradingDay: { type: ['string', 'null'] },
        matches: { type: 'array' },
      },
    },
    example: {
      mode: 'quote',
      found: true,
      symbol: 'IBM',
      price: 222.97,
      open: 219.5,
      high: 222.83,
      low: 218.2,
      volume: 3530040,
      previousClose: 219.5,
      change: 3.47,
      changePercent: 1.5809,
      latestTradingDay: '2024-11-22',
      currency: null,
      source: 'Alpha Vantage (alphavantage.co)',
    },
  },
  example: { symbol: 'IBM' },
  async run(input, ctx) {
    const base = providerSetting(ctx, 'ALPHAVANTAGE_URL', 'stock quotes')
    const key = providerSetting(ctx, 'ALPHAVANTAGE_API_KEY', 'stock quotes')
    if (input.symbol !== undefined && input.search !== undefined)
      throw new HandlerInputError('symbol', 'give either symbol or search, not both')
    if (input.symbol === undefined && input.search === undefined)
      throw new HandlerInputError('symbol', 'symbol (a ticker) or search (a company name) is required')
    const source = 'Alpha Vantage (alphavantage.co)'

    if (input.search !== undefined) {
      const keywords = input.search.trim()
      if (!keywords) throw new HandlerInputError('search', 'search must not be blank')
      const a = await providerJson<AvAnswer>(
        PROVIDER,
        joinUrl(base, '/query', { function: 'SYMBOL_SEARCH', keywords, apikey: key }),
      )
      if (!a || typeof a !== 'object')
        throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered an unexpected shape`)
      const err = inBandProblem(a)
      if (err !== null)
        throw new HandlerInputError('search', 'search: Alpha Vantage could not search for this text', 422)
      if (!Array.isArray(a.bestMatches))
        throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered without bestMatches`)
      const matches = a.bestMatches
        .filter((m) => m !== null && typeof m === 'object')
        .map((m) => ({
          symbol: m['1. symbol'] ?? null,
          name: m['2. name'] ?? null,
          type: m['3. type'] ?? null,
          region: m['4. region'] ?? null,
          marketOpen: m['5. marketOpen'] ?? null,
          marketClose: m['6. marketClose'] ?? null,
          timezone: m['7. timezone'] ?? null,
          currency: m['8. currency'] ?? null,
          matchScore: decimal(m['9. matchScore']),
        }))
      return { body: { mode: 'search', query: keywords, matches, source } }
    }

    const symbol = input.symbol!.trim().toUpperCase()
    const a = await providerJson<AvAnswer>(
      PROVIDER,
      joinUrl(base, '/query', { function: 'GLOBAL_QUOTE', symbol, apikey: key }),
    )
    if (!a || typeof a !== 'object')
      throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered an unexpected shape`)
    const err = inBandProblem(a)
    if (err !== null)
      return {
        body: {
          mode: 'quote',
          found: false,
          symbol,
          reason: 'Alpha Vantage rejected this symbol (invalid API call for it)',
          source,
        },
      }
    const q = a['Global Quote']
    if (!q || typeof q !== 'object')
      throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered without a Global Quote`)
    if (Object.keys(q).length === 0 || !q['01. symbol'])
      return {
        body: { mode: 'quote', found: false, symbol, reason: 'Alpha Vantage has no quote for this symbol', source },
      }
    const price = decimal(q['05. price'])
    if (price === null)
      throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered a quote without a price`)
    return {
      body: {
        mode: 'quote',
        found: true,
        symbol: q['01. symbol'],
        price,
        open: decimal(q['02. open']),
        high: decimal(q['03. high']),
        low: decimal(q['04. low']),
        volume: decimal(q['06. volume']),
        previousClose: decimal(q['08. previous close']),
        change: decimal(q['09. change']),
        changePercent: decimal(q['10. change percent']),
        latestTradingDay: q['07. latest trading day'] ?? null,
        currency: null,
        source,
      },
    }
  },
})
