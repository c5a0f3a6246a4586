import { PROVIDER_SETTINGS } from '../handler-providers.js'
import type { EnvReader } from './env-reader.js'
import type { Config, Deployment } from './types.js'

/** Aave v3 Pool on Base mainnet: wallet-behavior-score-query's default in production. */
export const AAVE_V3_POOL_BASE = '0xA238Dd80C259a72e81d7e4664a9801593F98d1c5'

/** wallet-behavior-score-query's chain access: its own RPC, and the Aave pool it reads. */
export interface WalletScoreSettings {
  rpcUrl: string | undefined
  pool: string | undefined
}

export function readWalletScore(r: EnvReader, deployment: Deployment): WalletScoreSettings {
  const rpcUrl = r.url('WALLET_SCORE_RPC_URL', undefined, ['http:', 'https:'])
  // the default pool only fits the platform's own RPC (Base mainnet in production)
  const pool =
    r.address('WALLET_SCORE_AAVE_POOL') ??
    (deployment === 'production' && rpcUrl === undefined ? AAVE_V3_POOL_BASE : undefined)
  return { rpcUrl, pool }
}

/** The settings of hosted handlers that call outside services (Config.handlerProviders). */
export function handlerProvidersConfig(
  r: EnvReader,
  walletScore: WalletScoreSettings,
  rpcUrl: string | undefined,
): Config['handlerProviders'] {
  return {
    WALLET_SCORE_RPC_URL: walletScore.rpcUrl ?? rpcUrl,
    WALLET_SCORE_AAVE_POOL: walletScore.pool,
    WALLET_SCORE_LOG_BLOCKS: String(r.int('WALLET_SCORE_LOG_BLOCKS', 100_000, 1, 10_000_000)),
    WALLET_SCORE_LOG_CHUNK_BLOCKS: String(r.int('WALLET_SCORE_LOG_CHUNK_BLOCKS', 10_000, 1, 1_000_000)),
    ...Object.fromEntries(
      PROVIDER_SETTINGS.map((p) => {
        const fallback = p.default === 'rpc' ? rpcUrl : p.default
        return [
          p.name,
          p.kind === 'url' ? r.url(p.name, fallback, ['http:', 'https:']) : (r.optional(p.name) ?? fallback),
        ]
      }),
    ),
  }
}
