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
 *   Redis; the receipt carries `chargedAmount` and `channelState` (and a deposit's transaction);
 * - operate (operate.ts, refund.ts): a `refund` payload is a payment operation, not a paid call: the
 *   charged amount claimed and the rest (or the partial amount asked) refunded to the payer in one
 *   transaction signed by the receiverAuthorizer key; the receipt carries the refund's transaction,
 *   the amount refunded and the channel after it.
 */
import { getAddress, type Address, type PublicClient } from 'viem'
import type { AuthorizerSigner } from '../../chain/batch-settlement/authorizer.js'
import type { SignerRecovery } from '../../chain/signer-recovery.js'
import type { SchemeDeps as Deps } from '../scheme-deps.js'
import type { SchemeOffer } from '../../seam/types.js'
import type { NetworkV2, PaymentRequirementsV2 } from '../../x402/types.js'
import type { PaymentScheme } from '../scheme.js'
import type { SmartWalletCheck } from '../smart-wallet-check.js'
import { ChannelState } from './channel-state.js'
import { createChannelStore } from './channel-store.js'
import type { BatchContext, BatchPayment } from './context.js'
import { DepositExecutor } from './deposit.js'
import { operateBatch } from './operate.js'
import { createRefundExecutor } from './refund.js'
import { load, reserveBatch } from './reserve.js'
import { batchDomainSeparator } from './typed-data.js'
import { verifyBatch } from './verify.js'

export function createBatchSettlementScheme(
  deps: Deps,
  opts: {
    recovery: SignerRecovery
    smartWallets: SmartWalletCheck
    /** the platform key that authorizes claims and refunds */
    receiverAuthorizer: AuthorizerSigner
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
    state: new ChannelState(deps),
    store,
    deposits: new DepositExecutor(deps, store),
    recovery: opts.recovery,
    smartWallets: opts.smartWallets,
    receiverAuthorizer: opts.receiverAuthorizer.address.toLowerCase() as Address,
    withdrawDelay: opts.withdrawDelay,
  }
  const refunds = createBatchRefunds(deps, x, opts.receiverAuthorizer)
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
    operate: (payment, ctx) => operateBatch(refunds, payment as BatchPayment, ctx),
  }
}

/**
 * The cooperative refund of this platform's channels (refund.ts), for the proxy's `refund` payloads
 * and for the agent wallets' own refunds (src/services/agent-payments/agent-channel-refunds.ts).
 */
export function createBatchRefunds(
  deps: Deps,
  x: Pick<BatchContext, 'config' | 'chain' | 'state' | 'store'>,
  signer: AuthorizerSigner,
) {
  return createRefundExecutor(
    {
      ...x,
      config: deps.config,
      redis: deps.redis,
      key: deps.key,
      load: async (channelId, config, log) => {
        const r = await load(x, { channelId, type: 'refund', config }, log)
        if (typeof r === 'boolean') return r
        return { ok: false, reason: 'invalid_batch_settlement_evm_channel_state_read_failed', detail: 'retry shortly' }
      },
    },
    signer,
  )
}

/** The Redis and Postgres sides of this platform's channels (what the refunds of agent wallets need). */
export function batchChannelSides(deps: Deps) {
  return {
    config: deps.config,
    chain: deps.chain as PublicClient,
    state: new ChannelState(deps),
    store: createChannelStore(deps.db),
  }
}
