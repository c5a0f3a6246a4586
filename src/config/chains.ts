import type { ChainParams, Deployment } from './types.js'

/** The chain and USDC each deployment settles on: Base in production, Base Sepolia in sandbox. */
export const CHAINS: Record<Deployment, ChainParams> = {
  production: {
    chainId: 8453,
    network: 'base',
    caip2: 'eip155:8453',
    usdc: { address: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', name: 'USD Coin', version: '2', decimals: 6 },
  },
  sandbox: {
    chainId: 84532,
    network: 'base-sepolia',
    caip2: 'eip155:84532',
    usdc: { address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', name: 'USDC', version: '2', decimals: 6 },
  },
}
