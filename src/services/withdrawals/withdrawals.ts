import { createHash, randomBytes } from 'node:crypto'
import { sql, type Kysely, type Transaction } from 'kysely'
import { getAddress, keccak256, zeroAddress, type Hex, type TransactionReceipt } from 'viem'
import { eip3009Types, usdcAbi } from '../../chain/usdc-abi.js'
import type { Database, Payment } from '../../db/database.js'
import type { Deps } from '../../deps.js'
import { appError } from '../../errors.js'
import { errorSummary } from '../../logger.js'
import { isUuid } from '../accounts/key-rows.js'
import { address as parseAddress, atomicAmount, invalid } from '../accounts/validate.js'
import { MAX_COUNTED } from '../agent-payments/spend-windows.js'
import { emitEvent } from '../events/outbox.js'
import {
  findAuthorizationOutcome,
  reasonFromRevert,
  transferCallData,
  usedAuthorizations,
} from '../settlement/chain-ops.js'
import { broadcast, createRelayerLock, relayersFromKeys, signRelayerTx, type Relayer } from '../settlement/relayer.js'
import { custodialAccount } from '../wallets/custodial-wallet.js'
import { ensureFundingWallet } from '../wallets/funding-wallet.js'
import { requireMasterKey } from '../../secrets/wallet-crypto.js'
import type { Withdrawal, WithdrawalAsset, WithdrawalSource, WithdrawalStatus } from '../../db/withdrawals-tables.js'
import { amountText } from './amount-text.js'
import { withdrawalView, type WithdrawalView } from './view.js'
import { createWalletReservations, type HeldWithdrawal } from './wallet-reservation.js'

export interface WithdrawalLogger {
  info(obj: object, msg: string): void
  error(obj: object, msg: string): void
}

export interface WithdrawalOptions {
  /** attempts before a withdrawal that never reached the chain is `failed` (default 5) */
  maxAttempts?: number
  /** first retry delay; doubles per attempt up to maxBackoffMs (default 5 s, 5 min) */
  backoffMs?: number
  maxBackoffMs?: number
  /** how long one process owns a withdrawal while it works on it (default 2 min) */
  leaseMs?: number
  receiptTimeoutMs?: number
  /** lifetime of a USDC withdrawal's authorization (default 1 h): unsent by then, it fails and its reservation goes */
  authorizationTtlS?: number
  logger?: WithdrawalLogger
}

/** Which wallet a withdrawal leaves: one of the user's agents (by address) or the user's funding wallet. */
export type WithdrawalTarget = { source: 'agent'; address: string } | { source: 'funding_wallet' }

export interface WithdrawalBody {
  to?: unknown
  amount?: unknown
  asset?: unknown
}

/** Gas of a plain ETH transfer to an address (a contract receiving ETH may need more and is refused at estimate). */
const ETH_TRANSFER_GAS = 21_000n

/** A failure that counts as an attempt (and is retried with backoff). */
class AttemptFailed extends Error {}

const silent: WithdrawalLogger = { info: () => {}, error: () => {} }

/**
 * Money out (docs/api.md, "Withdrawals"): the owner sends USDC from an agent wallet or the funding
 * wallet, or the funding wallet's leftover ETH, to an address. `request` checks what may leave —
 * the balance minus what is signed and not settled yet, reserved where payments reserve
 * (wallet-reservation.ts), so a withdrawal and payments at the same time never both count on the
 * same funds — then records the withdrawal with its signed authorization before any relayer sees
 * it. `process` sends it (USDC: a relayer submits the authorization, as top-ups do; ETH: the
 * funding wallet's own transaction, recorded before it is broadcast); the worker's
 * `withdrawal-sweep` finishes what a process left, so nothing is lost if one dies after sending.
 *
 * @example
 *   const w = createWithdrawals(deps)
 *   const { withdrawal } = await w.request(userId, { source: 'agent', address }, { to, amount: '1000000' }, 'key-1')
 *   await w.process(withdrawal.id)
 */
export function createWithdrawals(deps: Deps, opts: WithdrawalOptions = {}) {
  const { db, chain, config } = deps
  const maxAttempts = opts.maxAttempts ?? 5
  const backoffMs = opts.backoffMs ?? 5_000
  const maxBackoffMs = opts.maxBackoffMs ?? 5 * 60_000
  const leaseMs = opts.leaseMs ?? 120_000
  const receiptTimeoutMs = opts.receiptTimeoutMs ?? 30_000
  const ttlS = opts.authorizationTtlS ?? 3600
  const feeCap = config.settlement.maxFeePerGasWei
  const relayers = relayersFromKeys(config.relayerKeys)
  const lock = createRelayerLock(deps.redis, deps.key)
  const log = opts.logger ?? silent
  const usdc = getAddress(config.chain.usdc.address)
  const reservations = createWalletReservations(deps)

  // ---- request -------------------------------------------------------------------------------

  function parseBody(target: WithdrawalTarget, body: WithdrawalBody, from: string) {
    const asset = (body.asset ?? 'USDC') as WithdrawalAsset
    if (asset !== 'USDC' && asset !== 'ETH') throw invalid('asset', 'expected USDC or ETH')
    if (asset === 'ETH' && target.source !== 'funding_wallet')
      throw invalid(
        'asset',
        'agent wallets withdraw USDC only; ETH (the gas left in a wallet) is withdrawn from the funding wallet',
      )
    const to = parseAddress('to', body.to)
    if (to === zeroAddress)
      throw invalid('to', 'the zero address would burn the funds; name the address to send them to')
    if (to.toLowerCase() === from.toLowerCase())
      throw invalid('to', 'this is the wallet the funds leave; name another address')
    if (to.toLowerCase() === usdc.toLowerCase())
      throw invalid('to', 'this is the USDC token contract, which cannot hand the funds back; name a wallet address')
    const unit = asset === 'USDC' ? 'USDC atomic units (6 decimals: "1000000" = 1 USDC)' : 'wei'
    const raw = atomicAmount('amount', body.amount, { positive: true })!
    const amount = BigInt(raw)
    if (asset === 'USDC' && amount > MAX_COUNTED) throw invalid('amount', `at most ${MAX_COUNTED} ${unit}`)
    return { asset, to, amount, unit }
  }

  /** The wallet a target names: its address, its encrypted key and the agent's id. 404 for another user's agent. */
  async function walletOf(
    userId: string,
    target: WithdrawalTarget,
  ): Promise<{ source: WithdrawalSource; address: string; encryptedKey: string; agentId: string | null }> {
    if (target.source === 'funding_wallet') {
      await ensureFundingWallet(db, requireMasterKey(config), userId)
      const w = await db
        .selectFrom('funding_wallets')
        .select(['address', 'encrypted_key'])
        .where('user_id', '=', userId)
        .executeTakeFirstOrThrow()
      return { source: 'funding_wallet', address: w.address, encryptedKey: w.encrypted_key, agentId: null }
    }
    let address: string
    try {
      address = parseAddress('address', target.address)
    } catch {
      throw appError('not_found', { what: 'agent' })
    }
    const a = await db
      .selectFrom('agents')
      .select(['id', 'address', 'encrypted_key'])
      .where('user_id', '=', userId)
      .where('address', '=', address)
      .executeTakeFirst()
    if (!a) throw appError('not_found', { what: 'agent' })
    return { source: 'agent', address: a.address, encryptedKey: a.encrypted_key, agentId: a.id }
  }

  function refuse(asset: WithdrawalAsset, balance: bigint, unsettled: bigint, amount: bigint, fee = 0n) {
    const available = balance > unsettled + fee ? balance - unsettled - fee : 0n
    return appError(
      'withdrawal_exceeds_available',
      {
        available: amountText(asset, available),
        balance: amountText(asset, balance),
        unsettled: amountText(asset, unsettled),
        fee: fee ? ` and ${amountText('ETH', fee)} of gas for the transfer` : '',
        amount: amountText(asset, amount),
      },
      {
        details: {
          asset,
          balance: balance.toString(),
          unsettled: unsettled.toString(),
          available: available.toString(),
          amount: amount.toString(),
          ...(fee ? { fee: fee.toString() } : {}),
        },
      },
    )
  }

  async function readUsdc(address: string): Promise<bigint> {
    try {
      return await chain.readContract({
        address: usdc,
        abi: usdcAbi,
        functionName: 'balanceOf',
        args: [getAddress(address)],
      })
    } catch {
      throw appError('service_unavailable', {
        detail: 'the chain RPC did not answer; cannot check the wallet balance, retry later',
      })
    }
  }

  async function gasPrice(): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> {
    const fees = await chain.estimateFeesPerGas()
    const maxFeePerGas = fees.maxFeePerGas > feeCap ? feeCap : fees.maxFeePerGas
    return {
      maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas > maxFeePerGas ? maxFeePerGas : fees.maxPriorityFeePerGas,
    }
  }

  /** A fresh EIP-3009 authorization from the custodial wallet to `to`. */
  async function authorize(
    kind: 'agent' | 'funding',
    from: string,
    encryptedKey: string,
    to: string,
    amount: bigint,
    nowS: number,
  ) {
    const account = custodialAccount([requireMasterKey(config)], kind, from, encryptedKey)
    const message = {
      from: account.address,
      to: getAddress(to),
      value: amount,
      validAfter: BigInt(nowS - 600),
      validBefore: BigInt(nowS + ttlS),
      nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
    }
    const signature = await account.signTypedData({
      domain: {
        name: config.chain.usdc.name,
        version: config.chain.usdc.version,
        chainId: config.chain.chainId,
        verifyingContract: usdc,
      },
      types: { TransferWithAuthorization: eip3009Types.TransferWithAuthorization },
      primaryType: 'TransferWithAuthorization',
      message,
    })
    return {
      auth_nonce: message.nonce,
      valid_after: message.validAfter.toString(),
      valid_before: message.validBefore.toString(),
      signature,
    }
  }

  type NewRow = Omit<
    Withdrawal,
    | 'id'
    | 'status'
    | 'relayer'
    | 'tx_hash'
    | 'confirmed_block'
    | 'attempts'
    | 'next_attempt_at'
    | 'locked_until'
    | 'error'
    | 'created_at'
    | 'updated_at'
    | 'confirmed_at'
    | 'tx_nonce'
    | 'raw_tx'
  > &
    Partial<Pick<Withdrawal, 'tx_nonce' | 'raw_tx'>>

  /** Inserts the withdrawal and its `created` event; undefined when the idempotency key was taken meanwhile. */
  async function insert(q: Kysely<Database> | Transaction<Database>, row: NewRow): Promise<Withdrawal | undefined> {
    const w = await q
      .insertInto('withdrawals')
      .values(row)
      .onConflict((oc) => oc.columns(['user_id', 'idempotency_key']).doNothing())
      .returningAll()
      .executeTakeFirst()
    if (w)
      await q
        .insertInto('withdrawal_events')
        .values({
          withdrawal_id: w.id,
          type: 'created',
          from_status: null,
          to_status: 'pending',
          reason: null,
          data: JSON.stringify({ to: w.to_address, amount: w.amount, asset: w.asset }),
        })
        .execute()
    return w
  }

  async function existing(userId: string, key: string, hash: string): Promise<Withdrawal | undefined> {
    const w = await db
      .selectFrom('withdrawals')
      .selectAll()
      .where('user_id', '=', userId)
      .where('idempotency_key', '=', key)
      .executeTakeFirst()
    if (w && w.request_hash !== hash) throw appError('idempotency_key_reused')
    return w
  }

  const held = (w: Pick<Withdrawal, 'from_address' | 'auth_nonce' | 'amount' | 'valid_before'>): HeldWithdrawal => ({
    payer: w.from_address.toLowerCase(),
    nonce: w.auth_nonce!.toLowerCase(),
    amount: BigInt(w.amount),
    validBefore: BigInt(w.valid_before!),
  })

  /** Serialises the funding wallet's withdrawals (for the time of one transaction) across processes. */
  const walletLock = (trx: Transaction<Database>, address: string) =>
    sql`select pg_advisory_xact_lock(hashtextextended(${`tollgate-withdraw:${address.toLowerCase()}`}, 0))`.execute(trx)

  /** `created` false: a concurrent request with the same key recorded it first, and that one is the answer. */
  type Recorded = { w: Withdrawal; created: boolean }

  async function requestAgentUsdc(base: NewRow, encryptedKey: string): Promise<Recorded> {
    const amount = BigInt(base.amount)
    const balance = await readUsdc(base.from_address)
    const nowMs = Date.now()
    const auth = await authorize(
      'agent',
      base.from_address,
      encryptedKey,
      base.to_address,
      amount,
      Math.floor(nowMs / 1000),
    )
    const row = { ...base, ...auth }
    await reservations.reserve(held(row), balance, nowMs)
    try {
      const w = await insert(db, row)
      if (w) return { w, created: true }
    } catch (err) {
      await reservations.release(held(row))
      throw err
    }
    // the same key won a race with this request: its withdrawal is the answer, this one never happened
    await reservations.release(held(row))
    return { w: (await existing(base.user_id, base.idempotency_key, base.request_hash))!, created: false }
  }

  async function requestFunding(base: NewRow, encryptedKey: string): Promise<Recorded> {
    const amount = BigInt(base.amount)
    const w = await db.transaction().execute(async (trx) => {
      await walletLock(trx, base.from_address)
      if (base.asset === 'ETH') {
        const open = await trx
          .selectFrom('withdrawals')
          .select('id')
          .where('from_address', '=', base.from_address)
          .where('asset', '=', 'ETH')
          .where('status', '=', 'pending')
          .executeTakeFirst()
        if (open)
          throw appError('conflict', {
            detail: `an ETH withdrawal from this wallet is still pending (${open.id}); the funding wallet sends one ETH withdrawal at a time: retry once it is confirmed or failed`,
          })
        let balance: bigint
        let fee: bigint
        try {
          ;[balance, fee] = await Promise.all([
            chain.getBalance({ address: getAddress(base.from_address) }),
            gasPrice().then((g) => g.maxFeePerGas * ETH_TRANSFER_GAS),
          ])
        } catch {
          throw appError('service_unavailable', {
            detail: 'the chain RPC did not answer; cannot check the wallet balance, retry later',
          })
        }
        if (amount + fee > balance) throw refuse('ETH', balance, 0n, amount, fee)
        return insert(trx, base)
      }
      const balance = await readUsdc(base.from_address)
      // what the wallet has signed and not settled: open top-ups it pays, and its pending withdrawals
      const r = await sql<{ total: string }>`
        select (coalesce((select sum(t.amount) from topups t join agents a on a.id = t.agent_id where a.user_id = ${base.user_id} and t.status in ('pending','submitted')), 0)
          + coalesce((select sum(amount) from withdrawals where from_address = ${base.from_address} and asset = 'USDC' and status = 'pending'), 0))::text as total`.execute(
        trx,
      )
      const unsettled = BigInt(r.rows[0]!.total)
      if (amount + unsettled > balance) throw refuse('USDC', balance, unsettled, amount)
      return insert(trx, {
        ...base,
        ...(await authorize(
          'funding',
          base.from_address,
          encryptedKey,
          base.to_address,
          amount,
          Math.floor(Date.now() / 1000),
        )),
      })
    })
    return w
      ? { w, created: true }
      : { w: (await existing(base.user_id, base.idempotency_key, base.request_hash))!, created: false }
  }

  // ---- sending -------------------------------------------------------------------------------

  async function withRelayer<T>(fn: (r: Relayer) => Promise<T>): Promise<{ value: T } | null> {
    const start = Math.floor(Math.random() * Math.max(1, relayers.length))
    for (let i = 0; i < relayers.length; i++) {
      const r = relayers[(start + i) % relayers.length]!
      const got = await lock.hold(r.address, () => fn(r))
      if (got) return got
    }
    return null
  }

  async function event(
    id: string,
    type: string,
    from: WithdrawalStatus | null,
    to: WithdrawalStatus | null,
    reason: string | null,
    data?: Record<string, unknown>,
  ): Promise<void> {
    await db
      .insertInto('withdrawal_events')
      .values({
        withdrawal_id: id,
        type,
        from_status: from,
        to_status: to,
        reason,
        data: data ? JSON.stringify(data) : null,
      })
      .execute()
  }

  async function update(id: string, set: Record<string, unknown>): Promise<void> {
    await db
      .updateTable('withdrawals')
      .set({ ...set, updated_at: sql`now()` })
      .where('id', '=', id)
      .execute()
  }

  /** The webhook event of a withdrawal's end, written in the transaction that ends it. */
  function withdrawalEvent(trx: Transaction<Database>, w: Withdrawal, ok: boolean, extra: Record<string, unknown>) {
    return emitEvent(trx, {
      userId: w.user_id,
      type: ok ? 'withdrawal.confirmed' : 'withdrawal.failed',
      data: {
        withdrawal_id: w.id,
        source: w.source,
        from: w.from_address,
        to: w.to_address,
        asset: w.asset,
        amount: w.amount,
        ...extra,
      },
    })
  }

  async function confirm(w: Withdrawal, txHash: string, block: bigint): Promise<'confirmed'> {
    const done = await db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('withdrawals')
        .set({
          status: 'confirmed',
          tx_hash: txHash,
          confirmed_block: block,
          confirmed_at: sql`now()`,
          locked_until: null,
          error: null,
          updated_at: sql`now()`,
        })
        .where('id', '=', w.id)
        .where('status', '=', 'pending')
        .returning('id')
        .executeTakeFirst()
      if (row) await withdrawalEvent(trx, w, true, { tx_hash: txHash })
      return row
    })
    if (done) {
      await event(w.id, 'confirmed', 'pending', 'confirmed', null, { tx_hash: txHash, block: block.toString() })
      if (w.source === 'agent' && w.asset === 'USDC') await reservations.settled(held(w))
      log.info(
        { withdrawal: w.id, from: w.from_address, to: w.to_address, amount: w.amount, asset: w.asset, txHash },
        'withdrawal confirmed',
      )
    }
    return 'confirmed'
  }

  async function fail(w: Withdrawal, reason: string): Promise<'failed'> {
    const done = await db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('withdrawals')
        .set({ status: 'failed', error: reason, locked_until: null, updated_at: sql`now()` })
        .where('id', '=', w.id)
        .where('status', '=', 'pending')
        .returning('id')
        .executeTakeFirst()
      if (row) await withdrawalEvent(trx, w, false, { reason })
      return row
    })
    if (done) {
      await event(w.id, 'failed', 'pending', 'failed', reason)
      if (w.source === 'agent' && w.asset === 'USDC') await reservations.release(held(w))
      log.error(
        { withdrawal: w.id, from: w.from_address, amount: w.amount, asset: w.asset, error: reason },
        'withdrawal failed',
      )
    }
    return 'failed'
  }

  function landed(w: Withdrawal, receipt: TransactionReceipt): boolean {
    return (
      receipt.status === 'success' &&
      usedAuthorizations(usdc, receipt.logs).has(`${w.from_address.toLowerCase()}:${w.auth_nonce!.toLowerCase()}`)
    )
  }

  const asPayment = (w: Withdrawal) =>
    ({
      payer: w.from_address,
      pay_to: w.to_address,
      value: w.amount,
      valid_after: w.valid_after,
      valid_before: w.valid_before,
      nonce: w.auth_nonce,
      signature: w.signature,
    }) as unknown as Payment

  /** One attempt at a claimed USDC withdrawal: the stored authorization, relayed; never a second one. */
  async function attemptUsdc(w: Withdrawal): Promise<WithdrawalStatus> {
    if (w.tx_hash) {
      const receipt = await chain.getTransactionReceipt({ hash: w.tx_hash as Hex }).catch(() => null)
      if (receipt && landed(w, receipt)) return confirm(w, w.tx_hash, receipt.blockNumber)
    }
    const used = await chain.readContract({
      address: usdc,
      abi: usdcAbi,
      functionName: 'authorizationState',
      args: [getAddress(w.from_address), w.auth_nonce as Hex],
    })
    if (used) {
      const outcome = await findAuthorizationOutcome(chain, usdc, asPayment(w), {
        chunkBlocks: config.settlement.logChunkBlocks,
      })
      if (outcome.kind === 'used')
        return confirm(w, outcome.txHash, (await chain.getTransactionReceipt({ hash: outcome.txHash })).blockNumber)
      if (outcome.kind === 'canceled') return fail(w, 'the authorization was canceled')
      throw new AttemptFailed('the authorization is used but its transaction was not found yet')
    }
    // unused and (about to be) expired: it can never move the funds now
    if (BigInt(w.valid_before!) <= BigInt(Math.floor(Date.now() / 1000) + 30))
      return fail(w, 'expired: the withdrawal was not sent before its authorization expired; nothing left the wallet')
    const data = transferCallData(asPayment(w))
    const result = await withRelayer(async (relayer) => {
      let gas: bigint
      try {
        gas = await chain.estimateGas({ account: relayer.address, to: usdc, data })
      } catch (err) {
        throw new AttemptFailed(`${reasonFromRevert(String((err as Error).message))}: the transfer would revert`)
      }
      const signed = await signRelayerTx(chain, relayer, {
        to: usdc,
        data,
        gas: (gas * 13n) / 10n,
        chainId: config.chain.chainId,
        maxFeePerGasCap: feeCap,
      })
      // recorded before broadcast, so a crash leaves a hash to look for
      await update(w.id, { tx_hash: signed.hash, relayer: relayer.address.toLowerCase() })
      await event(w.id, 'submitted', 'pending', 'pending', null, {
        tx_hash: signed.hash,
        relayer: relayer.address.toLowerCase(),
      })
      await broadcast(chain, signed.raw)
      const receipt = await chain
        .waitForTransactionReceipt({ hash: signed.hash, timeout: receiptTimeoutMs })
        .catch(() => null)
      return { hash: signed.hash, receipt }
    })
    if (!result) {
      // every relayer busy settling: not the withdrawal's fault, so no attempt is counted
      await update(w.id, { locked_until: null, next_attempt_at: new Date(Date.now() + 1_000) })
      return 'pending'
    }
    const { hash, receipt } = result.value
    if (!receipt) {
      await update(w.id, { locked_until: null, next_attempt_at: new Date(Date.now() + 5_000) })
      return 'pending'
    }
    if (!landed(w, receipt)) throw new AttemptFailed(`the transaction ${hash} reverted`)
    return confirm(w, hash, receipt.blockNumber)
  }

  /** One attempt at a claimed ETH withdrawal: the funding wallet's own transaction, signed once, rebroadcast until mined. */
  async function attemptEth(w: Withdrawal): Promise<WithdrawalStatus> {
    if (w.raw_tx && w.tx_hash) {
      const receipt = await chain.getTransactionReceipt({ hash: w.tx_hash as Hex }).catch(() => null)
      if (receipt)
        return receipt.status === 'success'
          ? confirm(w, w.tx_hash, receipt.blockNumber)
          : fail(w, `the transaction ${w.tx_hash} reverted; only its gas was spent`)
      const mined = await chain.getTransactionCount({ address: getAddress(w.from_address), blockTag: 'latest' })
      if (BigInt(mined) > BigInt(w.tx_nonce!))
        throw new AttemptFailed("the wallet's nonce moved on but the transaction's receipt is not visible yet")
      await broadcast(chain, w.raw_tx as Hex)
    } else {
      const from = getAddress(w.from_address)
      const account = custodialAccount(
        [requireMasterKey(config)],
        'funding',
        from,
        (
          await db
            .selectFrom('funding_wallets')
            .select('encrypted_key')
            .where('user_id', '=', w.user_id)
            .executeTakeFirstOrThrow()
        ).encrypted_key,
      )
      const [nonce, fees, balance] = await Promise.all([
        chain.getTransactionCount({ address: from, blockTag: 'pending' }),
        gasPrice(),
        chain.getBalance({ address: from }),
      ])
      const value = BigInt(w.amount)
      if (balance < value + fees.maxFeePerGas * ETH_TRANSFER_GAS)
        throw new AttemptFailed(
          `insufficient_funds: the wallet holds ${balance} wei, the withdrawal needs ${value} plus up to ${fees.maxFeePerGas * ETH_TRANSFER_GAS} of gas`,
        )
      const raw = await account.signTransaction({
        type: 'eip1559',
        chainId: config.chain.chainId,
        to: getAddress(w.to_address),
        value,
        gas: ETH_TRANSFER_GAS,
        nonce,
        ...fees,
      })
      const hash = keccak256(raw)
      // recorded before broadcast: a crash leaves the signed transaction to rebroadcast, never a second one
      await update(w.id, { raw_tx: raw, tx_hash: hash, tx_nonce: nonce })
      await event(w.id, 'submitted', 'pending', 'pending', null, { tx_hash: hash })
      w = { ...w, raw_tx: raw, tx_hash: hash, tx_nonce: String(nonce) }
      await broadcast(chain, raw)
    }
    const receipt = await chain
      .waitForTransactionReceipt({ hash: w.tx_hash as Hex, timeout: receiptTimeoutMs })
      .catch(() => null)
    if (!receipt) {
      await update(w.id, { locked_until: null, next_attempt_at: new Date(Date.now() + 5_000) })
      return 'pending'
    }
    return receipt.status === 'success'
      ? confirm(w, w.tx_hash!, receipt.blockNumber)
      : fail(w, `the transaction ${w.tx_hash} reverted; only its gas was spent`)
  }

  async function recordFailure(w: Withdrawal, err: unknown): Promise<WithdrawalStatus> {
    const attempts = w.attempts + 1
    // shown to the user; viem's full message would carry the operator's RPC URL
    const error = errorSummary(err)
    // a withdrawal that reached the chain may still land: it stays pending until it does or its authorization expires
    const reachedChain = w.tx_hash !== null
    if (attempts >= maxAttempts && !reachedChain) return fail({ ...w, attempts }, error)
    const delay = Math.min(backoffMs * 2 ** (attempts - 1), maxBackoffMs)
    await update(w.id, { attempts, error, locked_until: null, next_attempt_at: new Date(Date.now() + delay) })
    await event(w.id, 'attempt_failed', 'pending', 'pending', error, { attempts })
    log.info({ withdrawal: w.id, attempts, retryInMs: delay, error }, 'withdrawal attempt failed; will retry')
    return 'pending'
  }

  /** Takes the lease on one due pending withdrawal (so only one process works on it). */
  async function claim(id: string): Promise<Withdrawal | undefined> {
    return db
      .updateTable('withdrawals')
      .set({ locked_until: sql`now() + ${`${leaseMs} milliseconds`}::interval` })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', sql<Date>`now()`)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', sql<Date>`now()`)]))
      .returningAll()
      .executeTakeFirst()
  }

  /** Works on one withdrawal if it is due and no one else holds it; returns its status, or undefined when not taken. */
  async function process(id: string): Promise<WithdrawalStatus | undefined> {
    const w = await claim(id)
    if (!w) return undefined
    try {
      return w.asset === 'ETH' ? await attemptEth(w) : await attemptUsdc(w)
    } catch (err) {
      // unknown errors (RPC down, ...) count too, so a broken withdrawal cannot retry forever
      const fresh = await db.selectFrom('withdrawals').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
      if (fresh.status !== 'pending') return fresh.status
      return recordFailure(fresh, err)
    }
  }

  return {
    /**
     * Checks and records a withdrawal (201), or finds the one this idempotency key made (replayed:
     * 200). 409 `withdrawal_exceeds_available` when the wallet's balance minus what it has signed and
     * not settled cannot cover it; 409 `idempotency_key_reused` for the key with another request.
     */
    async request(
      userId: string,
      target: WithdrawalTarget,
      body: WithdrawalBody,
      idempotencyKey: unknown,
    ): Promise<{ withdrawal: WithdrawalView; replayed: boolean }> {
      if (typeof idempotencyKey !== 'string' || idempotencyKey.length < 1 || idempotencyKey.length > 255) {
        throw invalid(
          'Idempotency-Key',
          'required: send an Idempotency-Key header (1 to 255 characters, new for each withdrawal) so that a retried request cannot send the funds twice',
        )
      }
      const wallet = await walletOf(userId, target)
      const { asset, to, amount } = parseBody(target, body ?? {}, wallet.address)
      // USDC leaves through a relayer; without one (SETTLEMENT_MODE=facilitator) it would wait forever
      if (asset === 'USDC' && relayers.length === 0)
        throw appError('service_unavailable', {
          detail:
            'USDC withdrawals are sent by a settlement relayer and this deployment has none (RELAYER_PRIVATE_KEYS); ask the operator',
        })
      const requestHash = createHash('sha256')
        .update(
          JSON.stringify([wallet.source, wallet.address.toLowerCase(), to.toLowerCase(), asset, amount.toString()]),
        )
        .digest('hex')
      const prior = await existing(userId, idempotencyKey, requestHash)
      if (prior) return { withdrawal: withdrawalView(prior), replayed: true }
      const base: NewRow = {
        user_id: userId,
        agent_id: wallet.agentId,
        source: wallet.source,
        from_address: wallet.address,
        to_address: to,
        asset,
        amount: amount.toString(),
        idempotency_key: idempotencyKey,
        request_hash: requestHash,
        auth_nonce: null,
        valid_after: null,
        valid_before: null,
        signature: null,
      }
      const { w, created } =
        wallet.source === 'agent'
          ? await requestAgentUsdc(base, wallet.encryptedKey)
          : await requestFunding(base, wallet.encryptedKey)
      if (created)
        log.info(
          { withdrawal: w.id, from: w.from_address, to: w.to_address, amount: w.amount, asset: w.asset },
          'withdrawal requested',
        )
      return { withdrawal: withdrawalView(w), replayed: !created }
    },

    /** The user's withdrawal by id; 404 for another user's or an unknown one. */
    async get(userId: string, id: string): Promise<WithdrawalView> {
      if (!isUuid(id)) throw appError('not_found', { what: 'withdrawal' })
      const w = await db
        .selectFrom('withdrawals')
        .selectAll()
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .executeTakeFirst()
      if (!w) throw appError('not_found', { what: 'withdrawal' })
      return withdrawalView(w)
    },

    process,

    /** Works on every due pending withdrawal this process can lease (the worker's sweep). */
    async processDue(limit = 50): Promise<Array<{ id: string; status: WithdrawalStatus | undefined }>> {
      const due = await db
        .selectFrom('withdrawals')
        .select('id')
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', sql<Date>`now()`)
        .orderBy('next_attempt_at')
        .limit(limit)
        .execute()
      const out: Array<{ id: string; status: WithdrawalStatus | undefined }> = []
      for (const { id } of due) out.push({ id, status: await process(id) })
      return out
    },
  }
}

export type Withdrawals = ReturnType<typeof createWithdrawals>
