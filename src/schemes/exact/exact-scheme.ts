/**
 * The `exact` scheme on EVM: an EIP-3009 `transferWithAuthorization` signed by the payer for the
 * endpoint's price, verified locally (EIP-712 digest + native secp256k1 recovery; ERC-1271 /
 * ERC-6492 through RPC for smart wallets), reserved against the payer's cached balance minus its
 * unsettled exposure in one Redis round trip, and settled later in Multicall3 batches
 * (`settlement`, ./settlement.ts, run by src/services/settlement/).
 * verify and reserve are module functions over an `ExactContext` (./verify.ts, ./reserve.ts).
 */
import type { SignerRecovery } from '../../chain/signer-recovery.js'
import { makeDomainSeparator } from '../../chain/transfer-auth-digest.js'
import type { PayerCredit } from '../../ledger/payer-credit.js'
import type { PaymentScheme } from '../scheme.js'
import type { SchemeDeps } from '../scheme-deps.js'
import type { SmartWalletCheck } from '../smart-wallet-check.js'
import { createBalanceReader } from './balance-reader.js'
import type { ExactContext, ExactPayment } from './context.js'
import { reserveExact } from './reserve.js'
import { exactSettlement } from './settlement.js'
import { verifyExact } from './verify.js'

export function createExactScheme(
  deps: Pick<SchemeDeps, 'config' | 'chain'>,
  opts: { credit: PayerCredit; recovery: SignerRecovery; smartWallets: SmartWalletCheck },
): PaymentScheme {
  const { config } = deps
  const x: ExactContext = {
    config,
    credit: opts.credit,
    recovery: opts.recovery,
    smartWallets: opts.smartWallets,
    domainSeparator: makeDomainSeparator({
      name: config.chain.usdc.name,
      version: config.chain.usdc.version,
      chainId: config.chain.chainId,
      verifyingContract: config.chain.usdc.address,
    }),
    balances: createBalanceReader(deps, opts.credit),
  }
  return {
    name: 'exact',
    settlement: exactSettlement,
    verify: (envelope, challenge, ctx) => verifyExact(x, envelope, challenge, ctx),
    reserve: (payment, ctx) => reserveExact(x, payment as ExactPayment, ctx),
  }
}
