/**
 * The payment schemes this platform implements, by their x402 names: defined with the seam's
 * contract (src/seam/types.ts, `SCHEME_NAMES`, which says how to add one).
 */
export { SCHEME_NAMES, isSchemeName } from '../seam/types.js'
