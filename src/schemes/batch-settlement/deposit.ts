/**
 * A `batch-settlement` deposit (the spec's `deposit` payload, ERC-3009 path): checked before the
 * call is reserved (the authorization's window, its `receiveWithAuthorization` signature by the
 * payer to the canonical collector with the nonce bound to the channel, its key's or, for a smart
 * wallet, one its contract accepts through ERC-1271 as the token will, and the payer's token
 * balance: rule 8), then submitted by one of the platform's relayers while the channel is locked,
 * before the call is served. The transaction is recorded in `batch_transactions` (kind `deposit`)
 * before it is broadcast and moved as it goes. A deposit that fails leaves the call refused with
 * nothing served or charged.
 */
import {
  encodeAbiParameters,
  getAddress,
  hashTypedData,
  hexToBytes,
  keccak256,
  recoverAddress,
  type Hex,
  type PublicClient,
} from 'viem'
import type { ContractSignatureCheck } from '../../chain/contract-signature.js'
import { CallRefusal } from '../../seam/types.js'
import type { SchemeDeps as Deps } from '../scheme-deps.js'
import { createRelayerLock, relayersFromKeys, type Relayer } from '../../chain/relayer.js'
import { relayerCall } from '../../chain/relayer-call.js'
import type { ReasonCode } from '../../x402/reasons.js'
import { readChannel, type OnchainChannel } from '../../chain/batch-settlement/channel.js'
import { depositCalldata, tokenBalance } from './chain.js'
import type { ChannelStore } from './channel-store.js'
import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR } from './constants.js'
import type { Erc3009Deposit } from './payload.js'
import type { ChannelConfig } from './typed-data.js'

const RECEIVE_TYPES = {
  ReceiveWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const

export interface DepositRefusal {
  reason: ReasonCode
  detail: string
}

/** The ERC-3009 nonce of a channel deposit: keccak256(abi.encode(channelId, salt)). */
export function depositNonce(channelId: Hex, salt: bigint): Hex {
  return keccak256(encodeAbiParameters([{ type: 'bytes32' }, { type: 'uint256' }], [channelId, salt]))
}

/**
 * The payer contract's answer (ERC-1271, src/schemes/smart-wallet-check.ts) for a digest and a
 * signature that is not the payer's key's; a refusal when it could not be asked now.
 */
export type PayerWalletCheck = (digest: Uint8Array, signature: Hex) => Promise<ContractSignatureCheck | CallRefusal>

const NOT_THE_PAYERS =
  'it must be signed by channelConfig.payer, to the ERC-3009 deposit collector, nonce bound to the channel'

const badSignature = (detail: string): DepositRefusal => ({
  reason: 'invalid_batch_settlement_evm_receive_authorization_signature',
  detail,
})

// r, s and v: a signature of this length is tried as a key's first
const ECDSA_HEX_LENGTH = 2 + 65 * 2

const failed = (detail: string): DepositRefusal => ({
  reason: 'invalid_batch_settlement_evm_deposit_transaction_failed',
  detail,
})

/** Checks channel deposits and submits them through the platform's relayers. */
export class DepositExecutor {
  readonly #config: Deps['config']
  readonly #chain: PublicClient
  readonly #relayers: Relayer[]
  readonly #lock: ReturnType<typeof createRelayerLock>
  readonly #store: ChannelStore

  constructor(deps: Pick<Deps, 'chain' | 'config' | 'redis' | 'key'>, store: ChannelStore) {
    this.#config = deps.config
    this.#chain = deps.chain as PublicClient
    this.#relayers = relayersFromKeys(deps.config.relayerKeys)
    this.#lock = createRelayerLock(deps.redis, deps.key)
    this.#store = store
  }

  /**
   * The deposit's own checks; undefined when it may be submitted. The authorization must be the
   * payer's: its key's signature, or, for a smart-wallet payer, one its contract accepts (ERC-1271,
   * as USDC checks a contract `from`; `askWallet`). Rejects when the chain cannot be read.
   */
  async check(
    c: ChannelConfig,
    channelId: Hex,
    d: Erc3009Deposit,
    window: { nowSeconds: number; minValidSeconds: number },
    askWallet: PayerWalletCheck,
  ): Promise<DepositRefusal | CallRefusal | undefined> {
    const { nowSeconds, minValidSeconds } = window
    if (this.#relayers.length === 0)
      return { reason: 'invalid_batch_settlement_evm_deposit_transaction_failed', detail: 'no relayer is configured' }
    if (d.validAfter > BigInt(nowSeconds))
      return { reason: 'invalid_batch_settlement_evm_payload_authorization_valid_after', detail: `${d.validAfter}` }
    if (d.validBefore < BigInt(nowSeconds + minValidSeconds))
      return {
        reason: 'invalid_batch_settlement_evm_payload_authorization_valid_before',
        detail: `validBefore must be at least ${minValidSeconds} s ahead`,
      }
    const unsigned = await this.#signatureRefusal(c, channelId, d, askWallet)
    if (unsigned) return unsigned
    const held = await tokenBalance(this.#chain, c.token, c.payer)
    if (held < d.amount)
      return {
        reason: 'invalid_batch_settlement_evm_insufficient_balance',
        detail: `holds ${held}, deposits ${d.amount}`,
      }
    return undefined
  }

  /**
   * undefined when the payer signed the deposit's `receiveWithAuthorization` to the collector: its
   * key, or its wallet asked (a signature longer than 65 bytes, or one that recovers to another key)
   */
  async #signatureRefusal(
    c: ChannelConfig,
    channelId: Hex,
    d: Erc3009Deposit,
    askWallet: PayerWalletCheck,
  ): Promise<DepositRefusal | CallRefusal | undefined> {
    const digest = this.#digest(c, channelId, d)
    const long = d.signature.length > ECDSA_HEX_LENGTH
    const signer = long ? undefined : await recoverAddress({ hash: digest, signature: d.signature }).catch(() => null)
    if (signer?.toLowerCase() === c.payer) return undefined
    if (signer === null) return badSignature(NOT_THE_PAYERS)
    const answer = await askWallet(hexToBytes(digest), d.signature)
    if (answer instanceof CallRefusal) return answer
    if (answer === 'valid') return undefined
    return badSignature(answer === 'invalid' ? 'the payer wallet did not accept it (ERC-1271)' : NOT_THE_PAYERS)
  }

  /** The EIP-712 digest of the deposit's `receiveWithAuthorization` to the collector. */
  #digest(c: ChannelConfig, channelId: Hex, d: Erc3009Deposit): Hex {
    const config = this.#config
    return hashTypedData({
      domain: {
        name: config.chain.usdc.name,
        version: config.chain.usdc.version,
        chainId: config.chain.chainId,
        verifyingContract: getAddress(c.token),
      },
      types: RECEIVE_TYPES,
      primaryType: 'ReceiveWithAuthorization',
      message: {
        from: getAddress(c.payer),
        to: getAddress(ERC3009_DEPOSIT_COLLECTOR),
        value: d.amount,
        validAfter: d.validAfter,
        validBefore: d.validBefore,
        nonce: depositNonce(channelId, d.salt),
      },
    })
  }

  /** Submits the deposit and waits for it; the channel as it is on chain after it, or the refusal. */
  async execute(
    c: ChannelConfig,
    channelId: Hex,
    d: Erc3009Deposit,
  ): Promise<{ txHash: Hex; channel: OnchainChannel } | DepositRefusal> {
    const config = this.#config
    const chain = this.#chain
    const store = this.#store
    const id = await store.depositPending({
      network: config.chain.caip2,
      contract: BATCH_SETTLEMENT_ADDRESS,
      channelId,
      amount: d.amount,
    })
    let r
    try {
      r = await relayerCall(
        {
          chain,
          chainId: config.chain.chainId,
          maxFeePerGasWei: config.settlement.maxFeePerGasWei,
          lock: this.#lock,
          relayers: this.#relayers,
        },
        { to: getAddress(BATCH_SETTLEMENT_ADDRESS), data: depositCalldata(c, d) },
      )
    } catch (err) {
      const msg = (err as Error).message.split('\n')[0] ?? 'unknown'
      await store.depositMoved(id, { status: 'dropped', error: msg }).catch(() => {})
      return failed(`the deposit would revert: ${msg}`)
    }
    if (!r) {
      await store.depositMoved(id, { status: 'dropped', error: 'no relayer free' }).catch(() => {})
      return failed('no relayer is free now; retry shortly')
    }
    if (r.status !== 'success') {
      await store.depositMoved(id, { status: 'reverted', txHash: r.hash })
      return failed(`the deposit reverted on chain (${r.hash})`)
    }
    await store.depositMoved(id, { status: 'confirmed', txHash: r.hash })
    return { txHash: r.hash, channel: await readChannel(chain, channelId) }
  }
}
