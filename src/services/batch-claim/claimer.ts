/**
 * Claim and settle of `batch-settlement` channels (worker role). Each run:
 *
 * 1. decides the recorded transactions a previous run left open (`transactions.ts` `resolveOpen`);
 * 2. mirrors the chain state of every watched channel (balance, totalClaimed, a pending timed
 *    withdrawal, refundNonce) into `batch_channels`, and a pending withdrawal into the proxy's Redis
 *    copy of the channel, which then refuses its vouchers (no call is served that the claims of the
 *    runs before `finalizeWithdraw` would miss);
 * 3. claims the due channels (`channel-rows.ts` `dueChannels`: threshold, age, or a withdrawal under
 *    way — those at once) in one `claimWithSignature` per 100 channels, signed by the platform's
 *    receiverAuthorizer key, each channel's cumulative target being what was charged (never above its
 *    voucher nor its balance);
 * 4. settles every (receiver, token) with claimed and unsettled funds in the contract.
 *
 * Claims are cumulative on chain, and the books follow the chain (total_claimed is read back, the
 * recorded amount is the receipt's `Claimed` sum), so a worker killed anywhere and run again claims
 * nothing twice and loses nothing. Channels of an open claim transaction wait for its decision.
 */
import type { Logger } from 'pino'
import type { Address, Hex, LocalAccount } from 'viem'
import type { CoreDeps as Deps } from '../../core-deps.js'
import { BATCH_SETTLEMENT_ADDRESS } from '../../chain/batch-settlement/addresses.js'
import { batchSettlementAbi } from '../../chain/batch-settlement/abi.js'
import { signClaimBatch } from '../../chain/batch-settlement/authorizer.js'
import {
  claimEntries,
  encodeClaimWithSignature,
  encodeSettle,
  type VoucherClaimInput,
} from '../../chain/batch-settlement/calldata.js'
import { configOfRow, readChannels } from '../../chain/batch-settlement/channel.js'
import { MULTICALL3_ADDRESS } from '../../chain/multicall3-abi.js'
import { requireMasterKey } from '../../secrets/wallet-crypto.js'
import { ensurePlatformKey } from '../wallets/platform-key.js'
import { createRelayerLock, relayersFromKeys } from '../../chain/relayer.js'
import { ChannelState } from '../../schemes/batch-settlement/channel-state.js'
import {
  chainDiffers,
  claimedPairs,
  dueChannels,
  mirrorChain,
  watchedChannels,
  type ChannelRow,
} from './channel-rows.js'
import type { BatchTxHooks } from './test-hooks.js'
import { resolveOpen, sendRecorded, type DecidedTx, type TxContext } from './transactions.js'

/** Channels per claimWithSignature, and per Multicall3 read. */
const MAX_CLAIMS = 100
const READ_CHUNK = 200
const MAX_WATCHED = 5_000

export interface ClaimStats {
  claims: number
  channelsClaimed: number
  claimed: bigint
  settles: number
  settled: bigint
  withdrawing: number
}

type Log = Pick<Logger, 'info' | 'warn' | 'error'>

export class BatchClaimer {
  readonly #deps: Deps
  readonly #log: Log
  readonly #ctx: TxContext
  #authorizer: LocalAccount | undefined
  /** the proxy's Redis copies of the channels (src/schemes/batch-settlement/channel-state.ts) */
  readonly #channels: ChannelState
  #warnedNoKey = false

  constructor(deps: Deps, opts: { log: Log; hooks?: BatchTxHooks; contract?: Address }) {
    this.#deps = deps
    this.#log = opts.log
    this.#channels = new ChannelState(deps)
    this.#ctx = {
      db: deps.db,
      chain: deps.chain,
      chainId: deps.config.chain.chainId,
      network: deps.config.chain.caip2,
      contract: (opts.contract ?? BATCH_SETTLEMENT_ADDRESS).toLowerCase() as Address,
      relayers: relayersFromKeys(deps.config.relayerKeys),
      lock: createRelayerLock(deps.redis, deps.key),
      maxFeePerGasWei: deps.config.settlement.maxFeePerGasWei,
      stuckSeconds: deps.config.batchClaim.stuckSeconds,
      log: opts.log,
      hooks: opts.hooks ?? {},
    }
  }

  async #authorizerKey(): Promise<LocalAccount> {
    this.#authorizer ??= (
      await ensurePlatformKey(this.#deps.db, requireMasterKey(this.#deps.config), 'batch-receiver-authorizer')
    ).signer
    return this.#authorizer
  }

  /** One run (see the module comment). `force` claims every channel with an unclaimed charge. */
  async runOnce(opts: { force?: boolean } = {}): Promise<ClaimStats> {
    const stats: ClaimStats = { claims: 0, channelsClaimed: 0, claimed: 0n, settles: 0, settled: 0n, withdrawing: 0 }
    await this.#afterDecided(await resolveOpen(this.#ctx))
    stats.withdrawing = await this.#syncWatched()
    await this.#claimDue(opts.force ?? false, stats)
    await this.#settleAll(stats)
    return stats
  }

  /** Mirrors every watched channel's chain state; returns how many have a withdrawal pending. */
  async #syncWatched(): Promise<number> {
    const rows = await watchedChannels(this.#ctx.db, this.#ctx, MAX_WATCHED)
    let withdrawing = 0
    for (let i = 0; i < rows.length; i += READ_CHUNK) {
      const chunk = rows.slice(i, i + READ_CHUNK)
      const ids = chunk.map((r) => r.channel_id as Hex)
      const states = await readChannels(this.#ctx.chain, ids, this.#ctx.contract)
      for (const [j, state] of states.entries()) {
        const row = chunk[j]!
        if (state.withdrawRequestedAt > 0) {
          withdrawing++
          if (!row.withdraw_requested_at)
            this.#log.warn({ channel: ids[j] }, 'batch-settlement: channel withdrawal started; claiming it now')
        }
        // written only when the chain moved: an idle channel costs a read per run, no write
        if (chainDiffers(row, state)) await mirrorChain(this.#ctx.db, ids[j]!, state)
        // the proxy's copy too, every run while one is pending (a copy loaded from the row just before
        // this run's write would miss it): from here on the channel takes no more calls (reserve.ts)
        if (state.withdrawRequestedAt > 0 || row.withdraw_requested_at)
          await this.#channels.withdrawal(ids[j]!, state.withdrawRequestedAt)
      }
    }
    return withdrawing
  }

  /** After decided claims (and refunds a proxy left undecided): their channels' chain state read back into the books. */
  async #afterDecided(decided: DecidedTx[]): Promise<void> {
    const ids = decided
      .filter((d) => d.kind === 'claim' || d.kind === 'refund')
      .flatMap((d) => (Array.isArray(d.channels) ? (d.channels as Array<{ channelId: Hex }>) : []))
      .map((c) => c.channelId)
    for (let i = 0; i < ids.length; i += READ_CHUNK) {
      const chunk = ids.slice(i, i + READ_CHUNK)
      const states = await readChannels(this.#ctx.chain, chunk, this.#ctx.contract)
      for (const [j, state] of states.entries()) await mirrorChain(this.#ctx.db, chunk[j]!, state)
    }
  }

  /** Channels named by a claim transaction not decided yet: they wait for it. */
  async #inFlight(): Promise<Set<string>> {
    const open = await this.#ctx.db
      .selectFrom('batch_transactions')
      .select('channels')
      .where('status', 'in', ['pending', 'sent'])
      .where('kind', '=', 'claim')
      .where('network', '=', this.#ctx.network)
      .execute()
    const ids = open.flatMap((r) => (Array.isArray(r.channels) ? (r.channels as Array<{ channelId: string }>) : []))
    return new Set(ids.map((c) => c.channelId.toLowerCase()))
  }

  async #claimDue(force: boolean, stats: ClaimStats): Promise<void> {
    if (!this.#deps.config.masterKey) {
      // the receiverAuthorizer key is kept under the master key: no key, no claims (settle still runs)
      if (!this.#warnedNoKey)
        this.#log.warn('batch-settlement: TOLLGATE_MASTER_KEY is not set; channels are not claimed')
      this.#warnedNoKey = true
      return
    }
    const authorizer = await this.#authorizerKey()
    const { claimThreshold, claimMaxAgeSeconds } = this.#deps.config.batchClaim
    const busy = await this.#inFlight()
    const due = (
      await dueChannels(
        this.#ctx.db,
        { ...this.#ctx, authorizer: authorizer.address },
        { threshold: claimThreshold, maxAgeSeconds: claimMaxAgeSeconds, force },
        MAX_CLAIMS * 10,
      )
    ).filter((r) => !busy.has(r.channel_id))
    const claims = due.map(claimOf).filter((c): c is PlannedClaim => c !== null)
    for (let i = 0; i < claims.length; i += MAX_CLAIMS) {
      const batch = await this.#claimable(claims.slice(i, i + MAX_CLAIMS))
      if (batch.length === 0) continue
      const decided = await this.#sendClaim(batch, authorizer)
      if (decided && decided !== 'unresolved') {
        await this.#afterDecided([decided])
        if (decided.status === 'confirmed') {
          stats.claims++
          stats.channelsClaimed += batch.length
          stats.claimed += decided.amount
        }
      }
    }
  }

  async #sendClaim(batch: PlannedClaim[], authorizer: LocalAccount) {
    const ids = batch.map((c) => c.channelId)
    const signature = await signClaimBatch(authorizer, this.#ctx.chainId, claimEntries(batch, ids), this.#ctx.contract)
    const channels = batch.map((c) => ({
      channelId: c.channelId,
      maxClaimableAmount: c.maxClaimableAmount.toString(),
      totalClaimed: c.totalClaimed.toString(),
    }))
    const planned = batch.reduce((s, c) => s + (c.totalClaimed - c.claimedBefore), 0n)
    const r = await sendRecorded(this.#ctx, {
      kind: 'claim',
      data: encodeClaimWithSignature(batch, signature),
      channels,
      plannedAmount: planned,
    })
    if (r === null) this.#log.warn({ channels: batch.length }, 'batch-settlement: no relayer free to claim; next run')
    else if (r !== 'unresolved' && r.status === 'reverted')
      this.#log.error({ tx: r.hash }, 'batch-settlement claim reverted')
    return r
  }

  /**
   * The claims of a batch that the contract accepts now: the whole batch simulated, and when it
   * would revert each claim alone, leaving out (and logging) those that fail — one bad voucher must
   * not hold up the others.
   */
  async #claimable(batch: PlannedClaim[]): Promise<PlannedClaim[]> {
    const authorizer = await this.#authorizerKey()
    const simulate = async (claims: PlannedClaim[]) => {
      const ids = claims.map((c) => c.channelId)
      const sig = await signClaimBatch(authorizer, this.#ctx.chainId, claimEntries(claims, ids), this.#ctx.contract)
      const account = this.#ctx.relayers[0]?.address
      await this.#ctx.chain.call({ account, to: this.#ctx.contract, data: encodeClaimWithSignature(claims, sig) })
    }
    try {
      await simulate(batch)
      return batch
    } catch {
      const ok: PlannedClaim[] = []
      for (const c of batch) {
        try {
          await simulate([c])
          ok.push(c)
        } catch (err) {
          this.#log.error(
            { channel: c.channelId, err: (err as Error).message.split('\n')[0] },
            'batch-settlement: a channel claim would revert; left out',
          )
        }
      }
      return ok
    }
  }

  /** settle(receiver, token) for every pair with claimed and unsettled funds, one transaction each. */
  async #settleAll(stats: ClaimStats): Promise<void> {
    const pairs = await claimedPairs(this.#ctx.db, this.#ctx)
    if (pairs.length === 0) return
    const open = await this.#ctx.db
      .selectFrom('batch_transactions')
      .select('channels')
      .where('status', 'in', ['pending', 'sent'])
      .where('kind', '=', 'settle')
      .where('network', '=', this.#ctx.network)
      .execute()
    const busy = new Set(open.map((r) => JSON.stringify(r.channels)))
    const states = await this.#ctx.chain.multicall({
      allowFailure: false,
      multicallAddress: MULTICALL3_ADDRESS,
      contracts: pairs.map((p) => ({
        address: this.#ctx.contract,
        abi: batchSettlementAbi,
        functionName: 'receivers' as const,
        args: [p.receiver as Address, p.token as Address] as const,
      })),
    })
    for (const [i, p] of pairs.entries()) {
      const [claimed, settled] = states[i] as readonly [bigint, bigint]
      const key = { receiver: p.receiver, token: p.token }
      if (claimed <= settled || busy.has(JSON.stringify(key))) continue
      const r = await sendRecorded(this.#ctx, {
        kind: 'settle',
        data: encodeSettle(p.receiver as Address, p.token as Address),
        channels: key,
        plannedAmount: claimed - settled,
      })
      if (r && r !== 'unresolved' && r.status === 'confirmed') {
        stats.settles++
        stats.settled += r.amount
      }
    }
  }
}

interface PlannedClaim extends VoucherClaimInput {
  channelId: Hex
  claimedBefore: bigint
}

/** A due channel's claim: cumulative target = charged, capped by its voucher and its balance. */
function claimOf(r: ChannelRow): PlannedClaim | null {
  const charged = BigInt(r.charged)
  const max = BigInt(r.signed_max_claimable)
  const balance = BigInt(r.balance)
  let target = charged < max ? charged : max
  if (balance > 0n && target > balance) target = balance
  const before = BigInt(r.total_claimed)
  if (target <= before || !r.signature) return null
  const config = configOfRow(r)
  return {
    channelId: r.channel_id as Hex,
    config,
    maxClaimableAmount: max,
    signature: r.signature as Hex,
    totalClaimed: target,
    claimedBefore: before,
  }
}
