/**
 * Where `batch-settlement` is offered without a seller asking: every hosted endpoint of the
 * platform (its namespace, src/services/hosted-seed.ts HOSTED_NAMESPACE, which a unit test keeps
 * equal to this; imported here without that module's dependencies).
 */
const PLATFORM_NAMESPACE = 'tollgate'

/**
 * The schemes an endpoint offers: what its seller enabled, and `batch-settlement` on every hosted
 * endpoint of the platform, beside exact. A scheme this process does not run is left out of the
 * challenge by the endpoint table's `requirementOf`.
 */
export function offeredSchemes(namespace: string, enabled: readonly string[]): readonly string[] {
  return namespace === PLATFORM_NAMESPACE && !enabled.includes('batch-settlement')
    ? [...enabled, 'batch-settlement']
    : enabled
}
