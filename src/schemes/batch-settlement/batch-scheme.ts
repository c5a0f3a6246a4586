/**
 * The x402 `batch-settlement` scheme on EVM (x402-foundation/x402
 * `specs/schemes/batch-settlement/scheme_batch_settlement_evm.md`): the buyer funds a channel in
 * the canonical `x402BatchSettlement` contract once and signs one cumulative voucher per call;
 * the server keeps the channel's state, charges each served call within the voucher's ceiling, and
 * claims the latest voucher of many channels later, in one transaction (the worker role).
 *
 * - requirement: `extra` with receiverAuthorizer (the platform's key), withdrawDelay and the
 *   token's EIP-712 name and version;
 * - verify (verify.ts, no I/O for an EOA voucher): the payload, rules 1 to 6, a deposit's
 *   authorization and the payer's balance (rule 8);
 * - reserve (reserve.ts): the cumulative amount and rules 7, 9, 10 against the channel's Redis
 *   state, and its lock, in one round trip; a stale amount gets the corrective 402
 *   (`channelState` + `voucherState`); a deposit is submitted before the call is served;
 * - served: the charge moves in Postgres with the payment row (the ledger's group commit), then in
 *   Redis; the receipt carries `chargedAmount` and `channelState` (and a deposit's transaction).
 */
import { getAddress, type Address, type PublicClient } from 'viem'
import type { SignerRecovery } from '../../chain/signer-recovery.js'
import type { Deps } from '../../deps.js'
import type { SchemeOffer } from '../../proxy/endpoint-table.js'
import type { NetworkV2, PaymentRequirementsV2 } from '../../x402/types.js'
import type { PaymentScheme } from '../scheme.js'
import type { SmartWalletCheck } from '../smart-wallet-check.js'
import { createChannelState } from './channel-state.js'
import { createChannelStore } from './channel-store.js'
import type { BatchContext, BatchPayment } from './context.js'
import { createDepositExecutor } from './deposit.js'
import { reserveBatch } from './reserve.js'
import { batchDomainSeparator } from './typed-data.js'
import { verifyBatch } from './verify.js'

export function createBatchSettlementScheme(
  deps: Deps,
  opts: {
    recovery: SignerRecovery
    smartWallets: SmartWalletCheck
    /** the platform key that authorizes claims and refunds */
    receiverAuthorizer: Address
    /** seconds (900 to 2,592,000) */
    withdrawDelay: number
  },
): PaymentScheme {
  const { config } = deps
  const store = createChannelStore(deps.db)
  const x: BatchContext = {
    config,
    chain: deps.chain as PublicClient,
    domain: batchDomainSeparator(config.chain.chainId),
    state: createChannelState(deps),
    store,
    deposits: createDepositExecutor(deps, store),
    recovery: opts.recovery,
    smartWallets: opts.smartWallets,
    receiverAuthorizer: opts.receiverAuthorizer.toLowerCase() as Address,
    withdrawDelay: opts.withdrawDelay,
  }
  return {
    name: 'batch-settlement',
    requirement(offer: SchemeOffer): PaymentRequirementsV2 {
      return {
        scheme: 'batch-settlement',
        network: config.chain.caip2 as NetworkV2,
        amount: offer.amount.toString(),
        asset: getAddress(config.chain.usdc.address),
        payTo: getAddress(offer.payTo),
        maxTimeoutSeconds: offer.maxTimeoutSeconds,
        extra: {
          receiverAuthorizer: getAddress(x.receiverAuthorizer),
          withdrawDelay: x.withdrawDelay,
          name: config.chain.usdc.name,
          version: config.chain.usdc.version,
        },
      }
    },
    verify: (envelope, challenge, ctx) => verifyBatch(x, envelope, challenge, ctx),
    reserve: (payment, ctx) => reserveBatch(x, payment as BatchPayment, ctx),
  }
}
