import type { EnvReader } from './env-reader.js'
import type { Config, Deployment } from './types.js'

/** What the platform signs and settles with: relayer keys, settlement mode, master key, receiver. */
export interface SettlementKeys {
  relayerKeys: `0x${string}`[]
  settlementMode: Config['settlement']['mode']
  facilitatorUrl: string | undefined
  masterKey: Buffer | undefined
  receiverAddress: `0x${string}` | undefined
}

/** The keys and settlement mode; production must have every key its mode needs. */
export function readSettlementKeys(r: EnvReader, deployment: Deployment): SettlementKeys {
  const relayerKeys = r.privateKeys('RELAYER_PRIVATE_KEYS')
  const settlementMode = r.oneOf('SETTLEMENT_MODE', ['relayer', 'facilitator'] as const, 'relayer')
  const facilitatorUrl = r.url('FACILITATOR_URL', undefined, ['http:', 'https:'])
  if (settlementMode === 'facilitator' && facilitatorUrl === undefined) {
    r.problems.push('FACILITATOR_URL: required when SETTLEMENT_MODE=facilitator')
  }
  const masterKey = r.key32('TOLLGATE_MASTER_KEY')
  const receiverAddress = r.address('TOLLGATE_RECEIVER_ADDRESS')
  const keys = { relayerKeys, settlementMode, facilitatorUrl, masterKey, receiverAddress }
  if (deployment === 'production') requireProductionKeys(r, keys)
  return keys
}

function requireProductionKeys(r: EnvReader, keys: SettlementKeys): void {
  if (keys.settlementMode === 'relayer' && keys.relayerKeys.length === 0)
    r.problems.push('RELAYER_PRIVATE_KEYS: production needs at least one relayer key')
  if (keys.masterKey === undefined)
    r.problems.push('TOLLGATE_MASTER_KEY: production needs a 32-byte master key for wallet encryption')
  if (keys.receiverAddress === undefined)
    r.problems.push('TOLLGATE_RECEIVER_ADDRESS: production needs the receiver of the hosted services')
}

/** How payments are settled (Config.settlement). */
export function settlementConfig(
  r: EnvReader,
  { settlementMode, facilitatorUrl }: Pick<SettlementKeys, 'settlementMode' | 'facilitatorUrl'>,
): Config['settlement'] {
  return {
    batchSize: r.int('SETTLEMENT_BATCH_SIZE', 200, 1, 500),
    batchWindowMs: r.int('SETTLEMENT_BATCH_WINDOW_MS', 500, 10, 60000),
    mode: settlementMode,
    facilitatorUrl,
    maxFeePerGasWei: BigInt(r.int('SETTLEMENT_MAX_FEE_GWEI', 100, 1, 100000)) * 1_000_000_000n,
    logChunkBlocks: r.int('SETTLEMENT_LOG_CHUNK_BLOCKS', 2_000, 1, 1_000_000),
    relayerMinEthWei: r.amount('RELAYER_MIN_ETH_WEI', '5000000000000000', 'wei'),
  }
}
