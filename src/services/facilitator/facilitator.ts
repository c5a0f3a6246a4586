/**
 * Facilitator mode (issue 34 item 9): Tollgate as the x402 facilitator of a seller's own server.
 * The official server middleware (`HTTPFacilitatorClient` of @x402/core) points at
 * `{base_url}/facilitator` and calls the standard facilitator API, answered here by scheme:
 * `exact` (./exact.ts) on this platform's chain and USDC, settled by the platform's relayers, and
 * `batch-settlement` (./batch.ts, ./batch-settle.ts) where the platform holds its receiverAuthorizer
 * key (a master key, the scheme on: `BATCH_SETTLEMENT`), which `/supported` declares.
 */
import type { FastifyBaseLogger } from 'fastify'
import type { CoreDeps } from '../../core-deps.js'
import { createRelayerLock, relayersFromKeys } from '../../chain/relayer.js'
import { createSignerRecovery } from '../../chain/signer-recovery.js'
import { createChannelStore } from '../../schemes/batch-settlement/channel-store.js'
import { DepositExecutor } from '../../schemes/batch-settlement/deposit.js'
import { createSmartWalletCheck } from '../../schemes/smart-wallet-check.js'
import { ensurePlatformKey } from '../wallets/platform-key.js'
import { batchFacilitatorContext, verifyBatchCall, type BatchVerifyAnswer } from './batch.js'
import { settleBatchCall } from './batch-settle.js'
import type { FacilitatorCall } from './request.js'
import { exactContext, verifyExact, type ExactCall, type VerifyAnswer } from './exact.js'
import { settleExact, type SettleAnswer, type SettleRefusal } from './exact-settle.js'

/** `GET /supported` (SupportedResponse of @x402/core). */
export interface SupportedAnswer {
  kinds: Array<{ x402Version: number; scheme: string; network: string; extra?: Record<string, unknown> }>
  extensions: string[]
  signers: Record<string, string[]>
}

export function createFacilitator(
  deps: Pick<CoreDeps, 'config' | 'db' | 'chain' | 'redis' | 'key'>,
  log: FastifyBaseLogger,
) {
  const { config } = deps
  const relayers = relayersFromKeys(config.relayerKeys)
  const shared = {
    config,
    db: deps.db,
    chain: deps.chain,
    // a route, not the hot path: recovery on the calling thread
    recovery: createSignerRecovery({ threads: 0 }),
    smartWallets: createSmartWalletCheck(deps),
    relayers,
    lock: createRelayerLock(deps.redis, deps.key),
    log,
  }
  const x = exactContext(shared)
  const exact = {
    verify: (call: ExactCall, nowMs = Date.now()): Promise<VerifyAnswer> => verifyExact(x, call, nowMs),
    /**
     * Settle for `userId` (whose key asked: the gas is theirs): the answer, or a SettleRefusal
     * (its HTTP status and body).
     */
    settle: (call: ExactCall, userId: string, nowMs = Date.now()): Promise<SettleAnswer | SettleRefusal> =>
      settleExact(x, call, userId, nowMs),
  }

  const masterKey = config.masterKey
  const batch =
    config.batchSettlement.enabled && masterKey && relayers.length > 0
      ? createBatch(deps, shared, masterKey)
      : undefined

  async function supported(): Promise<SupportedAnswer> {
    const network = config.chain.caip2
    const kinds: SupportedAnswer['kinds'] = relayers.length > 0 ? [{ x402Version: 2, scheme: 'exact', network }] : []
    // the receiverAuthorizer the official batch-settlement server puts in its channels' config
    if (batch)
      kinds.push({
        x402Version: 2,
        scheme: 'batch-settlement',
        network,
        extra: { receiverAuthorizer: await batch.authorizerAddress() },
      })
    return {
      kinds,
      extensions: [],
      // the addresses that send settlement transactions, by CAIP family
      signers: { 'eip155:*': relayers.map((r) => r.address) },
    }
  }

  return { exact, batch, supported }
}

/** batch-settlement in facilitator mode: the platform's receiverAuthorizer key, loaded once. */
function createBatch(
  deps: Pick<CoreDeps, 'config' | 'db' | 'chain' | 'redis' | 'key'>,
  shared: Omit<Parameters<typeof batchFacilitatorContext>[0], 'deposits' | 'authorizer'>,
  masterKey: Buffer,
) {
  let key: ReturnType<typeof ensurePlatformKey> | undefined
  const platformKey = () => {
    key ??= ensurePlatformKey(deps.db, masterKey, 'batch-receiver-authorizer').catch((err: unknown) => {
      key = undefined
      throw err
    })
    return key
  }
  const b = batchFacilitatorContext({
    ...shared,
    // its `check` only (the facilitator sends the deposit itself: ./batch-send.ts)
    deposits: new DepositExecutor(deps, createChannelStore(deps.db)),
    authorizer: async () => (await platformKey()).signer,
  })
  return {
    authorizerAddress: async () => (await platformKey()).address,
    verify: (call: FacilitatorCall, nowMs = Date.now()): Promise<BatchVerifyAnswer> => verifyBatchCall(b, call, nowMs),
    /** Settle a deposit, claim, settle or refund for `userId` (whose key asked: the gas is theirs). */
    settle: (call: FacilitatorCall, userId: string, nowMs = Date.now()): Promise<SettleAnswer | SettleRefusal> =>
      settleBatchCall(b, call, userId, nowMs),
  }
}
