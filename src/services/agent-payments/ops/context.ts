/**
 * The agent payments' shared state: the deps, and the helpers built from them once (caps counters,
 * balances, custodial keys, the escrow, Permit2 and chain-cancel clients, ...), passed to every
 * operation in this folder as `ctx`. Built by `createContext`, closed by the service's `close()`.
 */
import type { Kysely } from 'kysely'
import type { PublicClient } from 'viem'
import type { RedisClient } from '../../../redis-client.js'
import type { Requirement } from '../../../client/challenge.js'
import type { Config } from '../../../config.js'
import type { Database } from '../../../db/database.js'
import { appError } from '../../../errors.js'
import { batchDomainSeparator } from '../../../schemes/batch-settlement/typed-data.js'
import { AgentAuth } from '../../accounts/agent-auth.js'
import { createApprovals, type ApprovalsService } from '../../approvals/approvals.js'
import { createCapEvents } from '../../events/cap-events.js'
import { createAgentChannels } from '../agent-channels.js'
import { AgentEscrow } from '../agent-escrow.js'
import { createAgentPaymentsSweep } from '../agent-payments-sweep.js'
import { createAgentPermit2 } from '../agent-permit2.js'
import { createAgentVouchers } from '../agent-vouchers.js'
import { createChainCancel } from '../chain-cancel.js'
import { createCollectionProofs } from '../collection-proof.js'
import { CustodialKeys } from '../custodial-keys.js'
import { createReservationWriter } from '../insert-batcher.js'
import { createPlatformTerms } from '../platform-terms.js'
import { createSeenChallenges } from '../seen-challenges.js'
import { settledReleaseAt } from '../spend-release.js'
import { createSpendWindows } from '../spend-windows.js'
import { createVoucherLock } from '../voucher-lock.js'
import { WalletBalances } from '../wallet-balances.js'

export interface AgentPaymentsDeps {
  db: Kysely<Database>
  redis: RedisClient
  key(...parts: string[]): string
  config: Pick<
    Readonly<Config>,
    | 'chain'
    | 'masterKey'
    | 'proxyUrl'
    | 'deployment'
    | 'databaseUrl'
    | 'x402'
    | 'deferredEscrowAddress'
    | 'relayerKeys'
    | 'settlement'
    | 'upto'
    | 'allowPrivateUpstreams'
    | 'agentPayments'
    | 'baseUrl'
    | 'batchSettlement'
  >
  chain: PublicClient
  /** injectable for tests of the UTC day/month boundaries */
  now?: () => Date
  /** how long a read on-chain balance is trusted (default 1000 ms) */
  balanceTtlMs?: number
  /** cache agent-key look-ups while LISTENing for changes (default true) */
  cacheAuth?: boolean
  onError?(err: unknown): void
}

export type AgentPaymentsContext = ReturnType<typeof createContext>

export function createContext(deps: AgentPaymentsDeps) {
  const { db, config } = deps
  const now = deps.now ?? (() => new Date())
  const windows = createSpendWindows(deps.redis, deps.key)
  const balances = new WalletBalances(deps.chain, config.chain.usdc.address, deps.balanceTtlMs ?? 1000)
  const proxyOrigin = safeOrigin(config.proxyUrl)
  const approvals: ApprovalsService = createApprovals({
    db,
    config: { masterKey: config.masterKey, baseUrl: config.baseUrl },
    now,
  })
  return {
    ...chainClients(deps),
    db,
    config,
    now,
    windows,
    balances,
    proxyOrigin,
    keys: new CustodialKeys(config.masterKey),
    auth: new AgentAuth(deps),
    terms: payableTerms(config, proxyOrigin),
    channels: createAgentChannels({ db }),
    batchDomain: batchDomainSeparator(config.chain.chainId),
    writer: createReservationWriter(db),
    voucherLock: createVoucherLock(deps.redis, deps.key),
    proofs: createCollectionProofs({ ...deps, proxyOrigin, now }),
    platform: createPlatformTerms({ db, config }),
    approvals,
    seenChallenges: createSeenChallenges({ allowPrivate: config.allowPrivateUpstreams }),
    sweep: createAgentPaymentsSweep({ db, chain: deps.chain, config, windows, now, balanceTtlMs: balances.ttlMs }),
    /** until when a settled payment stays counted in the wallet's unsettled total */
    releaseAt: () => settledReleaseAt(now().getTime(), balances.ttlMs),
    // agent.cap_near / agent.cap_reached webhooks and alerts, written beside the payment (not awaited)
    capEvents: createCapEvents(db, (err) => deps.onError?.(err)),
    /** The validity the platform signs: the challenge's timeout, at most AGENT_PAYMENT_MAX_VALID_SECONDS. */
    validFor: (req: Requirement) => Math.min(req.maxTimeoutSeconds, config.agentPayments.maxValidForSeconds),
  }
}

/** What the agent may pay in: this deployment's chain, USDC, proxy and escrow. */
function payableTerms(config: AgentPaymentsDeps['config'], proxyOrigin: string | undefined) {
  return {
    chainId: config.chain.chainId,
    network: config.chain.network,
    caip2: config.chain.caip2,
    usdc: config.chain.usdc.address.toLowerCase(),
    proxyOrigin,
    escrow: config.deferredEscrowAddress?.toLowerCase(),
    batch: config.batchSettlement.enabled,
  }
}

/** The clients that read or send on chain: vouchers and escrow (when the deployment has one), Permit2, cancellations. */
function chainClients(deps: AgentPaymentsDeps) {
  const { db, config } = deps
  const escrow = config.deferredEscrowAddress
  const relay = {
    redis: deps.redis,
    key: deps.key,
    chain: deps.chain,
    chainId: config.chain.chainId,
    relayerKeys: config.relayerKeys,
    maxFeePerGasWei: config.settlement.maxFeePerGasWei,
  }
  return {
    vouchers: escrow
      ? createAgentVouchers({ db, chain: deps.chain, escrow, chainId: config.chain.chainId })
      : undefined,
    escrows: escrow ? new AgentEscrow({ db, ...relay, escrow }) : undefined,
    permit2: createAgentPermit2(relay),
    cancels: createChainCancel({ ...relay, usdc: config.chain.usdc }),
  }
}

export const noEscrow = () =>
  appError('service_unavailable', { detail: 'this deployment has no deferred escrow (DEFERRED_ESCROW_ADDRESS)' })

export function safeOrigin(u: string): string | undefined {
  try {
    return new URL(u).origin
  } catch {
    return undefined
  }
}
