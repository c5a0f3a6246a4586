import { coingeckoGet } from '../_shared/market-coingecko.js'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

interface Input {
  ids?: string[]
  contractAddresses?: string[]
  platform?: string
  vsCurrencies?: string[]
}

/** One coin's entry in /simple/price or /simple/token_price: `<cur>`, `<cur>_market_cap`, `<cur>_24h_vol`, `<cur>_24h_change`, `last_updated_at`. */
type SimplePriceEntry = Record<string, number | null | undefined>

const MAX_IDS = 30
const MAX_ADDRESSES = 10

/**
 * Current token prices from CoinGecko API v3, by coin id (`GET /simple/price`) or by contract
 * address on an asset platform (`GET /simple/token_price/{platform}`).
 * Response shape (both: an object keyed by coin id / contract address, with `<vs>`,
 * `<vs>_market_cap`, `<vs>_24h_vol`, `<vs>_24h_change` and `last_updated_at` in Unix seconds; a
 * coin or address CoinGecko does not know is simply absent):
 * https://docs.coingecko.com/v3.0.1/reference/simple-price and
 * https://docs.coingecko.com/v3.0.1/reference/simple-token-price
 */
export default defineHandler<Input>({
  slug: 'token-price-feed',
  description:
    'Current price of crypto tokens from CoinGecko, by coin id (bitcoin, ethereum) or by contract address on a chain (e.g. Base), in one or more currencies, with 24h change, market cap, 24h volume and the time of the last update.',
  providers: ['COINGECKO_API_URL'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      ids: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_IDS,
        uniqueItems: true,
        items: { type: 'string', minLength: 1, maxLength: 100, pattern: '^[a-z0-9][a-z0-9.-]*$' },
        description: `CoinGecko coin ids (as in coingecko.com/en/coins/<id>), e.g. ["bitcoin","ethereum"]; at most ${MAX_IDS}. Give either ids or contractAddresses.`,
      },
      contractAddresses: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_ADDRESSES,
        uniqueItems: true,
        items: { type: 'string', pattern: '^(0x[0-9a-fA-F]{40}|[1-9A-HJ-NP-Za-km-z]{32,44})$' },
        description: `Token contract addresses on \`platform\` (0x… for EVM chains, base58 mints on Solana); at most ${MAX_ADDRESSES}.`,
      },
      platform: {
        type: 'string',
        minLength: 1,
        maxLength: 64,
        pattern: '^[a-z0-9][a-z0-9-]*$',
        default: 'base',
        description:
          'CoinGecko asset platform id of the contracts (base, ethereum, arbitrum-one, polygon-pos, solana, ...); used with contractAddresses only. Default base.',
      },
      vsCurrencies: {
        type: 'array',
        minItems: 1,
        maxItems: 10,
        uniqueItems: true,
        items: { type: 'string', minLength: 2, maxLength: 10, pattern: '^[a-zA-Z]+$' },
        default: ['usd'],
        description: 'Currencies to quote in (usd, eur, btc, eth, ...); default ["usd"].',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'source ("coingecko"), by ("id" or "contract"), platform (contracts only), vsCurrencies, prices[]: { id or address, found (false when CoinGecko does not list it), quotes: { <currency>: { price, marketCap, volume24h, change24hPercent } }, lastUpdatedAt (ISO time of the price, null when not given) }. A figure CoinGecko does not give is null.',
    schema: {
      type: 'object',
      properties: {
        source: { type: 'string' },
        by: { type: 'string', enum: ['id', 'contract'] },
        platform: { type: 'string' },
        vsCurrencies: { type: 'array', items: { type: 'string' } },
        prices: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              id: { type: 'string' },
              address: { type: 'string' },
              found: { type: 'boolean' },
              quotes: {
                type: 'object',
                description: 'per currency: price, marketCap, volume24h, change24hPercent (numbers or null)',
              },
              lastUpdatedAt: { type: ['string', 'null'] },
            },
          },
        },
      },
    },
    example: {
      source: 'coingecko',
      by: 'id',
      vsCurrencies: ['usd'],
      prices: [
        {
          id: 'bitcoin',
          found: true,
          quotes: {
            usd: {
              price: 67187.3358,
              marketCap: 1317802988326.25,
              volume24h: 31260929299.52,
              change24hPercent: 3.6379,
            },
          },
          lastUpdatedAt: '2024-03-25T08:45:00.000Z',
        },
        {
          id: 'ethereum',
          found: true,
          quotes: {
            usd: { price: 3500.5, marketCap: 420000000000, volume24h: 15000000000, change24hPercent: -1.25 },
          },
          lastUpdatedAt: '2024-03-25T08:44:50.000Z',
        },
      ],
    },
  },
  example: { ids: ['bitcoin', 'ethereum'], vsCurrencies: ['usd'] },
  async run(input, ctx) {
    const hasIds = (input.ids?.length ?? 0) > 0
    const hasAddresses = (input.contractAddresses?.length ?? 0) > 0
    if (hasIds === hasAddresses)
      throw new HandlerInputError(
        hasIds ? 'contractAddresses' : 'ids',
        'give either ids or contractAddresses (one of them, not both)',
      )
    const vs = (input.vsCurrencies ?? ['usd']).map((c) => c.toLowerCase())
    const flags = {
      vs_currencies: vs.join(','),
      include_market_cap: true,
      include_24hr_vol: true,
      include_24hr_change: true,
      include_last_updated_at: true,
    }

    if (hasIds) {
      const ids = input.ids!
      const { json } = await coingeckoGet<Record<string, SimplePriceEntry>>(ctx, '/simple/price', {
        ids: ids.join(','),
        ...flags,
      })
      const data = asRecord(json)
      return {
        body: {
          source: 'coingecko',
          by: 'id',
          vsCurrencies: vs,
          prices: ids.map((id) => ({ id, ...entry(data[id], vs) })),
        },
      }
    }

    const platform = input.platform ?? 'base'
    const addresses = input.contractAddresses!
    if (platform !== 'solana' && addresses.some((a) => !a.startsWith('0x')))
      throw new HandlerInputError(
        'contractAddresses',
        `contract addresses on ${platform} are 0x-prefixed hex; base58 addresses are for platform solana`,
      )
    const { status, json } = await coingeckoGet<Record<string, SimplePriceEntry>>(
      ctx,
      `/simple/token_price/${encodeURIComponent(platform)}`,
      { contract_addresses: addresses.join(','), ...flags },
      { acceptStatus: [404] },
    )
    // CoinGecko answers 404 for an asset platform id it does not have (see /asset_platforms)
    if (status === 404)
      throw new HandlerInputError(
        'platform',
        `CoinGecko has no asset platform "${platform}" (ids as in its /asset_platforms list, e.g. base, ethereum, solana)`,
        422,
      )
    const data = asRecord(json)
    // EVM addresses come back lower-cased; Solana mints keep their case
    const lower = new Map(Object.entries(data).map(([k, v]) => [k.toLowerCase(), v]))
    return {
      body: {
        source: 'coingecko',
        by: 'contract',
        platform,
        vsCurrencies: vs,
        prices: addresses.map((address) => ({
          address,
          ...entry(data[address] ?? lower.get(address.toLowerCase()), vs),
        })),
      },
    }
  },
})

function asRecord(json: unknown): Record<string, SimplePriceEntry> {
  if (!json || typeof json !== 'object' || Array.isArray(json)) return {}
  return json as Record<string, SimplePriceEntry>
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)

function entry(e: SimplePriceEntry | undefined, vs: string[]) {
  if (!e || typeof e !== 'object') return { found: false, quotes: {}, lastUpdatedAt: null }
  const quotes: Record<
    string,
    { price: number | null; marketCap: number | null; volume24h: number | null; change24hPercent: number | null }
  > = {}
  for (const c of vs)
    quotes[c] = {
      price: num(e[c]),
      marketCap: num(e[`${c}_market_cap`]),
      volume24h: num(e[`${c}_24h_vol`]),
      change24hPercent: num(e[`${c}_24h_change`]),
    }
  const updated = num(e.last_updated_at)
  return { found: true, quotes, lastUpdatedAt: updated === null ? null : new Date(updated * 1000).toISOString() }
}
