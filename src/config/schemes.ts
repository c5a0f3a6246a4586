import { DEVNET_DEFERRED_ESCROW_ADDRESS } from '../chain/deferred-escrow-address.js'
import type { EnvReader } from './env-reader.js'
import type { SettlementKeys } from './settlement.js'
import type { Config, Deployment } from './types.js'
import { LEAST_VALIDITY_SECONDS } from './x402.js'

type SchemesConfig = Pick<Config, 'deferredEscrowAddress' | 'upto' | 'batchSettlement' | 'agentPayments'>

/** Which payment schemes beside exact are offered, and the limits of agent wallets' signatures. */
export function schemesConfig(
  r: EnvReader,
  deployment: Deployment,
  { settlementMode, masterKey }: Pick<SettlementKeys, 'settlementMode' | 'masterKey'>,
): SchemesConfig {
  return {
    deferredEscrowAddress:
      r.address('DEFERRED_ESCROW_ADDRESS') ?? (deployment === 'sandbox' ? DEVNET_DEFERRED_ESCROW_ADDRESS : undefined),
    upto: {
      enabled:
        r.oneOf('UPTO_SCHEME', ['on', 'off'] as const, deployment === 'sandbox' ? 'on' : 'off') === 'on' &&
        settlementMode === 'relayer',
      llmRatePer1kTokens: BigInt(r.int('UPTO_LLM_RATE_PER_1K_TOKENS', 2000, 0, 1_000_000_000)),
      allowanceCacheMs: r.int('UPTO_ALLOWANCE_CACHE_MS', 2000, 0, 60_000),
      allowanceExposure: BigInt(r.int('UPTO_ALLOWANCE_EXPOSURE', 100_000, 0, 1_000_000_000_000)),
    },
    batchSettlement: {
      enabled:
        // on by default wherever the platform can hold its receiverAuthorizer key (a master key) and
        // submit deposits (relayer mode), production included: the canonical audited deployment
        r.oneOf('BATCH_SETTLEMENT', ['on', 'off'] as const, masterKey ? 'on' : 'off') === 'on' &&
        settlementMode === 'relayer',
      withdrawDelay: r.int('BATCH_WITHDRAW_DELAY_SECONDS', 900, 900, 2_592_000),
    },
    agentPayments: {
      maxValidForSeconds: r.int('AGENT_PAYMENT_MAX_VALID_SECONDS', 600, LEAST_VALIDITY_SECONDS, 3600),
    },
  }
}

/** When the worker collects deferred vouchers (Config.deferred). */
export function deferredConfig(r: EnvReader): Config['deferred'] {
  return {
    collectThreshold: r.amount('DEFERRED_COLLECT_THRESHOLD', '1000000', 'atomic units'),
    collectMaxAgeSeconds: r.int('DEFERRED_COLLECT_MAX_AGE_SECONDS', 3600, 0, 30 * 86400),
    collectEveryMs: r.int('DEFERRED_COLLECT_EVERY_MS', 30_000, 100, 3_600_000),
    stuckSeconds: r.int('DEFERRED_COLLECT_STUCK_SECONDS', 120, 1, 86400),
    watchEveryMs: r.int('DEFERRED_WATCH_EVERY_MS', 1000, 50, 60_000),
  }
}

/** The batch-settlement claim worker's settings (Config.batchClaim). */
export function batchClaimConfig(r: EnvReader, deployment: Deployment): Config['batchClaim'] {
  return {
    claimThreshold: r.amount('BATCH_CLAIM_THRESHOLD', '10000000', 'atomic units'),
    claimMaxAgeSeconds: r.int('BATCH_CLAIM_MAX_AGE_SECONDS', deployment === 'sandbox' ? 20 : 3600, 0, 30 * 86400),
    claimEveryMs: r.int('BATCH_CLAIM_EVERY_MS', deployment === 'sandbox' ? 5_000 : 30_000, 100, 3_600_000),
    stuckSeconds: r.int('BATCH_TX_STUCK_SECONDS', 60, 1, 86400),
  }
}
