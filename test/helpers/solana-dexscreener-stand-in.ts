/**
 * DexScreener pair objects in the shape of its API reference
 * (https://docs.dexscreener.com/api/reference), for the Solana pool and launch handler tests.
 */
export const SOL_MINT = 'So11111111111111111111111111111111111111112'
export const USDC_MINT = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v'

export interface PairSpec {
  dexId: string
  pairAddress: string
  base: { address: string; name: string; symbol: string }
  quote?: { address: string; name: string; symbol: string }
  chainId?: string
  priceUsd?: string | null
  liquidityUsd?: number | null
  volumeH24?: number
  createdAt?: number | null
  fdv?: number
  extra?: Record<string, unknown>
}

export function dexPair(s: PairSpec) {
  const chainId = s.chainId ?? 'solana'
  return {
    chainId,
    dexId: s.dexId,
    url: `https://dexscreener.com/${chainId}/${s.pairAddress.toLowerCase()}`,
    pairAddress: s.pairAddress,
    labels: ['CLMM'],
    baseToken: s.base,
    quoteToken: s.quote ?? { address: SOL_MINT, name: 'Wrapped SOL', symbol: 'SOL' },
    priceNative: '0.0000001234',
    priceUsd: s.priceUsd === undefined ? '0.00002468' : s.priceUsd,
    txns: {
      m5: { buys: 1, sells: 2 },
      h1: { buys: 10, sells: 12 },
      h6: { buys: 60, sells: 70 },
      h24: { buys: 240, sells: 260 },
    },
    volume: { h24: s.volumeH24 ?? 1000, h6: 250, h1: 40, m5: 3 },
    priceChange: { m5: 0.1, h1: -1.5, h6: 2, h24: 12.25 },
    ...(s.liquidityUsd === null ? {} : { liquidity: { usd: s.liquidityUsd ?? 50000, base: 1000000, quote: 125.5 } }),
    fdv: s.fdv ?? 2000000,
    marketCap: 1800000,
    ...(s.createdAt === null ? {} : { pairCreatedAt: s.createdAt ?? 1_700_000_000_000 }),
    info: {
      imageUrl: 'https://cdn.dexscreener.com/x.png',
      websites: [{ label: 'Website', url: 'https://example.org' }],
      socials: [{ type: 'twitter', url: 'https://x.com/example' }],
    },
    ...s.extra,
  }
}
