/**
 * Local stand-ins for the market-data providers of the perpdex / perp / Solana handlers: a
 * node:http server on 127.0.0.1 (port 0) that records every request and answers through a route
 * function, plus `hyperliquidStandIn`, which dispatches Hyperliquid's `POST /info` on the body's
 * `type`. Answers are given in the providers' documented shapes by each test.
 *
 * @example
 *   const hl = await hyperliquidStandIn(t, { l2Book: (body) => ({ coin: body.coin, time: 1, levels: [[], []] }) })
 *   await runInline(handler, { coin: 'BTC' }, { providers: { HYPERLIQUID_API_URL: hl.url } })
 *   t.equal(hl.requests[0].body.type, 'l2Book')
 */
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface RecordedRequest {
  method: string
  path: string
  query: URLSearchParams
  headers: IncomingHttpHeaders
  /** the parsed JSON body, or the raw text when it is not JSON ('' when empty) */
  body: any
}

/** What a route answers: a JSON value (200), or an explicit status with JSON or raw text. */
export type StandInAnswer = { status: number; json?: unknown; raw?: string } | { json: unknown }

export interface StandIn {
  url: string
  requests: RecordedRequest[]
}

interface Teardown {
  teardown(fn: () => unknown): void
}

/** Starts a recording HTTP server; `route` answers each request. Closed at the test's teardown. */
export async function startJsonStandIn(
  t: Teardown,
  route: (req: RecordedRequest) => StandInAnswer | Promise<StandInAnswer>,
): Promise<StandIn> {
  const requests: RecordedRequest[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const text = Buffer.concat(chunks).toString('utf8')
      let body: unknown = text
      try {
        body = text ? JSON.parse(text) : ''
      } catch {
        // recorded as text
      }
      const u = new URL(req.url ?? '/', 'http://stand-in')
      const recorded: RecordedRequest = {
        method: req.method ?? 'GET',
        path: u.pathname,
        query: u.searchParams,
        headers: req.headers,
        body,
      }
      requests.push(recorded)
      let answer: StandInAnswer
      try {
        answer = await route(recorded)
      } catch (err) {
        answer = { status: 500, raw: String(err) }
      }
      const status = 'status' in answer ? answer.status : 200
      const payload = 'raw' in answer && answer.raw !== undefined ? answer.raw : JSON.stringify(answer.json)
      res.writeHead(status, {
        'content-type': 'raw' in answer && answer.raw !== undefined ? 'text/plain' : 'application/json',
      })
      res.end(payload)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests }
}

/** Per info `type`: a fixed JSON answer, or a function of the request body. Unknown types: 422 as Hyperliquid does. */
export type InfoAnswers = Record<string, unknown | ((body: any) => unknown)>

/** A stand-in for Hyperliquid's `POST /info`, answering per body `type`. */
export async function hyperliquidStandIn(t: Teardown, answers: InfoAnswers): Promise<StandIn> {
  return startJsonStandIn(t, (req) => {
    if (req.method !== 'POST' || req.path !== '/info') return { status: 404, raw: 'not found' }
    const type = req.body?.type
    if (typeof type !== 'string' || !(type in answers))
      return { status: 422, raw: 'Failed to deserialize the JSON body into the target type' }
    const a = answers[type]
    return { json: typeof a === 'function' ? (a as (b: any) => unknown)(req.body) : a }
  })
}

/**
 * A small `metaAndAssetCtxs` answer in the documented shape (strings for every decimal): BTC, ETH,
 * a delisted coin and kPEPE.
 */
export const perpMetaAndCtxs = [
  {
    universe: [
      { name: 'BTC', szDecimals: 5, maxLeverage: 40, marginTableId: 56 },
      { name: 'ETH', szDecimals: 4, maxLeverage: 25, marginTableId: 55 },
      { name: 'OLD', szDecimals: 0, maxLeverage: 3, marginTableId: 3, isDelisted: true },
      { name: 'kPEPE', szDecimals: 0, maxLeverage: 10, marginTableId: 10 },
    ],
    marginTables: [],
  },
  [
    {
      funding: '0.0000125',
      openInterest: '30000.5',
      prevDayPx: '99000.0',
      dayNtlVlm: '2500000000.0',
      premium: '0.00031',
      oraclePx: '100000.0',
      markPx: '100010.0',
      midPx: '100005.0',
      impactPxs: ['100000.0', '100010.0'],
      dayBaseVlm: '25000.1',
    },
    {
      funding: '-0.00002',
      openInterest: '500000.0',
      prevDayPx: '3900.0',
      dayNtlVlm: '900000000.0',
      premium: '-0.0002',
      oraclePx: '4000.0',
      markPx: '3999.0',
      midPx: '3999.5',
      impactPxs: ['3998.0', '4001.0'],
      dayBaseVlm: '225000.0',
    },
    {
      funding: '0.0',
      openInterest: '0.0',
      prevDayPx: '1.0',
      dayNtlVlm: '0.0',
      premium: null,
      oraclePx: '1.0',
      markPx: '1.0',
      midPx: null,
      impactPxs: null,
      dayBaseVlm: '0.0',
    },
    {
      funding: '0.0001',
      openInterest: '1000000000.0',
      prevDayPx: '0.012',
      dayNtlVlm: '5000000.0',
      premium: '0.001',
      oraclePx: '0.0125',
      markPx: '0.0126',
      midPx: '0.01255',
      impactPxs: ['0.0125', '0.0126'],
      dayBaseVlm: '400000000.0',
    },
  ],
]

/** A `clearinghouseState` answer in the documented shape for the given positions ([coin, szi, positionValue, extra]). */
export function clearinghouseFixture(
  positions: Array<[string, string, string, Record<string, unknown>?]>,
  accountValue = '10000.0',
) {
  return {
    assetPositions: positions.map(([coin, szi, positionValue, extra]) => ({
      type: 'oneWay',
      position: {
        coin,
        szi,
        entryPx: '100.0',
        positionValue,
        unrealizedPnl: '12.5',
        returnOnEquity: '0.05',
        liquidationPx: null,
        marginUsed: '250.0',
        maxLeverage: 40,
        leverage: { type: 'cross', value: 10 },
        cumFunding: { allTime: '-3.25', sinceOpen: '-1.5', sinceChange: '-1.5' },
        ...extra,
      },
    })),
    crossMaintenanceMarginUsed: '40.0',
    crossMarginSummary: { accountValue, totalMarginUsed: '250.0', totalNtlPos: '2500.0', totalRawUsd: '7500.0' },
    marginSummary: { accountValue, totalMarginUsed: '250.0', totalNtlPos: '2500.0', totalRawUsd: '7500.0' },
    time: 1_754_450_974_231,
    withdrawable: '9750.0',
  }
}

/** A small `spotMetaAndAssetCtxs` answer in the documented shape: USDC, PURR, HYPE; PURR/USDC (canonical) and @107 = HYPE/USDC. */
export const spotMetaAndCtxsFixture = [
  {
    tokens: [
      {
        name: 'USDC',
        szDecimals: 8,
        weiDecimals: 8,
        index: 0,
        tokenId: '0x6d1e7cde53ba9467b783cb7c530ce054',
        isCanonical: true,
        evmContract: null,
        fullName: null,
      },
      {
        name: 'PURR',
        szDecimals: 0,
        weiDecimals: 5,
        index: 1,
        tokenId: '0xc1fb593aeffbeb02f85e0308e9956a90',
        isCanonical: true,
        evmContract: null,
        fullName: null,
      },
      {
        name: 'HYPE',
        szDecimals: 2,
        weiDecimals: 8,
        index: 150,
        tokenId: '0x0d01dc56dcaaca66ad901c959b4011ec',
        isCanonical: false,
        evmContract: { address: '0x2222222222222222222222222222222222222222', evm_extra_wei_decimals: 10 },
        fullName: 'Hyperliquid',
      },
    ],
    universe: [
      { name: 'PURR/USDC', tokens: [1, 0], index: 0, isCanonical: true },
      { name: '@107', tokens: [150, 0], index: 107, isCanonical: false },
    ],
  },
  [
    {
      dayNtlVlm: '1500000.0',
      markPx: '0.2',
      midPx: '0.2001',
      prevDayPx: '0.25',
      circulatingSupply: '596000000.0',
      coin: 'PURR/USDC',
      totalSupply: '600000000.0',
      dayBaseVlm: '7500000.0',
    },
    {
      dayNtlVlm: '95000000.0',
      markPx: '40.0',
      midPx: '40.005',
      prevDayPx: '38.0',
      circulatingSupply: '333000000.0',
      coin: '@107',
      totalSupply: '999000000.0',
      dayBaseVlm: '2400000.0',
    },
  ],
]

/** A dYdX v4 indexer `GET /v4/perpetualMarkets` answer in the documented shape (decimal strings). */
export const dydxPerpetualMarketsFixture = {
  markets: {
    'BTC-USD': {
      clobPairId: '0',
      ticker: 'BTC-USD',
      status: 'ACTIVE',
      oraclePrice: '100020.5',
      priceChange24H: '1000',
      volume24H: '500000000.5',
      trades24H: 90000,
      nextFundingRate: '0.00001',
      initialMarginFraction: '0.02',
      maintenanceMarginFraction: '0.012',
      openInterest: '1000.5',
      atomicResolution: -10,
      quantumConversionExponent: -9,
      tickSize: '1',
      stepSize: '0.0001',
      stepBaseQuantums: 1000000,
      subticksPerTick: 100000,
      marketType: 'CROSS',
    },
    'ETH-USD': {
      clobPairId: '1',
      ticker: 'ETH-USD',
      status: 'ACTIVE',
      oraclePrice: '4001.0',
      priceChange24H: '-20',
      volume24H: '200000000.0',
      trades24H: 50000,
      nextFundingRate: '0.00002',
      initialMarginFraction: '0.02',
      maintenanceMarginFraction: '0.012',
      openInterest: '20000.0',
      atomicResolution: -9,
      quantumConversionExponent: -9,
      tickSize: '0.1',
      stepSize: '0.001',
      stepBaseQuantums: 1000000,
      subticksPerTick: 100000,
      marketType: 'CROSS',
    },
    'PEPE-USD': {
      clobPairId: '40',
      ticker: 'PEPE-USD',
      status: 'ACTIVE',
      oraclePrice: '0.0000126',
      priceChange24H: '0',
      volume24H: '1000000.0',
      trades24H: 300,
      nextFundingRate: '-0.00005',
      initialMarginFraction: '0.1',
      maintenanceMarginFraction: '0.05',
      openInterest: '1000000000000.0',
      atomicResolution: 1,
      quantumConversionExponent: -9,
      tickSize: '0.0000000001',
      stepSize: '100000',
      stepBaseQuantums: 1000000,
      subticksPerTick: 1000000,
      marketType: 'CROSS',
    },
    'SOL-USD': {
      clobPairId: '5',
      ticker: 'SOL-USD',
      status: 'ACTIVE',
      oraclePrice: '150.0',
      priceChange24H: '1',
      volume24H: '30000000.0',
      trades24H: 9000,
      nextFundingRate: '0.000003',
      initialMarginFraction: '0.05',
      maintenanceMarginFraction: '0.03',
      openInterest: '100000.0',
      atomicResolution: -7,
      quantumConversionExponent: -9,
      tickSize: '0.01',
      stepSize: '0.1',
      stepBaseQuantums: 1000000,
      subticksPerTick: 1000000,
      marketType: 'CROSS',
    },
    'LUNA-USD': {
      clobPairId: '9',
      ticker: 'LUNA-USD',
      status: 'FINAL_SETTLEMENT',
      oraclePrice: '0.5',
      priceChange24H: '0',
      volume24H: '0',
      trades24H: 0,
      nextFundingRate: '0.001',
      initialMarginFraction: '1',
      maintenanceMarginFraction: '1',
      openInterest: '0',
      atomicResolution: -6,
      quantumConversionExponent: -9,
      tickSize: '0.0001',
      stepSize: '1',
      stepBaseQuantums: 1000000,
      subticksPerTick: 1000000,
      marketType: 'ISOLATED',
    },
  },
}

/** A stand-in dYdX indexer answering `GET /v4/perpetualMarkets` with `answer`. */
export async function dydxStandIn(t: Teardown, answer: unknown = dydxPerpetualMarketsFixture): Promise<StandIn> {
  return startJsonStandIn(t, (req) =>
    req.method === 'GET' && req.path === '/v4/perpetualMarkets' ? { json: answer } : { status: 404, raw: 'not found' },
  )
}
