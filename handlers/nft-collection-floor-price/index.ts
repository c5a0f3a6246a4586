import { callProvider, joinUrl, providerSetting } from '../_shared/outbound.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  slug?: string
  contractAddress?: string
  chain?: string
}

interface OpenSeaStats {
  total?: {
    volume?: number
    sales?: number
    average_price?: number
    num_owners?: number
    market_cap?: number
    floor_price?: number
    floor_price_symbol?: string
  }
  intervals?: Array<{
    interval?: string
    volume?: number
    volume_diff?: number
    volume_change?: number
    sales?: number
    sales_diff?: number
    average_price?: number
  }>
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)

/**
 * NFT collection floor price and trading stats from the OpenSea API v2 (header `x-api-key`):
 * - `GET /api/v2/chain/{chain}/contract/{address}` maps a contract to its collection slug
 *   (https://docs.opensea.io/reference/get_contract: { address, chain, collection, contract_standard, name });
 * - `GET /api/v2/collections/{slug}/stats` (https://docs.opensea.io/reference/get_collection_stats:
 *   { total { volume, sales, average_price, num_owners, market_cap, floor_price, floor_price_symbol },
 *   intervals[] { interval, volume, volume_diff, volume_change, sales, sales_diff, average_price } });
 * - `GET /api/v2/collections/{slug}` (https://docs.opensea.io/reference/get_collection: name,
 *   total_supply, contracts[], opensea_url, ...).
 * An unknown collection or contract answers 404 (or 400 with `errors: ["... not found"]`).
 */
export default defineHandler<Input>({
  slug: 'nft-collection-floor-price',
  description:
    'Floor price of an NFT collection on OpenSea, by collection slug or contract address, with its currency, total and 1/7/30-day volume and sales, average price, number of owners, market cap and supply.',
  providers: ['OPENSEA_API_URL', 'OPENSEA_API_KEY'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      slug: {
        type: 'string',
        minLength: 1,
        maxLength: 100,
        pattern: '^[a-z0-9][a-z0-9._-]*$',
        description:
          'OpenSea collection slug, as in opensea.io/collection/<slug> (e.g. boredapeyachtclub). Give slug or contractAddress.',
      },
      contractAddress: {
        type: 'string',
        pattern: '^0x[0-9a-fA-F]{40}$',
        description: 'NFT contract address; OpenSea maps it to its collection.',
      },
      chain: {
        type: 'string',
        minLength: 2,
        maxLength: 30,
        pattern: '^[a-z0-9_]+$',
        default: 'ethereum',
        description:
          'OpenSea chain name of the contract (ethereum, base, arbitrum, optimism, matic, zora, ...); default ethereum. Used with contractAddress only.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'source ("opensea"), found (false when OpenSea has no such collection or contract), slug, name, contracts[] { address, chain }, floorPrice and floorPriceSymbol (the currency, e.g. ETH), volume, sales, averagePrice, owners, marketCap (all-time, in that currency), intervals[] { interval (one_day, seven_day, thirty_day), volume, volumeChange, volumeDiff, sales, salesDiff, averagePrice }, totalSupply, openseaUrl. Figures OpenSea does not give are null.',
    schema: {
      type: 'object',
      properties: {
        source: { type: 'string' },
        found: { type: 'boolean' },
        slug: { type: 'string' },
        floorPrice: { type: ['number', 'null'] },
        floorPriceSymbol: { type: ['string', 'null'] },
        owners: { type: ['number', 'null'] },
        totalSupply: { type: ['number', 'null'] },
        intervals: { type: 'array', items: { type: 'object' } },
      },
    },
    example: {
      source: 'opensea',
      found: true,
      slug: 'boredapeyachtclub',
      name: 'Bored Ape Yacht Club',
      contracts: [{ address: '0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d', chain: 'ethereum' }],
      floorPrice: 11.8,
      floorPriceSymbol: 'ETH',
      volume: 1402312.55,
      sales: 48210,
      averagePrice: 29.09,
      owners: 5512,
      marketCap: 118000.4,
      intervals: [
        {
          interval: 'one_day',
          volume: 95.2,
          volumeChange: -0.174,
          volumeDiff: -20.1,
          sales: 8,
          salesDiff: -2,
          averagePrice: 11.9,
        },
        {
          interval: 'seven_day',
          volume: 812.4,
          volumeChange: 0.141,
          volumeDiff: 100.5,
          sales: 67,
          salesDiff: 5,
          averagePrice: 12.12,
        },
        {
          interval: 'thirty_day',
          volume: 3020,
          volumeChange: 0,
          volumeDiff: 0,
          sales: 250,
          salesDiff: 0,
          averagePrice: 12.08,
        },
      ],
      totalSupply: 10000,
      openseaUrl: 'https://opensea.io/collection/boredapeyachtclub',
    },
  },
  example: { slug: 'boredapeyachtclub' },
  async run(input, ctx) {
    if (!!input.slug === !!input.contractAddress)
      throw new HandlerInputError(
        input.slug ? 'contractAddress' : 'slug',
        'give either slug or contractAddress (one of them, not both)',
      )
    const base = providerSetting(ctx, 'OPENSEA_API_URL', 'OpenSea NFT data')
    const key = providerSetting(ctx, 'OPENSEA_API_KEY', 'OpenSea NFT data')
    const get = (path: string, field: string) => openSeaGet(base, key, path, field)

    let slug = input.slug
    if (!slug) {
      const chain = input.chain ?? 'ethereum'
      const contract = await get(
        `/api/v2/chain/${encodeURIComponent(chain)}/contract/${input.contractAddress}`,
        'contractAddress',
      )
      if (contract === undefined)
        return {
          body: {
            source: 'opensea',
            found: false,
            contractAddress: input.contractAddress,
            chain,
            note: `OpenSea knows no contract ${input.contractAddress} on ${chain}`,
          },
        }
      slug = str((contract as Record<string, unknown>).collection) ?? undefined
      if (!slug)
        return {
          body: {
            source: 'opensea',
            found: false,
            contractAddress: input.contractAddress,
            chain,
            note: 'OpenSea lists the contract but no collection for it',
          },
        }
    }

    const [stats, collection] = await Promise.all([
      get(`/api/v2/collections/${encodeURIComponent(slug)}/stats`, input.slug ? 'slug' : 'contractAddress'),
      get(`/api/v2/collections/${encodeURIComponent(slug)}`, input.slug ? 'slug' : 'contractAddress'),
    ])
    if (stats === undefined)
      return { body: { source: 'opensea', found: false, slug, note: `OpenSea has no collection "${slug}"` } }
    const s = stats as OpenSeaStats
    if (!s.total || typeof s.total !== 'object')
      throw new HandlerUpstreamError('upstream_failed', 'OpenSea answered collection stats without totals')
    const c = (collection ?? {}) as Record<string, unknown>
    return {
      body: {
        source: 'opensea',
        found: true,
        slug,
        name: str(c.name),
        contracts: Array.isArray(c.contracts)
          ? c.contracts.map((x) => ({
              address: str((x as Record<string, unknown>)?.address),
              chain: str((x as Record<string, unknown>)?.chain),
            }))
          : [],
        floorPrice: num(s.total.floor_price),
        floorPriceSymbol: str(s.total.floor_price_symbol),
        volume: num(s.total.volume),
        sales: num(s.total.sales),
        averagePrice: num(s.total.average_price),
        owners: num(s.total.num_owners),
        marketCap: num(s.total.market_cap),
        intervals: (Array.isArray(s.intervals) ? s.intervals : []).map((i) => ({
          interval: str(i?.interval),
          volume: num(i?.volume),
          volumeChange: num(i?.volume_change),
          volumeDiff: num(i?.volume_diff),
          sales: num(i?.sales),
          salesDiff: num(i?.sales_diff),
          averagePrice: num(i?.average_price),
        })),
        totalSupply: num(c.total_supply),
        openseaUrl: str(c.opensea_url) ?? `https://opensea.io/collection/${encodeURIComponent(slug)}`,
      },
    }
  },
})

/** GET an OpenSea path; undefined when OpenSea says the thing does not exist. */
async function openSeaGet(base: string, key: string, path: string, field: string): Promise<unknown> {
  const r = await callProvider('OpenSea', joinUrl(base, path), {
    headers: { 'x-api-key': key },
    acceptStatus: [400, 404],
  })
  if (r.status === 404) return undefined
  if (r.status === 400) {
    const errors = (r.json as { errors?: unknown } | undefined)?.errors
    const message = Array.isArray(errors) ? errors.map(String).join('; ') : ''
    if (/not found|does not exist/i.test(message)) return undefined
    throw new HandlerInputError(
      /chain/i.test(message) && field === 'contractAddress' ? 'chain' : field,
      `OpenSea refused the request: ${message.slice(0, 300) || 'HTTP 400'}`,
      422,
    )
  }
  if (r.json === undefined || r.json === null || typeof r.json !== 'object')
    throw new HandlerUpstreamError('upstream_failed', 'OpenSea answered something that is not a JSON object')
  return r.json
}
