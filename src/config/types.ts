/** The shape of the parsed environment (src/config.ts's loadConfig), below every module that reads it. */
import type { HandlerAddress } from '../pool/handler-address.js'

export type Deployment = 'production' | 'sandbox'

export interface ChainParams {
  chainId: number
  /** x402 v1 network name */
  network: 'base' | 'base-sepolia'
  /** CAIP-2 id used by x402 v2 */
  caip2: string
  usdc: { address: `0x${string}`; name: string; version: string; decimals: 6 }
}

export interface Config {
  deployment: Deployment
  chain: ChainParams
  apiKeyPrefix: 'sk_live_' | 'sk_test_'
  databaseUrl: string
  /** Postgres schema (search_path); tests give each run its own */
  databaseSchema: string
  /**
   * DATABASE_READ_URL: a read replica (or a pooler in front of them) for the read-only history,
   * exports and marketplace queries; unset: they use DATABASE_URL
   */
  databaseReadUrl: string | undefined
  /**
   * The day partitions of payments and payment_events: how many days ahead the worker creates
   * (LEDGER_PARTITIONS_AHEAD_DAYS), and after how many days it drops old days without archiving
   * them (LEDGER_RETENTION_DAYS; unset: never, archive them with `tollgate archive`)
   */
  ledger: { partitionsAheadDays: number; retentionDays: number | undefined }
  redisUrl: string
  /** prefix for every Redis key and BullMQ queue of this deployment */
  redisPrefix: string
  /** unset: the embedded local chain is started (sandbox only) */
  rpcUrl: string | undefined
  relayerKeys: `0x${string}`[]
  /** receiver of the platform's hosted services */
  receiverAddress: `0x${string}` | undefined
  /**
   * DeferredPaymentEscrow of the `deferred` scheme on this chain (DEFERRED_ESCROW_ADDRESS); sandbox
   * default: where the embedded chain installs it; production: unset until one is deployed
   */
  deferredEscrowAddress: `0x${string}` | undefined
  /**
   * The `upto` scheme (usage-based prices, Permit2 through the x402 upto proxy): offered where
   * `enabled` (UPTO_SCHEME=on|off; default on in sandbox, whose chain has Permit2 and our upto
   * proxy; on a public chain the reference proxy is settled one transaction per payment) and
   * settlement runs through our relayers (each endpoint names one as the witness's facilitator).
   * `llmRatePer1kTokens`: what a hosted language-model endpoint charges per 1,000 tokens the
   * provider reported, in atomic USDC units (UPTO_LLM_RATE_PER_1K_TOKENS, default 2000 = 0.002
   * USDC), capped at the endpoint's price. A proxy trusts a payer's Permit2 allowance it read for
   * at most `allowanceCacheMs` (UPTO_ALLOWANCE_CACHE_MS, default 2000) and at most
   * `allowanceExposure` atomic units of maxima reserved on that read (UPTO_ALLOWANCE_EXPOSURE,
   * default 100000 = 0.1 USDC), whichever comes first: a buyer that revokes its allowance is served
   * at most that much on the old value per proxy process (docs/buyer.md "Seller side").
   */
  upto: { enabled: boolean; llmRatePer1kTokens: bigint; allowanceCacheMs: number; allowanceExposure: bigint }
  /**
   * The x402 `batch-settlement` scheme (channels in the canonical x402BatchSettlement contract):
   * offered where `enabled` (BATCH_SETTLEMENT=on|off; default on wherever TOLLGATE_MASTER_KEY is
   * set, which keeps the platform's receiverAuthorizer key: the contract is at its canonical address
   * on Base, Base Sepolia and the embedded chain) and settlement runs through our relayers (they
   * submit deposits), beside exact on every hosted endpoint of the platform and where a seller enables
   * it. `withdrawDelay`: the channels' timed-withdrawal delay the challenges ask for, in seconds
   * (BATCH_WITHDRAW_DELAY_SECONDS, 900 to 2,592,000, default 900).
   */
  batchSettlement: { enabled: boolean; withdrawDelay: number }
  /**
   * The longest validity the platform signs for an agent wallet (AGENT_PAYMENT_MAX_VALID_SECONDS,
   * default 600): an authorization's validBefore (upto: the Permit2 deadline) is at most this far
   * ahead, whatever the challenge's maxTimeoutSeconds says. What was signed stays counted against
   * the caps at least until then, unless the platform cancels it on chain first.
   */
  agentPayments: { maxValidForSeconds: number }
  /**
   * When the worker collects a seller's deferred vouchers (one collectMany per seller and asset):
   * once the uncollected calls reach `collectThreshold` atomic units (DEFERRED_COLLECT_THRESHOLD) or
   * the oldest is `collectMaxAgeSeconds` old (DEFERRED_COLLECT_MAX_AGE_SECONDS), checked every
   * `collectEveryMs` (DEFERRED_COLLECT_EVERY_MS); a collection left unfinished (a dead worker) is
   * decided from the chain after `stuckSeconds` (DEFERRED_COLLECT_STUCK_SECONDS). The escrow's
   * events (a thaw, a withdrawal) are polled for every `watchEveryMs` (DEFERRED_WATCH_EVERY_MS,
   * default 1000) by each proxy and worker: a thaw is collected at once, not on the next run.
   */
  deferred: {
    collectThreshold: bigint
    collectMaxAgeSeconds: number
    collectEveryMs: number
    stuckSeconds: number
    watchEveryMs: number
  }
  /**
   * When the worker claims `batch-settlement` channels (one claimWithSignature for many channels,
   * then settle per receiver and token): a channel whose unclaimed charge reaches `claimThreshold`
   * atomic units (BATCH_CLAIM_THRESHOLD) or whose oldest unclaimed call is `claimMaxAgeSeconds` old
   * (BATCH_CLAIM_MAX_AGE_SECONDS; sandbox 20, so a call is claimed and settled within 60 s), and at
   * once when its timed withdrawal has started; checked every `claimEveryMs` (BATCH_CLAIM_EVERY_MS).
   * A recorded transaction without a receipt is decided dropped after `stuckSeconds`
   * (BATCH_TX_STUCK_SECONDS) when its nonce was never used.
   */
  batchClaim: {
    claimThreshold: bigint
    claimMaxAgeSeconds: number
    claimEveryMs: number
    stuckSeconds: number
  }
  /** 32-byte key that encrypts custodial wallet keys at rest */
  masterKey: Buffer | undefined
  operatorToken: string | undefined
  /** lets sellers' upstream URLs and the publishing test action reach private/loopback hosts (tests, dev) */
  allowPrivateUpstreams: boolean
  /** signed webhooks and alert emails (docs/api.md, "Webhooks") */
  webhooks: {
    /** how often the worker derives and delivers events */
    tickMs: number
    /** first retry delay; doubles each attempt up to retryMaxMs */
    retryBaseMs: number
    retryMaxMs: number
    /** a delivery still failing this long after its event is given up and its endpoint disabled (3 days) */
    giveUpMs: number
    /** payment events are derived from payment_events rows at least this old (commit-order slack) */
    deriveLagMs: number
    requestTimeoutMs: number
  }
  /** SMTP relay for alert emails (smtp:// or smtps:// URL); none: alerts show in the dashboard only */
  smtpUrl: string | undefined
  emailFrom: string
  /** anyone may create an account (POST /v1/signup, the dashboard's sign-up form); default on sandbox only */
  signup: boolean
  baseUrl: string
  proxyUrl: string
  dashboardUrl: string
  host: string
  webPort: number
  proxyPort: number
  logLevel: string
  /**
   * Fastify's trustProxy: whose X-Forwarded-For sets request.ip (per-IP limits). false: the
   * socket's address; true: every hop; or the load balancers' addresses and CIDRs.
   */
  trustProxy: boolean | string[]
  x402: {
    maxTimeoutSeconds: number
    /** validBefore may be at most this far in the future (bounds unsettled exposure) */
    maxValidForSeconds: number
    maxHeaderBytes: number
    /** worker threads that recover payment signers off the event loop (0: on the main thread) */
    recoveryThreads: number
    /** when recovery goes to those threads: `busy` while the event loop is over 80% busy, `always` for every signature */
    recoveryOffload: 'busy' | 'always'
    /** accept ERC-6492 signatures of smart wallets not deployed yet (settlement deploys them first) */
    counterfactualWallets: boolean
    /** `payment-identifier` (safe retries): how long an id and its stored answer are kept, and the largest answer stored */
    paymentIds: { retentionSeconds: number; answerMaxBytes: number }
  }
  settlement: {
    batchSize: number
    batchWindowMs: number
    mode: 'relayer' | 'facilitator'
    facilitatorUrl: string | undefined
    /** /readyz fails and the worker warns below this relayer ETH balance */ relayerMinEthWei: bigint
    /** cap on maxFeePerGas of relayer transactions, replacements included */ maxFeePerGasWei: bigint
    /** blocks per eth_getLogs request when settlement looks for an authorization's transaction */ logChunkBlocks: number
  }
  handlers: {
    timeoutMs: number
    /** handler processes of the compute lane (one call at a time each), per pool */
    maxThreads: number
    /** V8 heap limit of each handler process */
    memoryMb: number
    maxQueue: number
    /** handler processes of the I/O lane, per pool */
    ioThreads: number
    ioConcurrency: number
    /** resident memory past which a handler process is stopped */
    rssMb: number
    /** the `handlers` role's addresses (HANDLERS_URL); empty: the proxy starts its own handler processes */
    url: HandlerAddress[]
    /** where the `handlers` role listens (HANDLERS_LISTEN, else a single HANDLERS_URL) */
    listen: HandlerAddress | undefined
  }
  /** settings of hosted handlers that call outside services, by variable name (their `ctx.providers`) */
  handlerProviders: Record<string, string | undefined>
}
