/**
 * Collection of the `deferred` scheme (worker role): the vouchers of a seller's served deferred
 * payments are sent to the escrow in one `collectMany` once the seller is due — its uncollected
 * calls reach the threshold, or the oldest reaches the age (config.deferred) — and each payment is
 * then decided from the chain.
 *
 * The chain is the record: the escrow keeps, per voucher id, what it paid out
 * (`getVoucherCollected`). A payment is `settled` once that covers its voucher's aggregate, and goes
 * back to `served` otherwise (the escrow was short: partial collection, the rest later; or the
 * transaction failed). Nothing is kept only in this process: a worker killed mid-collection leaves
 * `settling` payments, which the next run decides from the chain the same way once they are
 * `stuckSeconds` old — whether the transaction was mined or not.
 *
 * A buyer that thaws can withdraw at the thaw's end what no voucher was collected from: its seller
 * is collected as soon as the thaw is seen (the escrow's events, `watchThaws`; and each run reads
 * the thaw state of buyers with served calls), and again within a poll of any call served during the
 * thaw. A served call whose voucher the escrow can no longer pay (its account is empty: withdrawn,
 * or taken by a collection elsewhere) is `failed` with reason `uncollectable`, which the seller sees
 * in its transactions and payment events, and the buyer is blocked as after a failed settlement.
 */
import { encodeFunctionData, type Address, type Hex, type PublicClient } from 'viem'
import type { Logger } from 'pino'
import type { Kysely } from 'kysely'
import { sql } from 'kysely'
import type { CoreDeps as Deps } from '../../core-deps.js'
import type { Database, Payment } from '../../db/database.js'
import { claimDeferred, claimDeferredVoucher, transition } from '../../ledger/transitions.js'
import { MULTICALL3_ADDRESS } from '../../chain/multicall3-abi.js'
import { deferredEscrowAbi } from '../../schemes/deferred/escrow-abi.js'
import type { DeferredVoucher } from '../../schemes/deferred/typed-data.js'
import { createVoucherHeads, tupleOfRow, type VoucherHeads } from '../../schemes/deferred/voucher-heads.js'
import { voucherOfRow } from '../../schemes/deferred/voucher-store.js'
import { watchEscrowAccounts, type EscrowAccountEvent } from '../../schemes/deferred/escrow-watch.js'
import { createPayerCredit, type PayerCredit } from '../../ledger/payer-credit.js'
import { createRelayerLock, relayersFromKeys, type Relayer } from '../../chain/relayer.js'
import { relayerCall } from '../../chain/relayer-call.js'
import type { DeferredCollectHooks } from './test-hooks.js'

/** Vouchers per collectMany transaction (and payments claimed per seller and run). */
const MAX_VOUCHERS = 100
const MAX_PAYMENTS = 5_000
const RECEIPT_TIMEOUT_MS = 30_000
/** A thaw is followed this long past its end (a withdrawal's block may come a little later). */
const THAW_FOLLOW_MARGIN_S = 60n

/** The failure reason of a served call whose voucher the escrow can no longer pay. */
const UNCOLLECTABLE = 'uncollectable'

export interface CollectStats {
  /** collectMany transactions mined */
  transactions: number
  settled: number
  /** payments back to `served` (escrow short, failed or nothing collectable yet) */
  requeued: number
  /** payments `failed: uncollectable` (the buyer's escrow account is empty) */
  uncollectable: number
}

export interface VoucherRow {
  payment_id: string
  escrow: string
  buyer: string
  seller: string
  asset: string
  voucher_id: string
  nonce: string
  value_aggregate: string
  timestamp: string
  signature: string
}

type Log = Pick<Logger, 'info' | 'warn' | 'error'>

const voucherKey = (v: Pick<VoucherRow, 'escrow' | 'buyer' | 'seller' | 'asset' | 'voucher_id'>) =>
  `${v.escrow}:${v.buyer}:${v.seller}:${v.asset}:${v.voucher_id}`
const accountKey = (buyer: string, seller: string, asset: string) => `${buyer}:${seller}:${asset}`
const emptyStats = (): CollectStats => ({ transactions: 0, settled: 0, requeued: 0, uncollectable: 0 })

export class DeferredCollector {
  readonly #db: Kysely<Database>
  /** the proxy's cached voucher heads: their `collected` follows each collection */
  readonly #heads: VoucherHeads
  readonly #chain: PublicClient
  readonly #config: Deps['config']
  readonly #escrow: Address
  readonly #relayers: Relayer[]
  readonly #lock: ReturnType<typeof createRelayerLock>
  readonly #log: Log
  readonly #hooks: DeferredCollectHooks
  readonly #credit: PayerCredit
  /** accounts seen thawing (buyer:seller:asset) → when their thaw ends (unix s) */
  readonly #thawingAccounts = new Map<string, { buyer: string; seller: string; asset: string; endsAt: bigint }>()
  #thawTimer: NodeJS.Timeout | undefined
  #unwatch: (() => void) | undefined
  /** the thaw collection running now, and whether another was asked for meanwhile */
  #thawRun: Promise<void> | undefined
  #thawAgain = false

  constructor(deps: Deps, opts: { escrow: Address; log: Log; hooks?: DeferredCollectHooks }) {
    this.#db = deps.db
    this.#heads = createVoucherHeads(deps)
    this.#chain = deps.chain
    this.#config = deps.config
    this.#escrow = opts.escrow.toLowerCase() as Address
    this.#relayers = relayersFromKeys(deps.config.relayerKeys)
    this.#lock = createRelayerLock(deps.redis, deps.key)
    this.#log = opts.log
    this.#hooks = opts.hooks ?? {}
    this.#credit = createPayerCredit(deps)
  }

  /**
   * Watches the escrow's events: a thaw makes its buyer's seller collected at once and then every
   * poll while its calls keep coming (until the thaw ends); a withdrawal or flush collects (and
   * decides) what is left. Stopped by `close()`.
   */
  watchThaws(): void {
    if (this.#unwatch) return
    const pollMs = this.#config.deferred.watchEveryMs
    this.#unwatch = watchEscrowAccounts(this.#chain, this.#escrow, {
      pollMs,
      onEvents: (events) => this.#onEscrowEvents(events),
      onError: (err) => this.#log.warn({ err: err.message }, 'deferred: escrow event watch failed; retried'),
    })
    this.#thawTimer = setInterval(() => {
      if (this.#thawingAccounts.size > 0) this.#kickThawing()
    }, pollMs)
    this.#thawTimer.unref()
  }

  /** Stops watching; waits for a thaw collection under way. */
  async close(): Promise<void> {
    this.#unwatch?.()
    this.#unwatch = undefined
    if (this.#thawTimer) clearInterval(this.#thawTimer)
    this.#thawTimer = undefined
    this.#thawingAccounts.clear()
    await this.#thawRun
  }

  #onEscrowEvents(events: EscrowAccountEvent[]): void {
    let kick = false
    for (const e of events) {
      if (!e.seller || !e.asset) continue
      const key = accountKey(e.buyer, e.seller, e.asset)
      if (e.kind === 'ThawInitiated' && e.thawEndTime !== undefined) {
        this.#log.info({ buyer: e.buyer, seller: e.seller, thawEndTime: Number(e.thawEndTime) }, 'deferred: thaw seen')
        this.#thawingAccounts.set(key, { buyer: e.buyer, seller: e.seller, asset: e.asset, endsAt: e.thawEndTime })
        kick = true
      } else if (e.kind === 'ThawCancelled') this.#thawingAccounts.delete(key)
      else if (e.kind === 'Withdrawn' || e.kind === 'FlushAuthorized') {
        // collected if the account still pays something; decided uncollectable if it does not
        this.#thawingAccounts.set(key, { buyer: e.buyer, seller: e.seller, asset: e.asset, endsAt: 0n })
        kick = true
      }
    }
    if (kick) this.#kickThawing()
  }

  /** One thaw collection at a time; asked again while one runs, one more follows it. */
  #kickThawing(): void {
    if (this.#thawRun) {
      this.#thawAgain = true
      return
    }
    this.#thawRun = (async () => {
      do {
        this.#thawAgain = false
        await this.#collectThawing().catch((err) =>
          this.#log.error({ err: (err as Error).message }, 'deferred: thaw collection failed'),
        )
      } while (this.#thawAgain && this.#unwatch)
    })().finally(() => {
      this.#thawRun = undefined
    })
  }

  /** Collects the sellers of thawing accounts that have served calls; forgets thaws that are over. */
  async #collectThawing(): Promise<void> {
    const accounts = [...this.#thawingAccounts.entries()]
    if (accounts.length === 0) return
    const buyers = [...new Set(accounts.map(([, a]) => a.buyer))]
    const rows = await this.#db
      .selectFrom('payments')
      .select(['payer', 'pay_to', 'asset'])
      .distinct()
      .where('scheme', '=', 'deferred')
      .where('status', '=', 'served')
      .where('payer', 'in', buyers)
      .execute()
    const due = new Map<string, { pay_to: string; asset: string }>()
    for (const r of rows)
      if (this.#thawingAccounts.has(accountKey(r.payer, r.pay_to, r.asset)))
        due.set(`${r.pay_to}:${r.asset}`, { pay_to: r.pay_to, asset: r.asset })
    const stats = emptyStats()
    for (const d of due.values()) await this.#collectSeller(d.pay_to, d.asset, stats)
    if (stats.transactions + stats.uncollectable > 0) this.#log.info(stats, 'deferred: thawing buyers collected')
    const now = BigInt(Math.floor(Date.now() / 1000))
    for (const [key, a] of accounts)
      if (a.endsAt + THAW_FOLLOW_MARGIN_S < now && !due.has(`${a.seller}:${a.asset}`)) this.#thawingAccounts.delete(key)
  }

  /** Decides what a dead collection left, then collects every due seller. */
  async runOnce(opts: { force?: boolean } = {}): Promise<CollectStats> {
    const stats = emptyStats()
    await this.#recoverStuck(stats)
    for (const due of await this.#dueSellers(opts.force ?? false))
      await this.#collectSeller(due.pay_to, due.asset, stats)
    return stats
  }

  /**
   * Collects one stored voucher now (the facilitator's `POST /deferred/vouchers/:id/:nonce/settle`),
   * through the same steps as a due seller: its served payments up to this nonce claimed, the
   * voucher sent in a `collectMany` only when the escrow can pay something for it, then every claimed
   * payment decided from the chain and the store's `collected` updated. Idempotent: once the voucher
   * id is collected up to what the escrow can pay, nothing is sent. `allowSend` is asked just before
   * a transaction would go out (the caller's rate limit); false leaves everything as it was.
   */
  async collectVoucher(
    voucherId: Hex,
    nonce: bigint,
    allowSend: (row: VoucherRow) => Promise<boolean>,
  ): Promise<
    | { outcome: 'not_found' }
    | { outcome: 'refused' | 'no_relayer' | 'reverted'; row: VoucherRow }
    | { outcome: 'collected'; row: VoucherRow; txHash: Hex | null; collectedAmount: bigint; totalCollected: bigint }
  > {
    const found = await sql<VoucherRow>`
      select '' as payment_id, escrow, buyer, seller, asset, voucher_id, nonce::text as nonce,
             value_aggregate::text as value_aggregate, timestamp::text as timestamp, signature
      from deferred_vouchers where escrow = ${this.#escrow} and voucher_id = ${voucherId.toLowerCase()}
        and nonce = ${nonce.toString()}::numeric
      order by id limit 1`.execute(this.#db)
    const row = found.rows[0]
    if (!row) return { outcome: 'not_found' }
    const collectedNow = () =>
      this.#chain.readContract({
        address: this.#escrow,
        abi: deferredEscrowAbi,
        functionName: 'getVoucherCollected',
        args: [row.buyer as Address, row.seller as Address, row.asset as Address, row.voucher_id as Hex],
      })
    const before = await collectedNow()
    const collectable = await this.#collectable([row])
    if (collectable.length > 0 && !(await allowSend(row))) return { outcome: 'refused', row }
    const claimed = await claimDeferredVoucher(this.#db, {
      escrow: row.escrow,
      buyer: row.buyer,
      seller: row.seller,
      asset: row.asset,
      voucherId: row.voucher_id,
      maxNonce: nonce,
    })
    let txHash: Hex | null = null
    let noRelayer = false
    let threw = false
    try {
      txHash = await this.#send(collectable)
      noRelayer = collectable.length > 0 && txHash === null
    } catch (err) {
      this.#log.error({ voucher: row.voucher_id, err: (err as Error).message }, 'deferred collection failed')
      threw = true
    }
    const stats = emptyStats()
    await this.#decide(claimed, txHash, stats)
    const after = await collectedNow()
    // the store and the proxy's cached head follow the chain, with or without payments claimed
    await sql`update deferred_vouchers set collected = greatest(collected, ${after.toString()}::numeric)
      where escrow = ${row.escrow} and buyer = ${row.buyer} and seller = ${row.seller} and asset = ${row.asset}
        and voucher_id = ${row.voucher_id}`.execute(this.#db)
    await this.#heads
      .collected(tupleOfRow(row), row.voucher_id as Hex, after)
      .catch((err) => this.#log.warn({ err: (err as Error).message }, 'deferred: cached voucher head not updated'))
    if (noRelayer) return { outcome: 'no_relayer', row }
    if (threw || (txHash !== null && after === before)) return { outcome: 'reverted', row }
    return { outcome: 'collected', row, txHash, collectedAmount: after - before, totalCollected: after }
  }

  /** `settling` deferred payments older than stuckSeconds: their collection's process died. */
  async #recoverStuck(stats: CollectStats): Promise<void> {
    const stuck = await this.#db
      .selectFrom('payments')
      .selectAll()
      .where('scheme', '=', 'deferred')
      .where('status', '=', 'settling')
      .where('updated_at', '<', new Date(Date.now() - this.#config.deferred.stuckSeconds * 1000))
      .limit(MAX_PAYMENTS)
      .execute()
    if (stuck.length > 0) await this.#decide(stuck, null, stats)
  }

  /** (seller, asset) pairs whose served deferred payments reach the threshold or the age, or whose buyer thaws. */
  async #dueSellers(force: boolean): Promise<Array<{ pay_to: string; asset: string }>> {
    const { collectThreshold, collectMaxAgeSeconds } = this.#config.deferred
    const r = await sql<{ pay_to: string; asset: string }>`
      select pay_to, asset from payments where scheme = 'deferred' and status = 'served'
      group by pay_to, asset
      having ${force} or sum(value) >= ${collectThreshold.toString()}::numeric
        or min(created_at) < now() - ${`${collectMaxAgeSeconds} seconds`}::interval`.execute(this.#db)
    const due = new Map(r.rows.map((row) => [`${row.pay_to}:${row.asset}`, row]))
    if (!force) for (const row of await this.#thawing(due)) due.set(`${row.pay_to}:${row.asset}`, row)
    return [...due.values()]
  }

  /**
   * Sellers one of whose buyers with calls not yet collected has a thaw in progress: collected on
   * this run, long before the thaw can end (the thawing period is a day; a run comes every few
   * seconds), so a withdrawal never takes what a served voucher owes. Read from the escrow's
   * account view (one multicall), not from ThawInitiated logs: nothing to miss, nothing to keep.
   * A read that fails leaves the seller to the threshold and age rules on this run and is retried
   * on the next.
   */
  async #thawing(alreadyDue: Map<string, unknown>): Promise<Array<{ pay_to: string; asset: string }>> {
    const tuples = (
      await this.#db
        .selectFrom('payments')
        .select(['payer', 'pay_to', 'asset'])
        .distinct()
        .where('scheme', '=', 'deferred')
        .where('status', '=', 'served')
        .execute()
    ).filter((t) => !alreadyDue.has(`${t.pay_to}:${t.asset}`))
    if (tuples.length === 0) return []
    let accounts
    try {
      accounts = await this.#chain.multicall({
        // deps.chain has no chain definition: the canonical Multicall3 (deployed on the dev chain too)
        multicallAddress: MULTICALL3_ADDRESS,
        contracts: tuples.map((t) => ({
          address: this.#escrow,
          abi: deferredEscrowAbi,
          functionName: 'getAccount' as const,
          args: [t.payer as Address, t.pay_to as Address, t.asset as Address] as const,
        })),
      })
    } catch (err) {
      this.#log.warn({ err: (err as Error).message }, 'deferred: escrow thaw state could not be read')
      return []
    }
    const out: Array<{ pay_to: string; asset: string }> = []
    accounts.forEach((a, i) => {
      if (a.status !== 'success' || a.result.thawingAmount === 0n) return
      const t = tuples[i]!
      this.#log.info(
        { buyer: t.payer, seller: t.pay_to, thawEndTime: Number(a.result.thawEndTime) },
        'deferred: buyer thawing, collecting its seller now',
      )
      out.push({ pay_to: t.pay_to, asset: t.asset })
      // a thaw the event watch missed (this process was down): followed from now on as well
      if (this.#unwatch)
        this.#thawingAccounts.set(accountKey(t.payer, t.pay_to, t.asset), {
          buyer: t.payer,
          seller: t.pay_to,
          asset: t.asset,
          endsAt: a.result.thawEndTime,
        })
    })
    return out
  }

  async #collectSeller(payTo: string, asset: string, stats: CollectStats): Promise<void> {
    const claimed = await claimDeferred(this.#db, { payTo, asset, limit: MAX_PAYMENTS })
    if (claimed.length === 0) return
    await this.#hooks.afterClaim?.()
    let txHash: Hex | null = null
    try {
      const vouchers = await this.#collectable(await this.#vouchersOf(claimed))
      for (let i = 0; i < vouchers.length; i += MAX_VOUCHERS) {
        const hash = await this.#send(vouchers.slice(i, i + MAX_VOUCHERS))
        if (hash) {
          txHash = hash
          stats.transactions++
          await this.#hooks.afterSend?.()
        }
      }
    } catch (err) {
      // decided from the chain below all the same: whatever was collected counts, the rest is requeued
      this.#log.error({ seller: payTo, err: (err as Error).message }, 'deferred collection failed')
    }
    await this.#decide(claimed, txHash, stats)
  }

  /** The stored vouchers of these payments (linked by payer and digest = payments.nonce). */
  async #vouchersOf(payments: Payment[]): Promise<VoucherRow[]> {
    const r = await sql<VoucherRow>`
      select p.id as payment_id, v.escrow, v.buyer, v.seller, v.asset, v.voucher_id, v.nonce::text as nonce,
             v.value_aggregate::text as value_aggregate, v.timestamp::text as timestamp, v.signature
      from payments p join deferred_vouchers v on v.buyer = p.payer and v.digest = p.nonce
      where p.id = any(${payments.map((p) => p.id)}::uuid[])`.execute(this.#db)
    return r.rows
  }

  /**
   * Per voucher id, the highest voucher among the claimed payments (it includes every earlier one;
   * a later head may belong to a call still running, which is not collected yet), kept only when
   * the escrow can pay something for it now.
   */
  async #collectable(rows: VoucherRow[]): Promise<Array<{ voucher: DeferredVoucher; signature: Hex }>> {
    const best = new Map<string, VoucherRow>()
    for (const r of rows) {
      const k = voucherKey(r)
      const had = best.get(k)
      if (!had || BigInt(r.nonce) > BigInt(had.nonce)) best.set(k, r)
    }
    const chainId = BigInt(this.#config.chain.chainId)
    const out: Array<{ voucher: DeferredVoucher; signature: Hex }> = []
    for (const r of best.values()) {
      if (r.escrow !== this.#escrow) continue
      const voucher = voucherOfRow(r, chainId)
      const [, collectable] = await this.#chain.readContract({
        address: this.#escrow,
        abi: deferredEscrowAbi,
        functionName: 'getOutstandingAndCollectableAmount',
        args: [voucher],
      })
      if (collectable > 0n) out.push({ voucher, signature: r.signature as Hex })
    }
    return out
  }

  /** One collectMany from a free relayer; its hash once mined, null when no relayer was free. */
  async #send(vouchers: Array<{ voucher: DeferredVoucher; signature: Hex }>): Promise<Hex | null> {
    if (vouchers.length === 0) return null
    const data = encodeFunctionData({ abi: deferredEscrowAbi, functionName: 'collectMany', args: [vouchers] })
    const ctx = {
      chain: this.#chain,
      chainId: this.#config.chain.chainId,
      maxFeePerGasWei: this.#config.settlement.maxFeePerGasWei,
      lock: this.#lock,
      relayers: this.#relayers,
    }
    const r = await relayerCall(
      ctx,
      { to: this.#escrow, data },
      {
        timeoutMs: RECEIPT_TIMEOUT_MS,
        onSent: (tx) => this.#log.info({ tx, vouchers: vouchers.length }, 'deferred collectMany sent'),
      },
    )
    if (!r)
      this.#log.warn({ vouchers: vouchers.length }, 'no relayer free for deferred collection; retried on the next run')
    else if (r.status !== 'success') this.#log.warn({ tx: r.hash }, 'deferred collectMany reverted')
    return r?.hash ?? null
  }

  /**
   * Each payment decided from the chain: settled when what its voucher id was paid covers its
   * voucher's aggregate, else back to served. The store's `collected` follows the chain.
   */
  async #decide(payments: Payment[], txHash: Hex | null, stats: CollectStats): Promise<void> {
    const rows = await this.#vouchersOf(payments)
    const byPayment = new Map(rows.map((r) => [r.payment_id, r]))
    const collected = new Map<string, bigint>()
    for (const r of rows) {
      const k = voucherKey(r)
      if (collected.has(k)) continue
      const paid = await this.#chain.readContract({
        address: r.escrow as Address,
        abi: deferredEscrowAbi,
        functionName: 'getVoucherCollected',
        args: [r.buyer as Address, r.seller as Address, r.asset as Address, r.voucher_id as Hex],
      })
      collected.set(k, paid)
      await sql`update deferred_vouchers set collected = greatest(collected, ${paid.toString()}::numeric)
        where escrow = ${r.escrow} and buyer = ${r.buyer} and seller = ${r.seller} and asset = ${r.asset} and voucher_id = ${r.voucher_id}`.execute(
        this.#db,
      )
      // the proxy's reservation counts what is still owed: Redis follows Postgres (a failure here
      // only makes the proxy's check stricter until the tuple is reloaded)
      await this.#heads
        .collected(tupleOfRow(r), r.voucher_id as Hex, paid)
        .catch((err) => this.#log.warn({ err: (err as Error).message }, 'deferred: cached voucher head not updated'))
    }
    const settled: string[] = []
    const notYet: Payment[] = []
    for (const p of payments) {
      const v = byPayment.get(p.id)
      // no stored voucher (it cannot be collected): left for an operator, never settled blind
      if (!v) {
        this.#log.error({ id: p.id }, 'deferred payment without a stored voucher')
        continue
      }
      if (BigInt(v.value_aggregate) <= (collected.get(voucherKey(v)) ?? 0n)) settled.push(p.id)
      else notYet.push(p)
    }
    const accounts = await this.#accountsAfter(rows)
    // an empty account pays nothing more: the call was served and will not be paid
    const lost = notYet.filter((p) => accounts.get(accountKey(p.payer, p.pay_to, p.asset))?.balance === 0n)
    const s = await transition(this.#db, settled, ['settling'], 'settled', { txHash, type: 'collected' })
    const u = await transition(
      this.#db,
      lost.map((p) => p.id),
      ['settling'],
      'failed',
      {
        reason: UNCOLLECTABLE,
        data: { detail: "the buyer's escrow account is empty (withdrawn, or collected elsewhere)" },
      },
    )
    const q = await transition(
      this.#db,
      notYet.filter((p) => !lost.includes(p)).map((p) => p.id),
      ['settling'],
      'served',
      { reason: 'not_collected_yet', type: 'requeued' },
    )
    for (const m of u) {
      this.#log.warn({ payment: m.id, buyer: m.payer }, 'deferred: served call uncollectable; buyer blocked')
      await this.#credit
        .block(m.payer, UNCOLLECTABLE, m.id)
        .catch((err) => this.#log.error({ err: (err as Error).message }, 'deferred: payer block failed'))
    }
    stats.settled += s.length
    stats.requeued += q.length
    stats.uncollectable += u.length
  }

  /**
   * The escrow accounts of these vouchers as they are now (one multicall), each also stored for the
   * proxies (what the buyer cannot take back, with the time of the read: the newest read wins over a
   * proxy's cached one). A failed read leaves them out: nothing is decided uncollectable on it.
   */
  async #accountsAfter(rows: VoucherRow[]): Promise<Map<string, { balance: bigint; thawingAmount: bigint }>> {
    const out = new Map<string, { balance: bigint; thawingAmount: bigint }>()
    const tuples = [...new Map(rows.map((r) => [accountKey(r.buyer, r.seller, r.asset), r])).values()].filter(
      (r) => r.escrow === this.#escrow,
    )
    if (tuples.length === 0) return out
    const at = Date.now()
    let read
    try {
      read = await this.#chain.multicall({
        multicallAddress: MULTICALL3_ADDRESS,
        contracts: tuples.map((r) => ({
          address: this.#escrow,
          abi: deferredEscrowAbi,
          functionName: 'getAccount' as const,
          args: [r.buyer as Address, r.seller as Address, r.asset as Address] as const,
        })),
      })
    } catch (err) {
      this.#log.warn({ err: (err as Error).message }, 'deferred: escrow accounts could not be read after collection')
      return out
    }
    for (const [i, r] of tuples.entries()) {
      const a = read[i]!
      if (a.status !== 'success') continue
      const { balance, thawingAmount } = a.result
      out.set(accountKey(r.buyer, r.seller, r.asset), { balance, thawingAmount })
      await this.#heads
        .account(tupleOfRow(r), balance > thawingAmount ? balance - thawingAmount : 0n, at)
        .catch((err) => this.#log.warn({ err: (err as Error).message }, 'deferred: cached account not updated'))
    }
    return out
  }
}
