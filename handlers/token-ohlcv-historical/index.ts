import { coingeckoGet } from '../_shared/market-coingecko.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  id?: string
  contractAddress?: string
  platform?: string
  vsCurrency?: string
  days?: number
}

const DAYS = [1, 7, 14, 30, 90, 180, 365]
const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

/**
 * CoinGecko's documented OHLC granularity (https://docs.coingecko.com/v3.0.1/reference/coins-id-ohlc):
 * 1–2 days: 30-minute candles, 3–30 days: 4-hour, 31 days and more: 4-day. Candles built from
 * contract price samples use the same widths so both paths answer alike.
 */
function candleWidth(days: number): { ms: number; label: string } {
  if (days <= 2) return { ms: 30 * MINUTE, label: '30m' }
  if (days <= 30) return { ms: 4 * HOUR, label: '4h' }
  return { ms: 4 * DAY, label: '4d' }
}

interface Candle {
  time: string
  timestamp: number
  open: number
  high: number
  low: number
  close: number
  volume24h: number | null
}

/**
 * Historical candles from CoinGecko API v3.
 * - By coin id: `GET /coins/{id}/ohlc?vs_currency&days` answers `[[timeMs, open, high, low, close], ...]`
 *   where the time is the candle's close (https://docs.coingecko.com/v3.0.1/reference/coins-id-ohlc);
 *   it has no volume.
 * - By contract: `GET /coins/{platform}/contract/{address}/market_chart?vs_currency&days` answers
 *   `{ prices: [[timeMs, price]], market_caps: [...], total_volumes: [[timeMs, rolling24hVolume]] }`
 *   (https://docs.coingecko.com/v3.0.1/reference/contract-address-market-chart); the candles are
 *   built from those price samples (open = first, high = max, low = min, close = last sample of
 *   each period) and carry the rolling 24h volume CoinGecko reports at the last sample, which is
 *   not the volume traded inside the candle.
 * An id or contract CoinGecko does not know answers 404 `{"error":"coin not found"}`: found false.
 */
export default defineHandler<Input>({
  slug: 'token-ohlcv-historical',
  description:
    'Historical OHLC candles of a crypto token from CoinGecko, by coin id or by contract address on a chain (e.g. Base), for the last 1 to 365 days, in USD or another currency.',
  providers: ['COINGECKO_API_URL'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      id: {
        type: 'string',
        minLength: 1,
        maxLength: 100,
        pattern: '^[a-z0-9][a-z0-9.-]*$',
        description: 'CoinGecko coin id, e.g. bitcoin. Give either id or contractAddress.',
      },
      contractAddress: {
        type: 'string',
        pattern: '^(0x[0-9a-fA-F]{40}|[1-9A-HJ-NP-Za-km-z]{32,44})$',
        description: 'Token contract address on `platform` (0x… for EVM chains, a base58 mint on Solana).',
      },
      platform: {
        type: 'string',
        minLength: 1,
        maxLength: 64,
        pattern: '^[a-z0-9][a-z0-9-]*$',
        default: 'base',
        description:
          'CoinGecko asset platform id of the contract (base, ethereum, arbitrum-one, solana, ...); default base. Used with contractAddress only.',
      },
      vsCurrency: {
        type: 'string',
        minLength: 2,
        maxLength: 10,
        pattern: '^[a-zA-Z]+$',
        default: 'usd',
        description: 'Quote currency (usd, eur, btc, eth, ...); default usd.',
      },
      days: {
        type: 'integer',
        enum: DAYS,
        default: 7,
        description:
          'How far back: 1, 7, 14, 30, 90, 180 or 365 days; default 7. Candle width: 30 minutes for 1 day, 4 hours up to 30 days, 4 days beyond.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'source, by ("id" or "contract"), id or platform+address, vsCurrency, days, interval (30m, 4h, 4d), found (false when CoinGecko does not know the coin or contract), method ("coingecko-ohlc": CoinGecko\'s own candles, or "built-from-price-samples" for contracts), candles[] oldest first: { time (ISO, the candle close), timestamp (ms), open, high, low, close, volume24h (contracts only: CoinGecko\'s rolling 24h volume at the candle close; null for coin ids, whose OHLC has no volume) }, note.',
    schema: {
      type: 'object',
      properties: {
        source: { type: 'string' },
        by: { type: 'string' },
        found: { type: 'boolean' },
        method: { type: 'string' },
        interval: { type: 'string' },
        candles: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              time: { type: 'string' },
              timestamp: { type: 'number' },
              open: { type: 'number' },
              high: { type: 'number' },
              low: { type: 'number' },
              close: { type: 'number' },
              volume24h: { type: ['number', 'null'] },
            },
          },
        },
        note: { type: 'string' },
      },
    },
    example: {
      source: 'coingecko',
      vsCurrency: 'usd',
      days: 1,
      interval: '30m',
      by: 'id',
      id: 'ethereum',
      found: true,
      method: 'coingecko-ohlc',
      candles: [
        {
          time: '2024-03-02T16:00:00.000Z',
          timestamp: 1709395200000,
          open: 3380,
          high: 3405.75,
          low: 3370,
          close: 3400.5,
          volume24h: null,
        },
        {
          time: '2024-03-02T20:00:00.000Z',
          timestamp: 1709409600000,
          open: 3400.5,
          high: 3420,
          low: 3390.25,
          close: 3410,
          volume24h: null,
        },
      ],
      note: "CoinGecko's OHLC candles; the time is each candle's close. This endpoint gives no volume.",
    },
  },
  example: { id: 'ethereum', vsCurrency: 'usd', days: 7 },
  async run(input, ctx) {
    if (!!input.id === !!input.contractAddress)
      throw new HandlerInputError(
        input.id ? 'contractAddress' : 'id',
        'give either id or contractAddress (one of them, not both)',
      )
    const vsCurrency = (input.vsCurrency ?? 'usd').toLowerCase()
    const days = input.days ?? 7
    const width = candleWidth(days)
    const meta = { source: 'coingecko', vsCurrency, days, interval: width.label }

    if (input.id) {
      const { status, json } = await coingeckoGet<unknown>(
        ctx,
        `/coins/${encodeURIComponent(input.id)}/ohlc`,
        { vs_currency: vsCurrency, days },
        { acceptStatus: [404] },
      )
      if (status === 404)
        return {
          body: {
            ...meta,
            by: 'id',
            id: input.id,
            found: false,
            method: 'coingecko-ohlc',
            candles: [],
            note: 'CoinGecko does not list this coin id',
          },
        }
      if (!Array.isArray(json))
        throw new HandlerUpstreamError('upstream_failed', 'CoinGecko answered an OHLC list that is not an array')
      const candles: Candle[] = []
      for (const row of json) {
        if (
          !Array.isArray(row) ||
          row.length < 5 ||
          !row.slice(0, 5).every((v) => typeof v === 'number' && Number.isFinite(v))
        )
          continue
        const [ts, open, high, low, close] = row as number[]
        candles.push({ time: new Date(ts).toISOString(), timestamp: ts, open, high, low, close, volume24h: null })
      }
      candles.sort((a, b) => a.timestamp - b.timestamp)
      return {
        body: {
          ...meta,
          by: 'id',
          id: input.id,
          found: true,
          method: 'coingecko-ohlc',
          candles,
          note: "CoinGecko's OHLC candles; the time is each candle's close. This endpoint gives no volume.",
        },
      }
    }

    const platform = input.platform ?? 'base'
    const address = input.contractAddress!
    if (platform !== 'solana' && !address.startsWith('0x'))
      throw new HandlerInputError(
        'contractAddress',
        `contract addresses on ${platform} are 0x-prefixed hex; base58 addresses are for platform solana`,
      )
    const path = `/coins/${encodeURIComponent(platform)}/contract/${encodeURIComponent(address)}/market_chart`
    const { status, json } = await coingeckoGet<{ prices?: unknown; total_volumes?: unknown }>(
      ctx,
      path,
      { vs_currency: vsCurrency, days },
      { acceptStatus: [404] },
    )
    const contractMeta = { ...meta, by: 'contract', platform, address, method: 'built-from-price-samples' }
    if (status === 404)
      return {
        body: {
          ...contractMeta,
          found: false,
          candles: [],
          note: `CoinGecko does not list this contract on ${platform}`,
        },
      }
    if (!json || typeof json !== 'object' || !Array.isArray(json.prices))
      throw new HandlerUpstreamError('upstream_failed', 'CoinGecko answered a market chart without prices')
    return {
      body: {
        ...contractMeta,
        found: true,
        candles: buildCandles(samples(json.prices), samples(json.total_volumes), width.ms),
        note: "Built from CoinGecko's price samples (open = first, high = max, low = min, close = last sample in each period; time = the period's end; the newest period may still be open). volume24h is CoinGecko's rolling 24-hour volume at the last sample, not the volume inside the candle.",
      },
    }
  },
})

function samples(v: unknown): Array<[number, number]> {
  if (!Array.isArray(v)) return []
  return v
    .filter(
      (r): r is [number, number] =>
        Array.isArray(r) &&
        typeof r[0] === 'number' &&
        typeof r[1] === 'number' &&
        Number.isFinite(r[0]) &&
        Number.isFinite(r[1]),
    )
    .sort((a, b) => a[0] - b[0])
}

/** Groups price samples into periods of `widthMs` (aligned to the epoch), one candle per period that has samples. */
export function buildCandles(
  prices: Array<[number, number]>,
  volumes: Array<[number, number]>,
  widthMs: number,
): Candle[] {
  // the volume sample at or just before a time (CoinGecko samples volumes at the price times)
  const volumeAt = (t: number): number | null => {
    let found: number | null = null
    for (const [vt, v] of volumes) {
      if (vt > t) break
      found = v
    }
    return found
  }
  const out: Candle[] = []
  let current: (Candle & { bucket: number; lastSample: number }) | undefined
  for (const [t, p] of prices) {
    const bucket = Math.floor(t / widthMs)
    if (!current || bucket !== current.bucket) {
      if (current) out.push(finish(current))
      const end = (bucket + 1) * widthMs
      current = {
        bucket,
        lastSample: t,
        time: new Date(end).toISOString(),
        timestamp: end,
        open: p,
        high: p,
        low: p,
        close: p,
        volume24h: null,
      }
    } else {
      current.high = Math.max(current.high, p)
      current.low = Math.min(current.low, p)
      current.close = p
      current.lastSample = t
    }
  }
  if (current) out.push(finish(current))
  return out

  function finish(c: Candle & { bucket: number; lastSample: number }): Candle {
    const { bucket: _b, lastSample, ...candle } = c
    candle.volume24h = volumeAt(lastSample)
    return candle
  }
}
