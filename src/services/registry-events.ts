import type { CoreDeps as Deps } from '../core-deps.js'

/** Redis pub/sub channel on which any change to sellers/services/endpoints is announced. */
export function registryChannel(deps: Pick<Deps, 'key'>): string {
  return deps.key('registry', 'changed')
}

/**
 * Announce that the endpoint registry changed (publish, reprice, disable, delete), so every proxy
 * process reloads its in-memory table and the marketplace drops its cache. Call after the commit.
 */
export async function announceRegistryChange(
  deps: Pick<Deps, 'key' | 'redis'>,
  what: Record<string, unknown> = {},
): Promise<void> {
  await deps.redis.publish(registryChannel(deps), JSON.stringify({ at: Date.now(), ...what }))
}
