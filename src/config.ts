/**
 * The whole environment, parsed once at process start into a frozen object.
 * Every problem is collected, so a bad deployment learns everything wrong in one go.
 *
 * @example
 *   const config = loadConfig(process.env) // throws ConfigError listing every invalid variable
 */

import { isIP } from 'node:net'
import { DEVNET_DEFERRED_ESCROW_ADDRESS } from './chain/deferred-escrow-address.js'
import { PROVIDER_SETTINGS } from './handler-providers.js'
import { parseHandlerAddress, type HandlerAddress } from './pool/handler-address.js'
import { MAX_HANDLER_TIMEOUT_MS } from './pool/handler-contract.js'
import { parseRedisUrl } from './redis-url.js'
import { minValidForSeconds } from './x402/verify-requirements.js'

/** the validity a payment for the slowest possible hosted call needs (150 s) */
const LEAST_VALIDITY_SECONDS = minValidForSeconds(MAX_HANDLER_TIMEOUT_MS / 1000)

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
   * offered where `enabled` (BATCH_SETTLEMENT=on|off; default on in sandbox, whose chain has the
   * contract at its canonical address) and settlement runs through our relayers (they submit
   * deposits), beside exact on every hosted endpoint of the platform and where a seller enables
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

/** Aave v3 Pool on Base mainnet: wallet-behavior-score-query's default in production. */
export const AAVE_V3_POOL_BASE = '0xA238Dd80C259a72e81d7e4664a9801593F98d1c5'

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

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
    this.name = 'ConfigError'
  }
}

type Env = Record<string, string | undefined>

/** Reads one variable at a time and remembers every problem it meets. */
function reader(env: Env) {
  const problems: string[] = []
  const raw = (name: string) => {
    const v = env[name]
    return v === undefined || v.trim() === '' ? undefined : v.trim()
  }
  return {
    problems,
    str(name: string, fallback?: string): string {
      return raw(name) ?? fallback ?? ''
    },
    optional(name: string): string | undefined {
      return raw(name)
    },
    oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T {
      const v = raw(name)
      if (v === undefined) return fallback
      if (!(values as readonly string[]).includes(v)) {
        problems.push(`${name}: expected one of ${values.join(' | ')}, got "${v}"`)
        return fallback
      }
      return v as T
    },
    int(name: string, fallback: number, min: number, max: number): number {
      const v = raw(name)
      if (v === undefined) return fallback
      const n = Number(v)
      if (!Number.isInteger(n) || n < min || n > max) {
        problems.push(`${name}: expected an integer from ${min} to ${max}, got "${v}"`)
        return fallback
      }
      return n
    },
    url(name: string, fallback: string | undefined, protocols: string[], hint = ''): string | undefined {
      const v = raw(name) ?? fallback
      if (v === undefined) return undefined
      try {
        const u = new URL(v)
        if (!protocols.includes(u.protocol)) throw new Error('protocol')
        return v.replace(/\/+$/, '')
      } catch {
        problems.push(`${name}: expected a ${protocols.join(' or ')} URL, got "${redactUrl(v)}"${hint}`)
        return fallback
      }
    },
    privateKeys(name: string): `0x${string}`[] {
      const v = raw(name)
      if (v === undefined) return []
      const keys = v
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean)
      const bad = keys.findIndex((k) => !/^0x[0-9a-fA-F]{64}$/.test(k))
      if (bad >= 0) {
        problems.push(
          `${name}: expected comma-separated 0x-prefixed 32-byte hex private keys (entry ${bad + 1} is not one)`,
        )
        return []
      }
      return keys as `0x${string}`[]
    },
    address(name: string): `0x${string}` | undefined {
      const v = raw(name)
      if (v === undefined) return undefined
      if (!/^0x[0-9a-fA-F]{40}$/.test(v)) {
        problems.push(`${name}: expected a 0x-prefixed 20-byte hex address, got "${v}"`)
        return undefined
      }
      return v as `0x${string}`
    },
    /** `true`/`false`, or comma-separated addresses, CIDRs and proxy-addr's names (loopback, linklocal, uniquelocal) */
    trustProxy(name: string): boolean | string[] {
      const v = raw(name)
      if (v === undefined || v === 'false') return false
      if (v === 'true') return true
      if (/^\d+$/.test(v)) {
        // Fastify 5.12.1 made a hop count trust nothing (it cannot check the peer is a proxy): refuse rather than ignore it
        problems.push(
          `${name}: a hop count ("${v}") is not supported by Fastify since 5.12.1; name the load balancers' addresses or CIDRs (or true)`,
        )
        return false
      }
      const list = v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean)
      const bad = list.find((x) => {
        if (['loopback', 'linklocal', 'uniquelocal'].includes(x)) return false
        const [addr, bits, extra] = x.split('/')
        if (extra !== undefined || !isIP(addr!)) return true
        if (bits === undefined) return false
        const max = isIP(addr!) === 4 ? 32 : 128
        return !/^\d{1,3}$/.test(bits) || Number(bits) > max
      })
      if (bad !== undefined || list.length === 0) {
        problems.push(`${name}: expected true, false, or comma-separated IP addresses or CIDRs, got "${v}"`)
        return false
      }
      return list
    },
    key32(name: string): Buffer | undefined {
      const v = raw(name)
      if (v === undefined) return undefined
      const buf = /^(0x)?[0-9a-fA-F]{64}$/.test(v) ? Buffer.from(v.replace(/^0x/, ''), 'hex') : Buffer.from(v, 'base64')
      if (buf.length !== 32) {
        problems.push(`${name}: expected 32 bytes as 64 hex characters or base64`)
        return undefined
      }
      return buf
    },
  }
}

/** Never print credentials that may sit in a connection URL. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]*):([^@/]+)@/, '//$1:***@')
}

/** Parse and validate the environment. Throws ConfigError listing every problem. */
export function loadConfig(env: Env = process.env): Readonly<Config> {
  const r = reader(env)
  const deployment = r.oneOf('TOLLGATE_DEPLOYMENT', ['production', 'sandbox'] as const, 'sandbox')
  const chain = CHAINS[deployment]
  const chainIdOverride = r.optional('TOLLGATE_CHAIN_ID')
  if (chainIdOverride !== undefined && Number(chainIdOverride) !== chain.chainId) {
    r.problems.push(
      `TOLLGATE_CHAIN_ID: the ${deployment} deployment settles on chain ${chain.chainId} (${chain.network}), got "${chainIdOverride}"`,
    )
  }
  const rpcUrl = r.url('RPC_URL', undefined, ['http:', 'https:'])
  // one Redis (redis://, rediss://) or a Redis Cluster (redis+cluster://host:port,host:port)
  const defaultRedisUrl = 'redis://127.0.0.1:6379'
  let redisUrl = (r.optional('REDIS_URL') ?? defaultRedisUrl).replace(/\/+$/, '')
  try {
    parseRedisUrl(redisUrl)
  } catch (err) {
    r.problems.push(`REDIS_URL: ${(err as Error).message}, got "${redactUrl(redisUrl)}"`)
    redisUrl = defaultRedisUrl
  }
  // keys put their hash tag (`{payer}`) after the prefix: a brace in it would become the tag
  const redisPrefix = r.str('REDIS_PREFIX', `tollgate:${deployment}`)
  if (/[{}]/.test(redisPrefix))
    r.problems.push(`REDIS_PREFIX: must not contain { or } (keys hash-tag their own parts), got "${redisPrefix}"`)
  if (deployment === 'production' && rpcUrl === undefined) {
    r.problems.push('RPC_URL: production needs a Base mainnet RPC URL; the embedded local chain is for sandbox only')
  }
  const webPort = r.int('WEB_PORT', r.int('PORT', 4020, 0, 65535), 0, 65535)
  const proxyPort = r.int('PROXY_PORT', 4021, 0, 65535)
  const baseUrl = r.url('BASE_URL', `http://localhost:${webPort}`, ['http:', 'https:'])!
  const proxyUrl = r.url('PROXY_URL', `http://localhost:${proxyPort}`, ['http:', 'https:'])!
  const dashboardUrl = r.url('DASHBOARD_URL', `${baseUrl}/dashboard`, ['http:', 'https:'])!
  const relayerKeys = r.privateKeys('RELAYER_PRIVATE_KEYS')
  const settlementMode = r.oneOf('SETTLEMENT_MODE', ['relayer', 'facilitator'] as const, 'relayer')
  const facilitatorUrl = r.url('FACILITATOR_URL', undefined, ['http:', 'https:'])
  if (settlementMode === 'facilitator' && facilitatorUrl === undefined) {
    r.problems.push('FACILITATOR_URL: required when SETTLEMENT_MODE=facilitator')
  }
  const masterKey = r.key32('TOLLGATE_MASTER_KEY')
  const receiverAddress = r.address('TOLLGATE_RECEIVER_ADDRESS')
  if (deployment === 'production') {
    if (settlementMode === 'relayer' && relayerKeys.length === 0)
      r.problems.push('RELAYER_PRIVATE_KEYS: production needs at least one relayer key')
    if (masterKey === undefined)
      r.problems.push('TOLLGATE_MASTER_KEY: production needs a 32-byte master key for wallet encryption')
    if (receiverAddress === undefined)
      r.problems.push('TOLLGATE_RECEIVER_ADDRESS: production needs the receiver of the hosted services')
  }
  const schema = r.str('DATABASE_SCHEMA', 'public')
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema))
    r.problems.push(`DATABASE_SCHEMA: expected a lower-case SQL identifier, got "${schema}"`)
  // clients sign maxTimeoutSeconds of validity, and the proxy takes only payments that outlive the
  // endpoint's call and its settlement (up to LEAST_VALIDITY_SECONDS for the slowest endpoints)
  const maxTimeoutSeconds = r.int('X402_MAX_TIMEOUT_SECONDS', 300, LEAST_VALIDITY_SECONDS, 3600)
  const handlersUrl = handlerAddresses(r, 'HANDLERS_URL')
  const handlersListen = handlerAddresses(r, 'HANDLERS_LISTEN')
  if (handlersListen.length > 1) r.problems.push('HANDLERS_LISTEN: one address, the one this handlers role listens on')
  const walletScoreRpcUrl = r.url('WALLET_SCORE_RPC_URL', undefined, ['http:', 'https:'])
  // the default pool only fits the platform's own RPC (Base mainnet in production)
  const walletScorePool =
    r.address('WALLET_SCORE_AAVE_POOL') ??
    (deployment === 'production' && walletScoreRpcUrl === undefined ? AAVE_V3_POOL_BASE : undefined)

  const config: Config = {
    deployment,
    chain,
    apiKeyPrefix: deployment === 'production' ? 'sk_live_' : 'sk_test_',
    // `postgres://user@/db?host=/socket` (credentials, no host) is not a URL; the host-less form is
    databaseUrl: r.url(
      'DATABASE_URL',
      'postgres://postgres@127.0.0.1:5432/tollgate',
      ['postgres:', 'postgresql:'],
      ' (for a Unix socket write postgres:///<database>?host=<socket dir>&user=<user>)',
    )!,
    databaseSchema: schema,
    databaseReadUrl: r.url('DATABASE_READ_URL', undefined, ['postgres:', 'postgresql:']),
    ledger: {
      partitionsAheadDays: r.int('LEDGER_PARTITIONS_AHEAD_DAYS', 7, 1, 90),
      retentionDays:
        r.optional('LEDGER_RETENTION_DAYS') === undefined ? undefined : r.int('LEDGER_RETENTION_DAYS', 0, 2, 36500),
    },
    redisUrl,
    redisPrefix,
    rpcUrl,
    relayerKeys,
    receiverAddress,
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
        r.oneOf('BATCH_SETTLEMENT', ['on', 'off'] as const, deployment === 'sandbox' ? 'on' : 'off') === 'on' &&
        settlementMode === 'relayer',
      withdrawDelay: r.int('BATCH_WITHDRAW_DELAY_SECONDS', 900, 900, 2_592_000),
    },
    agentPayments: {
      maxValidForSeconds: r.int('AGENT_PAYMENT_MAX_VALID_SECONDS', 600, LEAST_VALIDITY_SECONDS, 3600),
    },
    masterKey,
    operatorToken: r.optional('TOLLGATE_OPERATOR_TOKEN'),
    allowPrivateUpstreams: r.oneOf('TOLLGATE_ALLOW_PRIVATE_UPSTREAMS', ['true', 'false'] as const, 'false') === 'true',
    webhooks: {
      tickMs: r.int('WEBHOOK_TICK_MS', 1000, 50, 60_000),
      retryBaseMs: r.int('WEBHOOK_RETRY_BASE_MS', 30_000, 10, 3_600_000),
      retryMaxMs: r.int('WEBHOOK_RETRY_MAX_MS', 6 * 3_600_000, 10, 86_400_000),
      giveUpMs: r.int('WEBHOOK_GIVE_UP_MS', 3 * 86_400_000, 100, 30 * 86_400_000),
      deriveLagMs: r.int('WEBHOOK_DERIVE_LAG_MS', 5000, 0, 600_000),
      requestTimeoutMs: r.int('WEBHOOK_REQUEST_TIMEOUT_MS', 10_000, 100, 60_000),
    },
    smtpUrl: r.optional('TOLLGATE_SMTP_URL'),
    emailFrom: r.str('TOLLGATE_EMAIL_FROM', 'Tollgate <alerts@tollgate.invalid>'),
    signup:
      r.oneOf('TOLLGATE_SIGNUP', ['open', 'closed'] as const, deployment === 'sandbox' ? 'open' : 'closed') === 'open',
    baseUrl,
    proxyUrl,
    dashboardUrl,
    host: r.str('HOST', '127.0.0.1'),
    webPort,
    proxyPort,
    trustProxy: r.trustProxy('TRUST_PROXY'),
    logLevel: r.oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    x402: {
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
    },
    deferred: {
      collectThreshold: /^\d{1,30}$/.test(r.str('DEFERRED_COLLECT_THRESHOLD', '1000000'))
        ? BigInt(r.str('DEFERRED_COLLECT_THRESHOLD', '1000000'))
        : (r.problems.push('DEFERRED_COLLECT_THRESHOLD: expected an integer amount of atomic units'), 1_000_000n),
      collectMaxAgeSeconds: r.int('DEFERRED_COLLECT_MAX_AGE_SECONDS', 3600, 0, 30 * 86400),
      collectEveryMs: r.int('DEFERRED_COLLECT_EVERY_MS', 30_000, 100, 3_600_000),
      stuckSeconds: r.int('DEFERRED_COLLECT_STUCK_SECONDS', 120, 1, 86400),
      watchEveryMs: r.int('DEFERRED_WATCH_EVERY_MS', 1000, 50, 60_000),
    },
    batchClaim: batchClaimConfig(r, deployment),
    settlement: {
      batchSize: r.int('SETTLEMENT_BATCH_SIZE', 200, 1, 500),
      batchWindowMs: r.int('SETTLEMENT_BATCH_WINDOW_MS', 500, 10, 60000),
      mode: settlementMode,
      facilitatorUrl,
      maxFeePerGasWei: BigInt(r.int('SETTLEMENT_MAX_FEE_GWEI', 100, 1, 100000)) * 1_000_000_000n,
      logChunkBlocks: r.int('SETTLEMENT_LOG_CHUNK_BLOCKS', 2_000, 1, 1_000_000),
      relayerMinEthWei: /^\d{1,30}$/.test(r.str('RELAYER_MIN_ETH_WEI', '5000000000000000'))
        ? BigInt(r.str('RELAYER_MIN_ETH_WEI', '5000000000000000'))
        : (r.problems.push('RELAYER_MIN_ETH_WEI: expected an integer amount of wei'), 5_000_000_000_000_000n),
    },
    handlers: {
      timeoutMs: r.int('HANDLER_TIMEOUT_MS', 10000, 100, 120000),
      maxThreads: r.int('HANDLER_MAX_THREADS', 2, 1, 64),
      memoryMb: r.int('HANDLER_MEMORY_MB', 256, 32, 4096),
      maxQueue: r.int('HANDLER_MAX_QUEUE', 512, 1, 100000),
      ioThreads: r.int('HANDLER_IO_THREADS', 1, 1, 64),
      ioConcurrency: r.int('HANDLER_IO_CONCURRENCY', 32, 1, 1000),
      rssMb: r.int('HANDLER_RSS_MB', 1536, 64, 65536),
      url: handlersUrl,
      listen: handlersListen[0] ?? (handlersUrl.length === 1 ? handlersUrl[0] : undefined),
    },
    handlerProviders: {
      WALLET_SCORE_RPC_URL: walletScoreRpcUrl ?? rpcUrl,
      WALLET_SCORE_AAVE_POOL: walletScorePool,
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
    },
  }
  if (r.problems.length > 0) throw new ConfigError(r.problems)
  return deepFreeze(config)
}

/** A comma-separated list of `unix:/path` and `tcp://host:port` addresses (empty when unset). */
/** The batch-settlement claim worker's settings (Config.batchClaim). */
function batchClaimConfig(r: ReturnType<typeof reader>, deployment: Deployment): Config['batchClaim'] {
  const threshold = r.str('BATCH_CLAIM_THRESHOLD', '10000000')
  return {
    claimThreshold: /^\d{1,30}$/.test(threshold)
      ? BigInt(threshold)
      : (r.problems.push('BATCH_CLAIM_THRESHOLD: expected an integer amount of atomic units'), 10_000_000n),
    claimMaxAgeSeconds: r.int('BATCH_CLAIM_MAX_AGE_SECONDS', deployment === 'sandbox' ? 20 : 3600, 0, 30 * 86400),
    claimEveryMs: r.int('BATCH_CLAIM_EVERY_MS', deployment === 'sandbox' ? 5_000 : 30_000, 100, 3_600_000),
    stuckSeconds: r.int('BATCH_TX_STUCK_SECONDS', 60, 1, 86400),
  }
}

function handlerAddresses(r: ReturnType<typeof reader>, name: string): HandlerAddress[] {
  const out: HandlerAddress[] = []
  for (const item of (r.optional(name) ?? '').split(',').filter((x) => x.trim())) {
    const a = parseHandlerAddress(item)
    if (typeof a === 'string') r.problems.push(`${name}: ${a}`)
    else out.push(a)
  }
  return out
}

function deepFreeze<T>(o: T): Readonly<T> {
  if (o && typeof o === 'object' && !Buffer.isBuffer(o)) {
    for (const v of Object.values(o)) deepFreeze(v)
    Object.freeze(o)
  }
  return o
}
