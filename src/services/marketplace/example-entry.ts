import type { CuratedAgentDTO } from './types.js'

/** A host under the `.example` top-level domain (RFC 2606): reserved, it never resolves. */
function exampleHost(url: string): boolean {
  const host = URL.parse(url)?.hostname.toLowerCase()
  return host !== undefined && (host === 'example' || host.endsWith('.example'))
}

/**
 * A made-up listing (the starter catalog's "(example)" entries): named so, or with every endpoint
 * on an `.example` host. Lists hide them unless asked, and nothing offers their calls as runnable.
 */
export function isExampleEntry(entry: Pick<CuratedAgentDTO, 'name' | 'source' | 'endpoints'>): boolean {
  if (entry.source === 'platform') return false
  if (/\(example\)\s*$/i.test(entry.name)) return true
  return entry.endpoints.length > 0 && entry.endpoints.every((e) => exampleHost(e.url))
}
