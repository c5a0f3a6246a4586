import type { Address, Hex, PublicClient } from 'viem'
import type { SignerRecovery } from '../../chain/signer-recovery.js'
import type { Config } from '../../config.js'
import type { VerifiedPayment } from '../scheme.js'
import type { SmartWalletCheck } from '../smart-wallet-check.js'
import type { ChannelState } from './channel-state.js'
import type { ChannelStore } from './channel-store.js'
import type { DepositExecutor } from './deposit.js'
import type { BatchPayload } from './payload.js'

/** What the scheme's stages share (batch-scheme.ts builds it once per proxy). */
export interface BatchContext {
  config: Pick<Config, 'chain'>
  chain: PublicClient
  /** the x402 Batch Settlement EIP-712 domain separator of this chain */
  domain: Uint8Array
  state: ChannelState
  store: ChannelStore
  deposits: DepositExecutor
  recovery: SignerRecovery
  smartWallets: SmartWalletCheck
  /** lower-case */
  receiverAuthorizer: Address
  withdrawDelay: number
}

/** A `batch-settlement` payment after `verify`. */
export interface BatchPayment extends VerifiedPayment {
  readonly batch: BatchPayload
  readonly digest: Hex
}
