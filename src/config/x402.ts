import { MAX_HANDLER_TIMEOUT_MS } from '../pool/handler-contract.js'
import { minValidForSeconds } from '../x402/verify-requirements.js'
import type { EnvReader } from './env-reader.js'
import type { Config } from './types.js'

/** the validity a payment for the slowest possible hosted call needs (150 s) */
export const LEAST_VALIDITY_SECONDS = minValidForSeconds(MAX_HANDLER_TIMEOUT_MS / 1000)

/**
 * X402_MAX_TIMEOUT_SECONDS: clients sign maxTimeoutSeconds of validity, and the proxy takes only
 * payments that outlive the endpoint's call and its settlement (up to LEAST_VALIDITY_SECONDS for the
 * slowest endpoints).
 */
export function readMaxTimeoutSeconds(r: EnvReader): number {
  return r.int('X402_MAX_TIMEOUT_SECONDS', 300, LEAST_VALIDITY_SECONDS, 3600)
}

/** The x402 wire limits and signature recovery (Config.x402). */
export function x402Config(
  r: EnvReader,
  maxTimeoutSeconds: number,
  settlementMode: Config['settlement']['mode'],
): Config['x402'] {
  return {
    maxTimeoutSeconds,
    maxValidForSeconds: r.int('X402_MAX_VALID_FOR_SECONDS', maxTimeoutSeconds + 60, LEAST_VALIDITY_SECONDS, 86400),
    maxHeaderBytes: r.int('X402_MAX_HEADER_BYTES', 8192, 1024, 65536),
    recoveryThreads: r.int('X402_RECOVERY_THREADS', 1, 0, 16),
    recoveryOffload: r.oneOf('X402_RECOVERY_OFFLOAD', ['busy', 'always'] as const, 'busy'),
    // our relayer deploys such wallets in the settlement batch; an external facilitator may not
    counterfactualWallets:
      r.oneOf(
        'X402_COUNTERFACTUAL_WALLETS',
        ['accept', 'refuse'] as const,
        settlementMode === 'relayer' ? 'accept' : 'refuse',
      ) === 'accept',
    paymentIds: {
      retentionSeconds: r.int('X402_PAYMENT_ID_RETENTION_SECONDS', 86400, 60, 30 * 86400),
      answerMaxBytes: r.int('X402_PAYMENT_ID_ANSWER_MAX_BYTES', 1024 * 1024, 0, 16 * 1024 * 1024),
    },
  }
}
