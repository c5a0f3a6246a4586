/**
 * A `deferred` payload's optional `deposit` (coinbase/x402 `scheme_deferred_evm.md`, "Verification"
 * 6 and "Settlement" 1): checked, then executed on chain before the voucher is accepted — the
 * EIP-2612 `permit` first when there is one, then the escrow's `depositWithAuthorization` — from a
 * settlement relayer, so the buyer needs no gas. Without relayer keys in this process the deposit
 * is refused (`invalid_deferred_evm_payload_deposit_unsupported`).
 */
import { encodeFunctionData, parseSignature, recoverTypedDataAddress, type Address, type PublicClient } from 'viem'
import type { SchemeDeps } from '../scheme-deps.js'
import { createRelayerLock, relayersFromKeys, type Relayer } from '../../chain/relayer.js'
import { relayerCall } from '../../chain/relayer-call.js'
import { refuse, type Refusal } from '../../x402/reasons.js'
import type { DeferredDeposit } from './decode-payload.js'
import { deferredEscrowAbi } from './escrow-abi.js'
import { permitTypedData, type DeferredVoucher } from './typed-data.js'

const tokenAbi = [
  {
    type: 'function',
    name: 'nonces',
    stateMutability: 'view',
    inputs: [{ name: 'owner', type: 'address' }],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'allowance',
    stateMutability: 'view',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
    ],
    outputs: [{ name: '', type: 'uint256' }],
  },
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

const invalid = (detail: string): Refusal => refuse('invalid_deferred_evm_payload_deposit', detail)

export class DepositExecutor {
  readonly #chain: PublicClient
  readonly #escrow: Address
  readonly #chainId: number
  readonly #maxFeePerGasWei: bigint
  readonly #relayers: Relayer[]
  readonly #lock: ReturnType<typeof createRelayerLock>

  constructor(deps: Pick<SchemeDeps, 'chain' | 'config' | 'redis' | 'key'>, escrow: Address) {
    this.#chain = deps.chain
    this.#escrow = escrow
    this.#chainId = deps.config.chain.chainId
    this.#maxFeePerGasWei = deps.config.settlement.maxFeePerGasWei
    this.#relayers = relayersFromKeys(deps.config.relayerKeys)
    this.#lock = createRelayerLock(deps.redis, deps.key)
  }

  /** The spec's deposit checks; undefined when the deposit may be executed. Rejects when the chain cannot be read. */
  async check(d: DeferredDeposit, v: DeferredVoucher, nowSeconds: number): Promise<Refusal | undefined> {
    if (this.#relayers.length === 0)
      return refuse('invalid_deferred_evm_payload_deposit_unsupported', 'no relayer is configured here')
    const a = d.authorization
    if (a.buyer !== v.buyer || a.seller !== v.seller || a.asset !== v.asset)
      return invalid("deposit.authorization buyer, seller and asset must be the voucher's")
    if (a.amount === 0n) return invalid('deposit.authorization.amount must be positive')
    if (a.expiry <= BigInt(nowSeconds)) return invalid(`deposit.authorization expired at ${a.expiry}`)
    const auth = {
      buyer: a.buyer,
      seller: a.seller,
      asset: a.asset,
      amount: a.amount,
      nonce: a.nonce,
      expiry: a.expiry,
    }
    const [used, valid] = await Promise.all([
      this.#chain.readContract({
        address: this.#escrow,
        abi: deferredEscrowAbi,
        functionName: 'isNonceUsed',
        args: [a.buyer, a.nonce],
      }),
      this.#chain.readContract({
        address: this.#escrow,
        abi: deferredEscrowAbi,
        functionName: 'isDepositAuthorizationValid',
        args: [auth, a.signature],
      }),
    ])
    if (used)
      return invalid(
        `deposit.authorization.nonce ${a.nonce} was already used; sign a new one (or send the voucher without deposit)`,
      )
    if (!valid) return invalid("deposit.authorization.signature is not the buyer's (EIP-712, the escrow's domain)")
    return d.permit ? this.#checkPermit(d.permit, a.amount, v, nowSeconds) : undefined
  }

  /** The spec's checks of a deposit's EIP-2612 permit. */
  async #checkPermit(
    p: NonNullable<DeferredDeposit['permit']>,
    amount: bigint,
    v: DeferredVoucher,
    nowSeconds: number,
  ): Promise<Refusal | undefined> {
    if (p.owner !== v.buyer) return invalid('deposit.permit.owner must be the buyer')
    if (p.spender !== this.#escrow) return invalid('deposit.permit.spender must be the escrow')
    if (p.value < amount) return invalid('deposit.permit.value must cover deposit.authorization.amount')
    if (p.deadline <= BigInt(nowSeconds)) return invalid(`deposit.permit expired at ${p.deadline}`)
    const nonce = await this.#chain.readContract({
      address: v.asset,
      abi: tokenAbi,
      functionName: 'nonces',
      args: [p.owner],
    })
    if (p.nonce !== nonce)
      return invalid(`deposit.permit.nonce must be the asset's current nonce for the owner, ${nonce}`)
    const message = { owner: p.owner, spender: p.spender, value: p.value, nonce: p.nonce, deadline: p.deadline }
    const signer = await recoverTypedDataAddress({
      ...permitTypedData(message, {
        name: p.domain.name,
        version: p.domain.version,
        chainId: this.#chainId,
        address: v.asset,
      }),
      signature: p.signature,
    }).catch(() => null)
    if (signer?.toLowerCase() !== p.owner)
      return invalid("deposit.permit.signature is not the owner's (EIP-2612, the asset's domain)")
    return undefined
  }

  /** Executes a checked deposit: the permit (when the allowance is short), then depositWithAuthorization. */
  async execute(d: DeferredDeposit): Promise<Refusal | undefined> {
    const ctx = {
      chain: this.#chain,
      chainId: this.#chainId,
      maxFeePerGasWei: this.#maxFeePerGasWei,
      lock: this.#lock,
      relayers: this.#relayers,
    }
    const a = d.authorization
    const p = d.permit
    if (p) {
      const allowance = await this.#chain.readContract({
        address: a.asset,
        abi: tokenAbi,
        functionName: 'allowance',
        args: [a.buyer, this.#escrow],
      })
      if (allowance < a.amount) {
        const sig = parseSignature(p.signature)
        const data = encodeFunctionData({
          abi: tokenAbi,
          functionName: 'permit',
          args: [p.owner, p.spender, p.value, p.deadline, Number(sig.v ?? BigInt(sig.yParity + 27)), sig.r, sig.s],
        })
        const r = await relayerCall(ctx, { to: a.asset, data })
        if (!r)
          return refuse('invalid_deferred_evm_payload_deposit_unsupported', 'no relayer is free now; retry shortly')
        if (r.status !== 'success') return invalid(`the permit reverted on chain (${r.hash})`)
      }
    }
    const auth = {
      buyer: a.buyer,
      seller: a.seller,
      asset: a.asset,
      amount: a.amount,
      nonce: a.nonce,
      expiry: a.expiry,
    }
    const data = encodeFunctionData({
      abi: deferredEscrowAbi,
      functionName: 'depositWithAuthorization',
      args: [auth, a.signature],
    })
    let r
    try {
      r = await relayerCall(ctx, { to: this.#escrow, data })
    } catch (err) {
      // the estimate reverted: a concurrent call with the same deposit may have executed it first
      if (await this.#used(a.buyer, a.nonce)) return undefined
      return invalid(`depositWithAuthorization would revert: ${(err as Error).message.split('\n')[0]}`)
    }
    if (!r) return refuse('invalid_deferred_evm_payload_deposit_unsupported', 'no relayer is free now; retry shortly')
    if (r.status !== 'success' && !(await this.#used(a.buyer, a.nonce)))
      return invalid(`depositWithAuthorization reverted on chain (${r.hash})`)
    return undefined
  }

  #used(buyer: Address, nonce: `0x${string}`): Promise<boolean> {
    return this.#chain.readContract({
      address: this.#escrow,
      abi: deferredEscrowAbi,
      functionName: 'isNonceUsed',
      args: [buyer, nonce],
    })
  }
}
