import { defineHandler } from '../../src/pool/handler-contract.js'
import {
  clearinghouseState,
  dec,
  EVM_ADDRESS_PATTERN,
  hyperliquidInfo,
  HYPERLIQUID_SETTING,
  malformed,
  parseMarginSummary,
  parsePosition,
} from '../_shared/hyperliquid-info.js'

interface Input {
  address: string
  includeSpot?: boolean
  includeOpenOrders?: boolean
}

interface SpotBalance {
  coin: string
  token?: number
  total?: string
  hold?: string
  entryNtl?: string
}

interface OpenOrder {
  coin: string
  side: 'A' | 'B'
  limitPx?: string
  sz?: string
}

/**
 * A user's Hyperliquid account from the info endpoint: `clearinghouseState` (perp positions and
 * margin), `spotClearinghouseState` (spot balances) and `openOrders`, read in parallel.
 * Docs: https://hyperliquid.gitbook.io/hyperliquid-docs/for-developers/api/info-endpoint/perpetuals#retrieve-users-perpetuals-account-summary
 * and .../info-endpoint/spot#retrieve-a-users-token-balances, .../info-endpoint#retrieve-a-users-open-orders
 * clearinghouseState is always an object, never null, for any address (nktkas/hyperliquid
 * src/api/info/_methods/clearinghouseState.ts ClearinghouseStateResponse); hasActivity tells an empty account apart.
 */
export default defineHandler<Input>({
  slug: 'perpdex-portfolio',
  description:
    "A wallet's Hyperliquid portfolio: open perpetual positions (size, entry, value, unrealized PnL, leverage, liquidation price), margin summary, withdrawable USDC, spot balances and open-order count.",
  providers: [HYPERLIQUID_SETTING],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['address'],
    properties: {
      address: {
        type: 'string',
        pattern: EVM_ADDRESS_PATTERN,
        description:
          'The Hyperliquid user: a 0x-prefixed 20-byte hex address (the master account or a vault/sub-account).',
      },
      includeSpot: {
        type: 'boolean',
        default: true,
        description: 'Also read spot token balances (spotClearinghouseState).',
      },
      includeOpenOrders: { type: 'boolean', default: true, description: 'Also count open orders (openOrders).' },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ venue, address, time, hasActivity, marginSummary and crossMarginSummary: { accountValueUsd, totalNotionalPositionUsd, totalRawUsd, totalMarginUsedUsd }, crossMaintenanceMarginUsedUsd, withdrawableUsd, ' +
      'positionsCount, positions[] (largest value first): { coin, side, size, entryPx, positionValueUsd, unrealizedPnlUsd, returnOnEquity, liquidationPx (null when Hyperliquid gives none), marginUsedUsd, leverage: { type, value }, maxLeverage, cumulativeFundingUsd }, ' +
      'spot: { balances[]: { coin, token, total, hold, entryNotionalUsd } } or null when not asked (balances are in token units; not valued in USD here), openOrders: { count, buy, sell, byCoin } or null when not asked }.',
    schema: {
      type: 'object',
      properties: {
        venue: { type: 'string' },
        address: { type: 'string' },
        time: { type: 'string' },
        hasActivity: { type: 'boolean' },
        marginSummary: {
          type: 'object',
          properties: {
            accountValueUsd: { type: 'number' },
            totalNotionalPositionUsd: { type: 'number' },
            totalRawUsd: { type: 'number' },
            totalMarginUsedUsd: { type: 'number' },
          },
          required: ['accountValueUsd', 'totalNotionalPositionUsd', 'totalRawUsd', 'totalMarginUsedUsd'],
        },
        crossMarginSummary: {
          type: 'object',
          properties: {
            accountValueUsd: { type: 'number' },
            totalNotionalPositionUsd: { type: 'number' },
            totalRawUsd: { type: 'number' },
            totalMarginUsedUsd: { type: 'number' },
          },
          required: ['accountValueUsd', 'totalNotionalPositionUsd', 'totalRawUsd', 'totalMarginUsedUsd'],
        },
        crossMaintenanceMarginUsedUsd: { type: 'number' },
        withdrawableUsd: { type: 'number' },
        positionsCount: { type: 'number' },
        positions: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              coin: { type: 'string' },
              side: { type: 'string' },
              size: { type: 'number' },
              entryPx: { type: 'number' },
              positionValueUsd: { type: 'number' },
              unrealizedPnlUsd: { type: 'number' },
              returnOnEquity: { type: 'number' },
              liquidationPx: { type: ['null', 'number'] },
              marginUsedUsd: { type: 'number' },
              leverage: {
                type: 'object',
                properties: { type: { type: 'string' }, value: { type: 'number' } },
                required: ['type', 'value'],
              },
              maxLeverage: { type: 'number' },
              cumulativeFundingUsd: {
                type: 'object',
                properties: { allTime: { type: 'number' }, sinceOpen: { type: 'number' } },
                required: ['allTime', 'sinceOpen'],
              },
            },
            required: [
              'coin',
              'side',
              'size',
              'entryPx',
              'positionValueUsd',
              'unrealizedPnlUsd',
              'returnOnEquity',
              'liquidationPx',
              'marginUsedUsd',
              'leverage',
              'maxLeverage',
              'cumulativeFundingUsd',
            ],
          },
        },
        spot: {
          type: ['null', 'object'],
          properties: {
            balances: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  coin: { type: 'string' },
                  token: { type: 'number' },
                  total: { type: 'number' },
                  hold: { type: 'number' },
                  entryNotionalUsd: { type: 'number' },
                },
                required: ['coin', 'token', 'total', 'hold', 'entryNotionalUsd'],
              },
            },
          },
          required: ['balances'],
        },
        openOrders: {
          type: ['null', 'object'],
          properties: {
            count: { type: 'number' },
            buy: { type: 'number' },
            sell: { type: 'number' },
            byCoin: {
              type: 'object',
              properties: { BTC: { type: 'number' }, ETH: { type: 'number' } },
              required: [],
            },
          },
          required: ['count', 'buy', 'sell', 'byCoin'],
        },
      },
      required: [
        'venue',
        'address',
        'time',
        'hasActivity',
        'marginSummary',
        'crossMarginSummary',
        'crossMaintenanceMarginUsedUsd',
        'withdrawableUsd',
        'positionsCount',
        'positions',
        'spot',
        'openOrders',
      ],
    },
    example: {
      venue: 'hyperliquid',
      address: '0xabcdef0123456789abcdef0123456789abcdef01',
      time: '2025-08-06T03:29:34.231Z',
      hasActivity: true,
      marginSummary: {
        accountValueUsd: 10000,
        totalNotionalPositionUsd: 2500,
        totalRawUsd: 7500,
        totalMarginUsedUsd: 250,
      },
      crossMarginSummary: {
        accountValueUsd: 10000,
        totalNotionalPositionUsd: 2500,
        totalRawUsd: 7500,
        totalMarginUsedUsd: 250,
      },
      crossMaintenanceMarginUsedUsd: 40,
      withdrawableUsd: 9750,
      positionsCount: 2,
      positions: [
        {
          coin: 'BTC',
          side: 'long',
          size: 0.015,
          entryPx: 100,
          positionValueUsd: 1500,
          unrealizedPnlUsd: 12.5,
          returnOnEquity: 0.05,
          liquidationPx: null,
          marginUsedUsd: 250,
          leverage: { type: 'cross', value: 10 },
          maxLeverage: 40,
          cumulativeFundingUsd: { allTime: -3.25, sinceOpen: -1.5 },
        },
        {
          coin: 'ETH',
          side: 'short',
          size: -2.5,
          entryPx: 3900,
          positionValueUsd: 1000,
          unrealizedPnlUsd: 12.5,
          returnOnEquity: 0.05,
          liquidationPx: 4400.5,
          marginUsedUsd: 250,
          leverage: { type: 'cross', value: 10 },
          maxLeverage: 40,
          cumulativeFundingUsd: { allTime: -3.25, sinceOpen: -1.5 },
        },
      ],
      spot: {
        balances: [
          { coin: 'USDC', token: 0, total: 1234.56, hold: 0, entryNotionalUsd: 0 },
          { coin: 'HYPE', token: 150, total: 10.5, hold: 1, entryNotionalUsd: 250 },
        ],
      },
      openOrders: { count: 3, buy: 2, sell: 1, byCoin: { BTC: 2, ETH: 1 } },
    },
  },
  example: { address: '0xdfc24b077bc1425ad1dea75bcb6f8158e10df303' },
  async run(input, ctx) {
    const user = input.address.toLowerCase()
    const [state, spot, orders] = await Promise.all([
      clearinghouseState(ctx, user),
      input.includeSpot === false ? null : hyperliquidInfo<any>(ctx, { type: 'spotClearinghouseState', user }),
      input.includeOpenOrders === false ? null : hyperliquidInfo<any>(ctx, { type: 'openOrders', user }),
    ])
    if (spot !== null && !Array.isArray(spot?.balances)) throw malformed('spotClearinghouseState')
    if (orders !== null && !Array.isArray(orders)) throw malformed('openOrders')

    const positions = state.assetPositions
      .filter((p) => p?.position && typeof p.position.coin === 'string')
      .map((p) => parsePosition(p.position))
      .sort((a, b) => Math.abs(b.positionValueUsd ?? 0) - Math.abs(a.positionValueUsd ?? 0))
    // entries that are not objects naming their coin (null, a bare string) are left out rather than crashing the answer
    const named = <T extends { coin: string }>(list: unknown[]): T[] =>
      list.filter((x): x is T => x !== null && typeof x === 'object' && typeof (x as T).coin === 'string')
    const balances = spot
      ? named<SpotBalance>(spot.balances).map((b) => ({
          coin: b.coin,
          token: typeof b.token === 'number' ? b.token : null,
          total: dec(b.total),
          hold: dec(b.hold),
          entryNotionalUsd: dec(b.entryNtl),
        }))
      : null
    let openOrders = null
    if (orders) {
      const list = named<OpenOrder>(orders)
      const byCoin: Record<string, number> = {}
      for (const o of list) byCoin[o.coin] = (byCoin[o.coin] ?? 0) + 1
      // side B = bid (buy), A = ask (sell), per the docs
      openOrders = {
        count: list.length,
        buy: list.filter((o) => o.side === 'B').length,
        sell: list.filter((o) => o.side === 'A').length,
        byCoin,
      }
    }
    const margin = parseMarginSummary(state.marginSummary)
    const hasActivity =
      positions.length > 0 ||
      (margin?.accountValueUsd ?? 0) !== 0 ||
      (balances ?? []).some((b) => (b.total ?? 0) !== 0) ||
      (openOrders?.count ?? 0) > 0
    return {
      body: {
        venue: 'hyperliquid',
        address: user,
        time: typeof state.time === 'number' ? new Date(state.time).toISOString() : null,
        hasActivity,
        marginSummary: margin,
        crossMarginSummary: parseMarginSummary(state.crossMarginSummary),
        crossMaintenanceMarginUsedUsd: dec(state.crossMaintenanceMarginUsed),
        withdrawableUsd: dec(state.withdrawable),
        positionsCount: positions.length,
        positions,
        spot: balances ? { balances } : null,
        openOrders,
      },
    }
  },
})
