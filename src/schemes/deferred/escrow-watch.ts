/**
 * The escrow's account events as they are mined: a thaw, a withdrawal, a flush, a collection, a
 * deposit. The proxy drops the accounts it cached for them (escrow-reader.ts `forget`), and the
 * collector starts collecting a thawing buyer's seller at once (deferred-collect/collector.ts).
 *
 * viem's `watchContractEvent` over the deployment's RPC: an `eth_newFilter` polled every `pollMs`
 * (or `eth_getLogs` per new block where the node keeps no filters), so an event is seen within about
 * one poll of its block. A watcher that missed events (its process was down, the RPC failed) loses
 * nothing that matters: a cached account lives seconds, and the collector also reads the escrow's
 * thaw state on each of its runs.
 */
import type { Address, PublicClient } from 'viem'
import { deferredEscrowAbi } from './escrow-abi.js'

/** One account the escrow changed; `seller` and `asset` are absent for a flush of all the buyer's accounts. */
export interface EscrowAccountEvent {
  kind:
    | 'ThawInitiated'
    | 'ThawCancelled'
    | 'Withdrawn'
    | 'FlushAuthorized'
    | 'FlushAllAuthorized'
    | 'VoucherCollected'
    | 'Deposited'
  buyer: Address
  seller?: Address
  asset?: Address
  /** ThawInitiated: when the thaw ends (unix seconds) */
  thawEndTime?: bigint
}

const KINDS = new Set<string>([
  'ThawInitiated',
  'ThawCancelled',
  'Withdrawn',
  'FlushAuthorized',
  'FlushAllAuthorized',
  'VoucherCollected',
  'Deposited',
])

const lower = (a: unknown) => (typeof a === 'string' ? (a.toLowerCase() as Address) : undefined)

/**
 * Watches `escrow` and hands each batch of account events to `onEvents`. Returns the unwatch.
 *
 * @example
 *   const stop = watchEscrowAccounts(deps.chain, escrow, { pollMs: 1000, onEvents: (e) => ..., onError: log.warn })
 */
export function watchEscrowAccounts(
  chain: PublicClient,
  escrow: Address,
  opts: { pollMs: number; onEvents(events: EscrowAccountEvent[]): void; onError(err: Error): void },
): () => void {
  return chain.watchContractEvent({
    address: escrow,
    abi: deferredEscrowAbi,
    poll: true,
    pollingInterval: opts.pollMs,
    onError: opts.onError,
    onLogs(logs) {
      const events: EscrowAccountEvent[] = []
      for (const log of logs) {
        const name = (log as { eventName?: string }).eventName
        if (!name || !KINDS.has(name)) continue
        const args = ((log as { args?: Record<string, unknown> }).args ?? {}) as Record<string, unknown>
        const buyer = lower(args.buyer)
        if (!buyer) continue
        events.push({
          kind: name as EscrowAccountEvent['kind'],
          buyer,
          seller: lower(args.seller),
          asset: lower(args.asset),
          thawEndTime: typeof args.newThawEndTime === 'bigint' ? args.newThawEndTime : undefined,
        })
      }
      if (events.length > 0) opts.onEvents(events)
    },
  })
}
