/**
 * Each scheme's settlement, by name: the worker role's settler (src/services/settlement/) looks a
 * payment's up by `payments.scheme` and never branches on the name. `exact` and `upto` are settled
 * by our relayers (their objects say how: the call, the receipt, the used authorization, the path);
 * `deferred` and `batch-settlement` by their own workers, which the settler leaves alone.
 */
import type { RelayerSettlement, SchemeName, SchemeSettlement } from '../seam/types.js'
import { exactSettlement } from './exact/settlement.js'
import { uptoSettlement } from './upto/settlement.js'

const SETTLEMENTS: Readonly<Record<SchemeName, SchemeSettlement>> = {
  exact: exactSettlement,
  upto: uptoSettlement,
  deferred: { kind: 'worker', scheme: 'deferred', worker: 'deferred-collect (src/services/deferred-collect/)' },
  'batch-settlement': {
    kind: 'worker',
    scheme: 'batch-settlement',
    worker: 'batch-claim (src/services/batch-claim/)',
  },
}

/** The settlements our relayers run, in SCHEME_NAMES order. */
export const RELAYER_SETTLEMENTS: readonly RelayerSettlement[] = Object.values(SETTLEMENTS).filter(
  (s): s is RelayerSettlement => s.kind === 'relayer',
)

/**
 * The schemes our relayers settle: their payments hold the payer's credit (src/ledger/payer-credit.ts)
 * until settled, and the settler claims, rechecks and voids them.
 */
export const RELAYER_SETTLED: readonly SchemeName[] = RELAYER_SETTLEMENTS.map((s) => s.scheme)

/** The relayer settlement of a payment's scheme; throws for a scheme settled by its own worker. */
export function relayerSettlement(scheme: string): RelayerSettlement {
  const s = SETTLEMENTS[scheme as SchemeName] as SchemeSettlement | undefined
  if (s?.kind !== 'relayer') throw new Error(`payments of scheme '${scheme}' are not settled by the relayers`)
  return s
}
