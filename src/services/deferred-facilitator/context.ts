/**
 * The parts the deferred facilitator's operations share (ops/*.ts), built once by
 * createDeferredFacilitator, and the answer shape every operation returns (status, body, headers),
 * which the routes send as it is, plus the small checks the operations' input validation shares.
 */
import { getAddress, isAddress, type Address } from 'viem'
import type { CoreDeps } from '../../core-deps.js'
import type { createRelayerLock, Relayer } from '../../chain/relayer.js'
import type { DeferredScheme } from '../../schemes/deferred/deferred-scheme.js'
import type { EscrowReader } from '../../schemes/deferred/escrow-reader.js'
import type { VoucherStore } from '../../schemes/deferred/voucher-store.js'
import type { DeferredCollector } from '../deferred-collect/collector.js'

export interface FacilitatorContext {
  readonly deps: CoreDeps
  /** this platform's escrow, lower case */
  readonly escrow: Address
  readonly chainId: number
  /** reads every account fresh (no cache) */
  readonly reader: EscrowReader
  readonly store: VoucherStore
  readonly relayers: Relayer[]
  readonly lock: ReturnType<typeof createRelayerLock>
  /** the proxy's own verify and reserve, every read fresh */
  readonly scheme: DeferredScheme
  readonly collector: DeferredCollector
}

/** What an operation answers: the HTTP status, the body and any headers. */
export interface FacilitatorAnswer {
  status: number
  body: Record<string, unknown>
  headers?: Record<string, string>
}

export const answer = (status: number, body: Record<string, unknown>, headers?: Record<string, string>) =>
  ({ status, body, ...(headers ? { headers } : {}) }) as FacilitatorAnswer

/** the spec's 400 for the read endpoints: `error`, here with what was wrong */
export const badParams = (detail: string) => answer(400, { error: `Invalid parameters: ${detail}` })

export const BYTES32 = /^0x[0-9a-fA-F]{64}$/
export const UINT = /^\d{1,20}$/
/** a voucher nonce in a path: a uint256 in decimal */
export const NONCE = /^\d{1,78}$/

/** a 0x address in lower case, or undefined */
export const address = (v: unknown) =>
  typeof v === 'string' && isAddress(v, { strict: false }) ? (v.toLowerCase() as Address) : undefined

export const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** escrow and chainId must be this platform's; the problem, or undefined */
export function wrongEscrow(ctx: FacilitatorContext, e: unknown, c: unknown): string | undefined {
  if (typeof e !== 'string' || !isAddress(e, { strict: false })) return 'escrow must be a 0x address'
  if (e.toLowerCase() !== ctx.escrow) return `escrow must be ${getAddress(ctx.escrow)} (this facilitator's escrow)`
  if (String(c) !== String(ctx.chainId)) return `chainId must be ${ctx.chainId}`
  return undefined
}
