import { defineHandler, HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import {
  clean,
  clearinghouseState,
  EVM_ADDRESS_PATTERN,
  HYPERLIQUID_SETTING,
  parseMarginSummary,
  parsePosition,
  PERP_COIN_PATTERN,
} from '../_shared/hyperliquid-info.js'
import { providerSetting } from '../_shared/outbound.js'

interface Input {
  addresses: string[]
  coin?: string
  minNotionalUsd?: number
  limit?: number
}

const MAX_ADDRESSES = 20
/** parallel clearinghouseState reads: Hyperliquid rate-limits by weight per IP */
const CONCURRENCY = 5

/**
 * Largest Hyperliquid perp positions among the addresses the buyer names. Hyperliquid's public
 * info API has no venue-wide position list or leaderboard, so this reads `clearinghouseState` of
 * each given address (at most 20) and ranks their positions by notional; it never claims to cover
 * the whole venue.
 * Docs: https://hyperliquid.gitbook.io/hyperliquid-docs/for-developers/api/info-endpoint/perpetuals#retrieve-users-perpetuals-account-summary
 */
export default defineHandler<Input>({
  slug: 'perpdex-whale-positions',
  description:
    'Ranks the Hyperliquid perpetual positions of up to 20 wallets you name by notional value (one coin or all), with side, size, entry, PnL and liquidation price; Hyperliquid offers no venue-wide position list, so only the given wallets are scanned.',
  providers: [HYPERLIQUID_SETTING],
  timeoutMs: 20_000,
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['addresses'],
    properties: {
      addresses: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_ADDRESSES,
        items: { type: 'string', pattern: EVM_ADDRESS_PATTERN, description: 'a 0x-prefixed 20-byte hex address' },
        description: `The wallets to scan (1–${MAX_ADDRESSES} 0x addresses; duplicates are read once).`,
      },
      coin: {
        type: 'string',
        pattern: PERP_COIN_PATTERN,
        description: 'Only positions in this perp coin (e.g. BTC); omitted = all coins.',
      },
      minNotionalUsd: {
        type: 'number',
        minimum: 0,
        maximum: 1e12,
        default: 0,
        description: 'Leave out positions whose notional value (USD) is below this.',
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 200,
        default: 50,
        description: 'Positions listed, 1–200 (all are counted in the totals).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ venue, scope (what was scanned: only the given addresses), coin, addressesScanned, addressesFailed[] (address, reason), positionsFound, ' +
      'positions[] largest notional first: { rank, address, coin, side, size, notionalUsd, entryPx, unrealizedPnlUsd, returnOnEquity, liquidationPx, leverage, marginUsedUsd }, ' +
      'totals: { longNotionalUsd, shortNotionalUsd, netNotionalUsd } over every matching position, accounts[]: { address, accountValueUsd, positions } }.',
    schema: {
      type: 'object',
      properties: {
        venue: { type: 'string' },
        scope: { type: 'string' },
        coin: { type: ['null', 'string'] },
        addressesScanned: { type: 'number' },
        addressesFailed: {
          type: 'array',
          items: {
            type: 'object',
            required: ['address', 'reason'],
            properties: { address: { type: 'string' }, reason: { type: 'string' } },
          },
        },
        positionsFound: { type: 'number' },
        positions: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              rank: { type: 'number' },
              address: { type: 'string' },
              coin: { type: 'string' },
              side: { type: 'string' },
              size: { type: 'number' },
              notionalUsd: { type: 'number' },
              entryPx: { type: 'number' },
              unrealizedPnlUsd: { type: 'number' },
              returnOnEquity: { type: 'number' },
              liquidationPx: { type: ['number', 'null'] },
              leverage: {
                type: 'object',
                properties: { type: { type: 'string' }, value: { type: 'number' } },
                required: ['type', 'value'],
              },
              marginUsedUsd: { type: 'number' },
            },
            required: [
              'rank',
              'address',
              'coin',
              'side',
              'size',
              'notionalUsd',
              'entryPx',
              'unrealizedPnlUsd',
              'returnOnEquity',
              'liquidationPx',
              'leverage',
              'marginUsedUsd',
            ],
          },
        },
        totals: {
          type: 'object',
          properties: {
            longNotionalUsd: { type: 'number' },
            shortNotionalUsd: { type: 'number' },
            netNotionalUsd: { type: 'number' },
          },
          required: ['longNotionalUsd', 'shortNotionalUsd', 'netNotionalUsd'],
        },
        accounts: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              address: { type: 'string' },
              accountValueUsd: { type: 'number' },
              positions: { type: 'number' },
            },
            required: ['address', 'accountValueUsd', 'positions'],
          },
        },
      },
      required: [
        'venue',
        'scope',
        'coin',
        'addressesScanned',
        'addressesFailed',
        'positionsFound',
        'positions',
        'totals',
        'accounts',
      ],
    },
    example: {
      venue: 'hyperliquid',
      scope:
        "perp positions of the 1 address(es) given; Hyperliquid's public API has no venue-wide position list, so other wallets are not included",
      coin: 'BTC',
      addressesScanned: 1,
      addressesFailed: [],
      positionsFound: 1,
      positions: [
        {
          rank: 1,
          address: '0xdfc24b077bc1425ad1dea75bcb6f8158e10df303',
          coin: 'BTC',
          side: 'long',
          size: 10,
          notionalUsd: 968500,
          entryPx: 94210,
          unrealizedPnlUsd: 26400,
          returnOnEquity: 0.28,
          liquidationPx: 80120.5,
          leverage: { type: 'cross', value: 10 },
          marginUsedUsd: 96850,
        },
      ],
      totals: { longNotionalUsd: 968500, shortNotionalUsd: 0, netNotionalUsd: 968500 },
      accounts: [{ address: '0xdfc24b077bc1425ad1dea75bcb6f8158e10df303', accountValueUsd: 1250000, positions: 1 }],
    },
  },
  example: { addresses: ['0xdfc24b077bc1425ad1dea75bcb6f8158e10df303'], coin: 'BTC' },
  async run(input, ctx) {
    providerSetting(ctx, HYPERLIQUID_SETTING, 'the Hyperliquid info API')
    const addresses = [...new Set(input.addresses.map((a) => a.toLowerCase()))]
    const coin = input.coin?.toLowerCase()
    const min = input.minNotionalUsd ?? 0

    const results: Array<PromiseSettledResult<Awaited<ReturnType<typeof clearinghouseState>>>> = []
    for (let i = 0; i < addresses.length; i += CONCURRENCY) {
      results.push(
        ...(await Promise.allSettled(addresses.slice(i, i + CONCURRENCY).map((a) => clearinghouseState(ctx, a)))),
      )
    }
    const failed: Array<{ address: string; reason: string }> = []
    const accounts: Array<{ address: string; accountValueUsd: number | null; positions: number }> = []
    const positions: Array<ReturnType<typeof parsePosition> & { address: string; notionalUsd: number | null }> = []
    for (const [i, r] of results.entries()) {
      const address = addresses[i]!
      if (r.status === 'rejected') {
        if (!(r.reason instanceof HandlerUpstreamError)) throw r.reason
        failed.push({ address, reason: r.reason.message })
        continue
      }
      const mine = r.value.assetPositions
        .filter((p) => p?.position && typeof p.position.coin === 'string')
        .map((p) => parsePosition(p.position))
        .filter((p) => (coin === undefined || p.coin.toLowerCase() === coin) && p.size !== 0)
        .map((p) => ({ address, ...p, notionalUsd: p.positionValueUsd === null ? null : Math.abs(p.positionValueUsd) }))
        .filter((p) => (p.notionalUsd ?? 0) >= min)
      accounts.push({
        address,
        accountValueUsd: parseMarginSummary(r.value.marginSummary)?.accountValueUsd ?? null,
        positions: mine.length,
      })
      positions.push(...mine)
    }
    if (accounts.length === 0)
      throw new HandlerUpstreamError(
        'upstream_failed',
        `Hyperliquid failed for every address (${failed[0]?.reason ?? 'no answer'})`,
      )

    positions.sort((a, b) => (b.notionalUsd ?? 0) - (a.notionalUsd ?? 0))
    const sum = (side: 'long' | 'short') =>
      clean(positions.filter((p) => p.side === side).reduce((s, p) => s + (p.notionalUsd ?? 0), 0))
    const longN = sum('long')!
    const shortN = sum('short')!
    return {
      body: {
        venue: 'hyperliquid',
        scope: `perp positions of the ${addresses.length} address(es) given; Hyperliquid's public API has no venue-wide position list, so other wallets are not included`,
        coin: input.coin ?? null,
        addressesScanned: accounts.length,
        addressesFailed: failed,
        positionsFound: positions.length,
        positions: positions.slice(0, input.limit ?? 50).map((p, i) => ({
          rank: i + 1,
          address: p.address,
          coin: p.coin,
          side: p.side,
          size: p.size,
          notionalUsd: p.notionalUsd,
          entryPx: p.entryPx,
          unrealizedPnlUsd: p.unrealizedPnlUsd,
          returnOnEquity: p.returnOnEquity,
          liquidationPx: p.liquidationPx,
          leverage: p.leverage,
          marginUsedUsd: p.marginUsedUsd,
        })),
        totals: { longNotionalUsd: longN, shortNotionalUsd: shortN, netNotionalUsd: clean(longN - shortN) },
        accounts,
      },
    }
  },
})
