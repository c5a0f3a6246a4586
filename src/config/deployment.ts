import { CHAINS } from './chains.js'
import type { EnvReader } from './env-reader.js'
import type { Config } from './types.js'

/** TOLLGATE_DEPLOYMENT and its chain; TOLLGATE_CHAIN_ID, when set, must name that chain. */
export function readDeployment(r: EnvReader): Pick<Config, 'deployment' | 'chain'> {
  const deployment = r.oneOf('TOLLGATE_DEPLOYMENT', ['production', 'sandbox'] as const, 'sandbox')
  const chain = CHAINS[deployment]
  const chainIdOverride = r.optional('TOLLGATE_CHAIN_ID')
  if (chainIdOverride !== undefined && Number(chainIdOverride) !== chain.chainId) {
    r.problems.push(
      `TOLLGATE_CHAIN_ID: the ${deployment} deployment settles on chain ${chain.chainId} (${chain.network}), got "${chainIdOverride}"`,
    )
  }
  return { deployment, chain }
}

/** RPC_URL; production needs one (the embedded chain is sandbox only), checked by `requireRpcUrl`. */
export function readRpcUrl(r: EnvReader): string | undefined {
  return r.url('RPC_URL', undefined, ['http:', 'https:'])
}

export function requireRpcUrl(r: EnvReader, { deployment, rpcUrl }: Pick<Config, 'deployment' | 'rpcUrl'>): void {
  if (deployment === 'production' && rpcUrl === undefined) {
    r.problems.push('RPC_URL: production needs a Base mainnet RPC URL; the embedded local chain is for sandbox only')
  }
}
