/**
 * The payment schemes this platform implements, by their x402 names. An endpoint offers `exact`
 * always and any of the others its seller enabled (`endpoints.schemes`). Adding a scheme: its name
 * here, its implementation under src/schemes/<name>/, and its instance in the proxy's scheme list
 * (src/http/proxy-app.ts).
 *
 * `deferred` (src/schemes/deferred/) is offered only where DEFERRED_ESCROW_ADDRESS names an escrow;
 * `upto` (src/schemes/upto/) only where UPTO_SCHEME is on and our relayers settle;
 * `batch-settlement` (src/schemes/batch-settlement/) where BATCH_SETTLEMENT is on, and by default on
 * the platform's own hosted endpoints (namespace `tollgate`).
 */
export const SCHEME_NAMES = ['exact', 'deferred', 'upto', 'batch-settlement'] as const

export type SchemeName = (typeof SCHEME_NAMES)[number]

export function isSchemeName(v: unknown): v is SchemeName {
  return typeof v === 'string' && (SCHEME_NAMES as readonly string[]).includes(v)
}
