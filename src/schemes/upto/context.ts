/**
 * What the `upto` scheme's stages share (upto-scheme.ts builds it once per proxy), and the payment
 * `verify` hands to `reserve`, and the refusals both give.
 */
import type { Hex } from 'viem'
import type { SignerRecovery } from '../../chain/signer-recovery.js'
import { appError } from '../../errors.js'
import type { PayerCredit } from '../../ledger/payer-credit.js'
import { CallRefusal } from '../../seam/types.js'
import { refuse } from '../../x402/reasons.js'
import type { VerifiedPayment } from '../scheme.js'
import type { SchemeDeps } from '../scheme-deps.js'
import type { SmartWalletCheck } from '../smart-wallet-check.js'
import type { createBalanceReader } from '../exact/balance-reader.js'
import type { UptoAuthorization } from './payload.js'

export interface UptoContext {
  config: SchemeDeps['config']
  chain: SchemeDeps['chain']
  credit: PayerCredit
  recovery: SignerRecovery
  smartWallets: SmartWalletCheck
  /** our relayers, lower case: any of them settles what names it */
  ours: ReadonlySet<string>
  balances: ReturnType<typeof createBalanceReader>
  /** payer → Permit2 allowance of the configured USDC, when it was read, and the maxima reserved on it since */
  allowances: Map<string, { value: bigint; at: number; used: bigint }>
}

export interface UptoPayment extends VerifiedPayment {
  readonly authorization: UptoAuthorization
  /** for a smart wallet, what its RPC check needs */
  readonly smartWallet: { digest: Uint8Array; signature: Hex } | undefined
}

export const fail = (reason: Parameters<typeof refuse>[0], detail?: string) =>
  CallRefusal.fromX402(refuse(reason, detail))

export const retryShortly = (detail: string) =>
  CallRefusal.error(appError('service_unavailable', { detail }, { headers: { 'retry-after': '1' } }))
