/**
 * An agent wallet's escrow accounts for the `deferred` scheme: per seller and asset it paid with
 * vouchers (agent_payments) or holds vouchers with (the voucher store), the balance, the amount
 * thawing and when it ends (read from the chain), and the vouchers not yet fully collected. And
 * `flush`: the escrow's flushWithAuthorization, signed with the custodial key and sent by a
 * relayer (the agent needs no gas) — it withdraws what finished thawing to the wallet and starts
 * thawing the rest.
 *
 * @example
 *   const escrows = new AgentEscrow({ db, redis, key, chain, escrow, chainId, relayerKeys, maxFeePerGasWei })
 *   const view = await escrows.overview(agent.address)
 *   await escrows.flush(agent.address, key, seller, usdc)
 */
import { randomBytes } from 'node:crypto'
import { sql, type Kysely } from 'kysely'
import { headsOf } from '../../schemes/deferred/voucher-store.js'
import { encodeFunctionData, getAddress, parseSignature, type Address, type Hex, type PublicClient } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { deferredEscrowAbi } from '../../schemes/deferred/escrow-abi.js'
import { flushAuthorizationTypedData } from '../../schemes/deferred/typed-data.js'
import { createRelayerLock, relayersFromKeys } from '../../chain/relayer.js'
import { relayerCall } from '../../chain/relayer-call.js'
import type { RedisClient } from '../../redis-client.js'
import { signDeposit } from '../../client/sign-deferred.js'
import { EscrowReader } from '../../schemes/deferred/escrow-reader.js'

const permitAbi = [
  {
    type: 'function',
    name: 'permit',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'deadline', type: 'uint256' },
      { name: 'v', type: 'uint8' },
      { name: 'r', type: 'bytes32' },
      { name: 's', type: 'bytes32' },
    ],
    outputs: [],
  },
] as const

export interface EscrowVoucherView {
  id: string
  nonce: string
  value_aggregate: string
  collected: string
  /** what the seller may still collect with it */
  outstanding: string
}

export interface EscrowAccountView {
  seller: string
  asset: string
  balance: string
  thawing_amount: string
  /** ISO time the thawing amount can be withdrawn; null when nothing thaws */
  thaw_ends_at: string | null
  /** the thawing amount can be withdrawn now (by the chain's clock) */
  withdrawable: boolean
  /** balance - thawing: what new vouchers can still draw on */
  available: string
  /** sum of the vouchers' outstanding */
  outstanding: string
  vouchers: EscrowVoucherView[]
}

export interface AgentEscrowDeps {
  db: Kysely<Database>
  redis: RedisClient
  key(...parts: string[]): string
  chain: PublicClient
  escrow: Address
  chainId: number
  relayerKeys: readonly Hex[]
  maxFeePerGasWei: bigint
}

/** The token fields a deposit's permit is signed over. */
export interface DepositAsset {
  address: string
  name: string
  version: string
}

export class AgentEscrow {
  /** this deployment's escrow contract, lower case */
  readonly escrow: Address
  readonly #deps: AgentEscrowDeps
  readonly #relayers: ReturnType<typeof relayersFromKeys>
  readonly #lock: ReturnType<typeof createRelayerLock>
  readonly #reader: EscrowReader

  constructor(deps: AgentEscrowDeps) {
    this.#deps = deps
    this.escrow = deps.escrow.toLowerCase() as Address
    this.#relayers = relayersFromKeys(deps.relayerKeys)
    this.#lock = createRelayerLock(deps.redis, deps.key)
    this.#reader = new EscrowReader(deps.chain, this.escrow, { ttlMs: 0 })
  }

  /** Every escrow account of `buyer` with this deployment's escrow. */
  async overview(buyer: string) {
    const b = buyer.toLowerCase()
    const accounts = await Promise.all((await this.#pairs(b)).map((p) => this.#account(b, p.seller, p.asset)))
    return { object: 'agent_escrow' as const, escrow: getAddress(this.escrow), address: getAddress(b), accounts }
  }

  /**
   * flushWithAuthorization for (buyer, seller, asset): withdraws what finished thawing, starts
   * thawing the rest. 409 `escrow_nothing_to_flush` when the account holds nothing.
   */
  async flush(buyer: string, privateKey: Buffer, seller: string, asset: string) {
    const { chain, chainId } = this.#deps
    const b = buyer.toLowerCase()
    const before = await this.#account(b, seller.toLowerCase(), asset.toLowerCase())
    if (before.balance === '0')
      throw appError(
        'invalid_parameter',
        {
          param: 'seller',
          detail: `the escrow holds nothing for this agent with seller ${getAddress(seller)}; nothing to thaw or withdraw`,
        },
        { details: { param: 'seller' } },
      )
    const signer = privateKeyToAccount(`0x${privateKey.toString('hex')}`)
    // expiry by the chain's clock, which the escrow checks
    const { timestamp } = await chain.getBlock({ blockTag: 'latest' })
    const auth = {
      buyer: getAddress(b),
      seller: getAddress(seller),
      asset: getAddress(asset),
      nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
      expiry: timestamp + 600n,
    }
    const signature = await signer.signTypedData(flushAuthorizationTypedData(auth, chainId, this.escrow))
    const data = encodeFunctionData({
      abi: deferredEscrowAbi,
      functionName: 'flushWithAuthorization',
      args: [auth, signature],
    })
    const hash = await this.#send(this.escrow, data, 'escrow call')
    const after = await this.#account(b, seller.toLowerCase(), asset.toLowerCase())
    const withdrawn = BigInt(before.balance) - BigInt(after.balance)
    return {
      object: 'agent_escrow_flush' as const,
      transaction: hash,
      withdrawn: withdrawn.toString(),
      account: after,
    }
  }

  /**
   * Deposits `amount` from the buyer's wallet for `seller`: a DepositAuthorization (and an EIP-2612
   * permit while the allowance is short) signed with the custodial key, executed by a relayer.
   * The caller has checked and reserved the wallet balance.
   */
  async deposit(buyer: string, privateKey: Buffer, seller: string, asset: DepositAsset, amount: bigint) {
    const b = getAddress(buyer)
    const signer = privateKeyToAccount(`0x${privateKey.toString('hex')}`)
    const a = await this.#reader.account(b, getAddress(seller), getAddress(asset.address))
    const { timestamp } = await this.#deps.chain.getBlock({ blockTag: 'latest' })
    const terms = {
      seller: getAddress(seller),
      asset: getAddress(asset.address),
      escrow: getAddress(this.escrow),
      chainId: this.#deps.chainId,
      token: { name: asset.name, version: asset.version },
      account: a,
    }
    const d = (await signDeposit(signer, terms, amount, Number(timestamp))) as {
      authorization: { nonce: Hex; expiry: number; signature: Hex }
      permit?: { deadline: number; signature: Hex }
    }
    const txs: Hex[] = []
    if (d.permit) txs.push(await this.#permit(b, terms.asset, amount, d.permit))
    const auth = {
      buyer: b,
      seller: terms.seller,
      asset: terms.asset,
      amount,
      nonce: d.authorization.nonce,
      expiry: BigInt(d.authorization.expiry),
    }
    txs.push(
      await this.#send(
        this.escrow,
        encodeFunctionData({
          abi: deferredEscrowAbi,
          functionName: 'depositWithAuthorization',
          args: [auth, d.authorization.signature],
        }),
        'deposit',
      ),
    )
    return {
      object: 'agent_escrow_deposit' as const,
      transactions: txs,
      deposited: amount.toString(),
      account: await this.#account(b.toLowerCase(), seller.toLowerCase(), asset.address.toLowerCase()),
    }
  }

  /** The buyer's EIP-2612 permit of `amount` to the escrow, sent by a relayer. */
  async #permit(owner: Address, token: Address, amount: bigint, permit: { deadline: number; signature: Hex }) {
    const sig = parseSignature(permit.signature)
    const data = encodeFunctionData({
      abi: permitAbi,
      functionName: 'permit',
      args: [
        owner,
        getAddress(this.escrow),
        amount,
        BigInt(permit.deadline),
        Number(sig.v ?? BigInt(sig.yParity + 27)),
        sig.r,
        sig.s,
      ],
    })
    return this.#send(token, data, 'permit')
  }

  /** One escrow-side call from a relayer; the errors say whether anything was sent. */
  async #send(to: Address, data: Hex, what: string): Promise<Hex> {
    const relayers = this.#relayers
    if (relayers.length === 0)
      throw appError('service_unavailable', { detail: 'no relayer is configured here to send the escrow call' })
    const { chain, chainId, maxFeePerGasWei } = this.#deps
    let r
    try {
      r = await relayerCall({ chain, chainId, maxFeePerGasWei, lock: this.#lock, relayers }, { to, data })
    } catch (err) {
      // the estimate reverted: nothing was sent
      throw appError('service_unavailable', {
        detail: `the ${what} would revert (${(err as Error).message.split('\n')[0]}); nothing was sent, retry shortly`,
      })
    }
    if (!r)
      throw appError(
        'service_unavailable',
        { detail: 'no relayer is free now; retry shortly' },
        { headers: { 'retry-after': '5' } },
      )
    if (r.status !== 'success')
      throw appError('service_unavailable', { detail: `the ${what} reverted (${r.hash}); retry shortly` })
    return r.hash
  }

  /** The (seller, asset) pairs this wallet has anything with: vouchers paid or stored. */
  async #pairs(buyer: string): Promise<Array<{ seller: string; asset: string }>> {
    const r = await sql<{ seller: string; asset: string }>`
      select pay_to as seller, asset from agent_payments where payer = ${buyer} and scheme = 'deferred'
      union
      select seller, asset from deferred_vouchers where buyer = ${buyer} and escrow = ${this.escrow}
      order by 1, 2`.execute(this.#deps.db)
    return r.rows
  }

  async #account(buyer: string, seller: string, asset: string): Promise<EscrowAccountView> {
    const { chain, db } = this.#deps
    const escrow = this.escrow
    const [a, block, heads] = await Promise.all([
      chain.readContract({
        address: escrow,
        abi: deferredEscrowAbi,
        functionName: 'getAccount',
        args: [buyer as Address, seller as Address, asset as Address],
      }),
      chain.getBlock({ blockTag: 'latest' }),
      // oldest first, as the store keeps them
      headsOf(db, { escrow, buyer, seller, asset })
        .select(['voucher_id', 'nonce', 'value_aggregate', 'collected', 'id'])
        .execute()
        .then((rows) => rows.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1))),
    ])
    const vouchers = heads
      .map((h) => ({
        id: h.voucher_id,
        nonce: String(h.nonce),
        value_aggregate: String(h.value_aggregate),
        collected: String(h.collected),
        outstanding: (BigInt(h.value_aggregate) - BigInt(h.collected)).toString(),
      }))
      .filter((v) => BigInt(v.outstanding) > 0n)
    return {
      seller: getAddress(seller),
      asset: getAddress(asset),
      balance: a.balance.toString(),
      thawing_amount: a.thawingAmount.toString(),
      thaw_ends_at: a.thawingAmount > 0n ? new Date(Number(a.thawEndTime) * 1000).toISOString() : null,
      withdrawable: a.thawingAmount > 0n && block.timestamp >= a.thawEndTime,
      available: (a.balance - a.thawingAmount).toString(),
      outstanding: vouchers.reduce((s, v) => s + BigInt(v.outstanding), 0n).toString(),
      vouchers,
    }
  }
}
