/**
 * The `deferred` scheme on EVM (coinbase/x402 `scheme_deferred_evm.md`): the buyer signs an
 * EIP-712 voucher whose `valueAggregate` grows by the price with each call, against funds it
 * deposited in the escrow (DeferredPaymentEscrow) for the seller. Nothing moves on chain per call:
 * the voucher is stored (voucher-store.ts) and the latest of each voucher id is collected later in
 * one `collectMany` (src/services/deferred-collect/).
 *
 * - requirement: `extra` with `escrow`, `name`, `version`, `voucherStorage: "server"`; for a buyer
 *   named by `PAYER-IDENTIFIER`, also its `account` and its latest `voucher` and `signature`;
 * - verify: the payload's shape, the requirement match (network, seller = payTo, asset, escrow,
 *   chainId) and the voucher's signature (ECDSA, or ERC-1271 through RPC for a contract buyer);
 * - reserve: the aggregation rules and the escrow balance, checked and reserved atomically in one
 *   Redis round trip (voucher-heads.ts); the voucher is written durably with the call's payment row
 *   (the ledger's group commit), and `release()` gives the reservation back.
 *
 * A payload's `deposit` is checked in verify and executed in reserve, before the voucher counts
 * (deposit.ts: the permit, then depositWithAuthorization, from a settlement relayer).
 * The stages are in requirement.ts, verify.ts and reserve.ts, over the context of context.ts.
 */
import type { Address } from 'viem'
import type { SignerRecovery } from '../../chain/signer-recovery.js'
import type { PaymentScheme } from '../scheme.js'
import type { SchemeDeps } from '../scheme-deps.js'
import type { DeferredContext, DeferredPayment } from './context.js'
import { DepositExecutor } from './deposit.js'
import { EscrowReader } from './escrow-reader.js'
import { watchEscrowAccounts } from './escrow-watch.js'
import { deferredForPayer, deferredRequirement } from './requirement.js'
import { reserveDeferred } from './reserve.js'
import { verifyDeferred } from './verify.js'
import { voucherDomainSeparator } from './voucher-digest.js'
import { createVoucherHeads, type VoucherHeads } from './voucher-heads.js'
import { createVoucherStore, type VoucherStore } from './voucher-store.js'

export { DEFERRED_NO_EXPIRY, voucherJson } from './context.js'

export interface DeferredScheme extends PaymentScheme {
  readonly escrow: Address
  readonly store: VoucherStore
  readonly heads: VoucherHeads
}

interface DeferredSchemeOptions {
  recovery: SignerRecovery
  escrow: Address
  balanceTtlMs?: number
  /** how long an account older than the ttl is still served while one read refreshes it (default 30 s) */
  maxStaleMs?: number
  /** watch the escrow's events and drop the accounts they change (default true) */
  watch?: boolean
}

export function createDeferredScheme(deps: SchemeDeps, opts: DeferredSchemeOptions): DeferredScheme {
  const { config } = deps
  const escrow = opts.escrow.toLowerCase() as Address
  const chainId = BigInt(config.chain.chainId)
  const store = createVoucherStore(deps.db)
  const heads = createVoucherHeads(deps)
  // a balance older than 2 s is served while one read refreshes it (escrow-reader.ts says why that is safe)
  const reader = new EscrowReader(deps.chain, escrow, {
    ttlMs: opts.balanceTtlMs,
    maxStaleMs: opts.maxStaleMs ?? 30_000,
  })
  const x: DeferredContext = {
    config,
    chain: deps.chain,
    escrow,
    chainId,
    domainSeparator: voucherDomainSeparator(chainId, escrow),
    store,
    heads,
    reader,
    deposits: new DepositExecutor(deps, escrow),
    recovery: opts.recovery,
  }
  // a thaw, withdrawal, flush or collection drops the cached account: the next voucher reads it fresh
  const unwatch =
    opts.watch === false
      ? undefined
      : watchEscrowAccounts(deps.chain, escrow, {
          pollMs: config.deferred.watchEveryMs,
          onEvents: (events) => {
            for (const e of events) reader.forget(e.buyer, e.seller, e.asset)
          },
          onError: () => {},
        })

  return {
    name: 'deferred',
    escrow,
    store,
    heads,
    async close() {
      unwatch?.()
      await heads.close()
    },
    requirement: (offer) => deferredRequirement(x, offer),
    forPayer: (requirement, payer, log) => deferredForPayer(x, requirement, payer, log),
    verify: (envelope, challenge, ctx) => verifyDeferred(x, envelope, challenge, ctx),
    reserve: (payment, ctx) => reserveDeferred(x, payment as DeferredPayment, ctx),
  }
}
