/**
 * What the `exact` scheme's stages share (exact-scheme.ts builds it once per proxy), and the
 * payment `verify` hands to `reserve`.
 */
import type { SignerRecovery } from '../../chain/signer-recovery.js'
import type { PayerCredit } from '../../ledger/payer-credit.js'
import type { VerifiedPayment } from '../scheme.js'
import type { SchemeDeps } from '../scheme-deps.js'
import type { SmartWalletCheck } from '../smart-wallet-check.js'
import type { createBalanceReader } from './balance-reader.js'

export interface ExactContext {
  config: SchemeDeps['config']
  credit: PayerCredit
  recovery: SignerRecovery
  smartWallets: SmartWalletCheck
  /** the USDC's EIP-712 domain separator */
  domainSeparator: Uint8Array
  balances: ReturnType<typeof createBalanceReader>
}

/** An exact payment after `verify`: the signature and, for a smart wallet, what its RPC check needs. */
export interface ExactPayment extends VerifiedPayment {
  readonly smartWallet: { digest: Uint8Array; signature: `0x${string}` } | undefined
}
