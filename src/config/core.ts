import { readDatabaseSchema } from './database.js'
import { readDeployment, readRpcUrl, requireRpcUrl } from './deployment.js'
import type { EnvReader } from './env-reader.js'
import { readHandlerAddresses, type HandlerAddresses } from './handlers.js'
import { readPublicUrls } from './http.js'
import { readWalletScore, type WalletScoreSettings } from './providers.js'
import { readRedis } from './redis.js'
import { readSettlementKeys, type SettlementKeys } from './settlement.js'
import type { Config } from './types.js'
import { readMaxTimeoutSeconds } from './x402.js'

/** The settings other parts of the configuration depend on, read first (in this order, so problems list in it). */
export interface CoreSettings
  extends
    Pick<Config, 'deployment' | 'chain' | 'rpcUrl' | 'redisUrl' | 'redisPrefix'>,
    Pick<Config, 'webPort' | 'proxyPort' | 'baseUrl' | 'proxyUrl' | 'dashboardUrl'>,
    SettlementKeys {
  databaseSchema: string
  maxTimeoutSeconds: number
  handlerAddresses: HandlerAddresses
  walletScore: WalletScoreSettings
}

export function readCoreSettings(r: EnvReader): CoreSettings {
  const { deployment, chain } = readDeployment(r)
  const rpcUrl = readRpcUrl(r)
  const redis = readRedis(r, deployment)
  requireRpcUrl(r, { deployment, rpcUrl })
  const urls = readPublicUrls(r)
  const keys = readSettlementKeys(r, deployment)
  return {
    deployment,
    chain,
    rpcUrl,
    ...redis,
    ...urls,
    ...keys,
    databaseSchema: readDatabaseSchema(r),
    maxTimeoutSeconds: readMaxTimeoutSeconds(r),
    handlerAddresses: readHandlerAddresses(r),
    walletScore: readWalletScore(r, deployment),
  }
}
