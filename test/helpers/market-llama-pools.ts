/**
 * A small DefiLlama yields `/pools` answer in its documented shape
 * (https://api-docs.defillama.com/#tag/yields/get/pools) for the defi-yield-scanner and
 * base-defi-opportunities tests. Field values are made up but typed as DefiLlama sends them.
 */
const pool = (o: Record<string, unknown>) => ({
  apyPct1D: 0,
  apyPct7D: 0,
  apyPct30D: 0,
  rewardTokens: null,
  underlyingTokens: [],
  poolMeta: null,
  mu: 5,
  sigma: 0.1,
  count: 300,
  outlier: false,
  il7d: null,
  apyBase7d: null,
  volumeUsd1d: null,
  volumeUsd7d: null,
  apyBaseInception: null,
  predictions: { predictedClass: 'Stable/Up', predictedProbability: 70, binnedConfidence: 2 },
  ...o,
})

export const llamaPools = {
  status: 'success',
  data: [
    pool({ pool: 'base-aave-usdc', chain: 'Base', project: 'aave-v3', symbol: 'USDC', tvlUsd: 250_000_000, apyBase: 4.8, apyReward: null, apy: 4.8, stablecoin: true, ilRisk: 'no', exposure: 'single', apyMean30d: 5.1, apyPct1D: -0.1, apyPct7D: 0.3, apyPct30D: -0.5, underlyingTokens: ['0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'] }),
    pool({ pool: 'base-morpho-usdc', chain: 'Base', project: 'morpho-blue', symbol: 'USDC', tvlUsd: 40_000_000, apyBase: 6.2, apyReward: 1.5, apy: 7.7, stablecoin: true, ilRisk: 'no', exposure: 'single', apyMean30d: 7.0, rewardTokens: ['0xBAa5CC21fd487B8Fcc2F632f3F4E8D37262a0842'], poolMeta: 'Steakhouse USDC' }),
    pool({ pool: 'base-aero-usdc-weth', chain: 'Base', project: 'aerodrome-slipstream', symbol: 'USDC-WETH', tvlUsd: 30_000_000, apyBase: 12.5, apyReward: 25.0, apy: 37.5, stablecoin: false, ilRisk: 'yes', exposure: 'multi', apyMean30d: 41.2, volumeUsd1d: 55_000_000, il7d: -0.8, poolMeta: '0.05%' }),
    pool({ pool: 'base-aero-usdc-usdbc', chain: 'Base', project: 'aerodrome-v1', symbol: 'USDC-USDBC', tvlUsd: 2_000_000, apyBase: 0.2, apyReward: 9.0, apy: 9.2, stablecoin: true, ilRisk: 'no', exposure: 'multi', apyMean30d: 10.0 }),
    pool({ pool: 'base-lido-wsteth', chain: 'Base', project: 'lido', symbol: 'WSTETH', tvlUsd: 90_000_000, apyBase: 2.9, apyReward: null, apy: 2.9, stablecoin: false, ilRisk: 'no', exposure: 'single', apyMean30d: 3.0 }),
    pool({ pool: 'base-tiny', chain: 'Base', project: 'tiny-farm', symbol: 'USDC', tvlUsd: 5_000, apyBase: 900, apyReward: 0, apy: 900, stablecoin: true, ilRisk: 'no', exposure: 'single', apyMean30d: null }),
    pool({ pool: 'base-outlier', chain: 'Base', project: 'odd-vault', symbol: 'USDC', tvlUsd: 3_000_000, apyBase: 300, apyReward: 0, apy: 300, stablecoin: true, ilRisk: 'no', exposure: 'single', apyMean30d: 150, outlier: true }),
    pool({ pool: 'eth-aave-usdc', chain: 'Ethereum', project: 'aave-v3', symbol: 'USDC', tvlUsd: 3_000_000_000, apyBase: 5.5, apyReward: null, apy: 5.5, stablecoin: true, ilRisk: 'no', exposure: 'single', apyMean30d: 5.2 }),
    pool({ pool: 'arb-gmx-glp', chain: 'Arbitrum', project: 'gmx-v1', symbol: 'WBTC-WETH-USDC', tvlUsd: 80_000_000, apyBase: 15, apyReward: null, apy: 15, stablecoin: false, ilRisk: 'yes', exposure: 'multi', apyMean30d: 14 }),
    { pool: 'broken-entry' },
  ],
}
