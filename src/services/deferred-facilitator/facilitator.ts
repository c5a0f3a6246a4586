/**
 * The deferred scheme's facilitator (edgeandnode/x402 scheme_deferred_evm_facilitator.md) for this
 * platform's escrow and chain, as a service (deps.services.deferredFacilitator) the routes in
 * src/http/routes/deferred/facilitator.ts call: one operation per file in ops/, each taking the
 * request's raw parts and answering `{status, body, headers?}` in the spec's shapes.
 *
 * Because this facilitator is the platform's, a voucher is stored only for a seller that offers
 * `deferred` on one of its enabled endpoints here, and a settle, which spends a relayer's gas,
 * sends a transaction only when the escrow can pay something for the voucher and at most once per
 * voucher id per SETTLE_INTERVAL_MS. Every read is fresh (a route, not the hot path): no cache, so
 * nothing to watch.
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Address } from 'viem'
import type { Logger } from 'pino'
import type { CoreDeps } from '../../core-deps.js'
import { createRelayerLock, relayersFromKeys } from '../../chain/relayer.js'
import { createSignerRecovery } from '../../chain/signer-recovery.js'
import { createDeferredScheme } from '../../schemes/deferred/deferred-scheme.js'
import { EscrowReader } from '../../schemes/deferred/escrow-reader.js'
import { createVoucherStore } from '../../schemes/deferred/voucher-store.js'
import { DeferredCollector } from '../deferred-collect/collector.js'
import type { FacilitatorContext } from './context.js'
import { flush } from './ops/flush.js'
import { availableVoucher, buyerAccount, storedVoucher } from './ops/read.js'
import { settleVoucher } from './ops/settle.js'
import { storeVoucher } from './ops/store-voucher.js'

/** Throws when the deployment has no deferred escrow (DEFERRED_ESCROW_ADDRESS): the routes are not registered then. */
export function createDeferredFacilitator(deps: CoreDeps, opts: { logger: Pick<Logger, 'info' | 'warn' | 'error'> }) {
  const configured = deps.config.deferredEscrowAddress
  if (!configured) throw new Error('the deferred facilitator needs config.deferredEscrowAddress')
  const escrow = configured.toLowerCase() as Address
  // the proxy's own verify and reserve, in this process
  const recovery = createSignerRecovery({ threads: 0 })
  const ctx: FacilitatorContext = {
    deps,
    escrow,
    chainId: deps.config.chain.chainId,
    reader: new EscrowReader(deps.chain, escrow, { ttlMs: 0 }),
    store: createVoucherStore(deps.db),
    relayers: relayersFromKeys(deps.config.relayerKeys),
    lock: createRelayerLock(deps.redis, deps.key),
    scheme: createDeferredScheme(deps, { recovery, escrow, balanceTtlMs: 0, maxStaleMs: 0, watch: false }),
    collector: new DeferredCollector(deps, { escrow, log: opts.logger }),
  }
  return {
    /** GET /deferred/buyers/:buyer: the escrow account and latest voucher for a seller */
    account: (buyer: string, query: Record<string, string | undefined>) => buyerAccount(ctx, buyer, query),
    /** GET /deferred/vouchers/available/:buyer/:seller */
    available: (buyer: string, seller: string) => availableVoucher(ctx, buyer, seller),
    /** GET /deferred/vouchers/:id/:nonce */
    voucher: (id: string, nonce: string) => storedVoucher(ctx, id, nonce),
    /** POST /deferred/buyers/:buyer/flush */
    flush: (buyer: string, body: unknown) => flush(ctx, buyer, body),
    /** POST /deferred/vouchers */
    store: (body: unknown, log: FastifyBaseLogger) => storeVoucher(ctx, body, log),
    /** POST /deferred/vouchers/:id/:nonce/settle */
    settle: (id: string, nonce: string) => settleVoucher(ctx, id, nonce),
    /** stops what the scheme started (its voucher heads' heartbeat) */
    async close(): Promise<void> {
      await ctx.collector.close()
      await ctx.scheme.close?.()
      await recovery.close()
    },
  }
}
