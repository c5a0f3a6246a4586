import { createHash } from 'node:crypto'
import { getAddress } from 'viem'
import { CHAINS, type Config } from '../../config.js'
import { EndpointSearchIndex } from './endpoint-search.js'
import { indexedEndpoint, type IndexedEndpoint } from './endpoint-listing.js'
import { isExampleEntry } from './example-entry.js'
import type { LoadedEntries } from './load-entries.js'
import {
  FILTER_NETWORKS,
  type CuratedAgentDTO,
  type CuratedAgentEndpointDTO,
  type CuratedAgentSource,
  type FilterNetwork,
} from './types.js'

/** One entry as served on one network: its pre-serialized JSON and what the filters look at. */
export interface IndexedEntry {
  /** sort and cursor key: lower-cased name, NUL, id */
  key: string
  id: string
  source: CuratedAgentSource
  category: string
  /** lower-cased name, description, category and tags, NUL-separated so matches never span fields */
  haystack: string
  json: string
}

export interface NetworkView {
  /** what the list serves: entries with at least one endpoint on this network, sorted by key */
  entries: IndexedEntry[]
  /** what get serves: every entry, with its endpoints on this network (possibly none) */
  byId: Map<string, IndexedEntry>
  /** every entry's haystack joined by U+0001, so a search is one indexOf scan over one string */
  searchText: string
  /** start offset of each entry's haystack in searchText (same order as entries) */
  offsets: Int32Array
  /** x402 Bazaar discovery items (one per x402-enabled endpoint with a payTo), pre-serialized */
  discovery: string[]
  /** every endpoint listed on this network, searchable by what it does */
  endpoints: EndpointSearchIndex<IndexedEndpoint>
}

/** The whole marketplace as served, rebuilt only when something changes. */
export interface Snapshot {
  /** content hash: equal content gives equal ETags in every process */
  hash: string
  builtAt: number
  /** when the database fingerprint was last compared (starts at builtAt) */
  checkedAt: number
  fingerprint?: string
  views: Record<FilterNetwork, NetworkView>
}

/**
 * Index loaded entries per network, each with only its endpoints on that network. An entry left
 * without endpoints on a network is not listed there (nothing in it is payable on that network),
 * but get still returns it with an empty `endpoints`: spec 4.2 keeps 404 for ids no entry has.
 */
export function buildSnapshot(loaded: LoadedEntries, config: Readonly<Config>): Snapshot {
  const hash = createHash('sha256')
  const views = {} as Record<FilterNetwork, NetworkView>
  const sorted = loaded.entries
    .map((e) => ({ e, key: `${e.name.toLowerCase()}\u0000${e.id}` }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  for (const network of FILTER_NETWORKS) {
    const view: NetworkView = {
      entries: [],
      byId: new Map(),
      discovery: [],
      searchText: '',
      offsets: new Int32Array(0),
      endpoints: new EndpointSearchIndex([]),
    }
    const searchable: IndexedEndpoint[] = []
    for (const { e, key } of sorted) {
      const endpoints = e.endpoints.filter((ep) => ep.network === network)
      const dto: CuratedAgentDTO = { ...e, endpoints }
      const indexed: IndexedEntry = {
        key,
        id: e.id,
        source: e.source,
        category: e.category,
        haystack: [e.name, e.description ?? '', e.category, ...e.tags].join('\u0000').toLowerCase(),
        json: JSON.stringify(dto),
      }
      view.byId.set(e.id, indexed)
      if (endpoints.length > 0) view.entries.push(indexed)
      hash.update(indexed.json)
      const example = isExampleEntry(e)
      for (const ep of endpoints) {
        let item: string | undefined
        if (ep.x402_enabled && ep.pricing_config.payTo !== null) {
          item = JSON.stringify(discoveryItem(e, ep, config, loaded.mimeTypes.get(ep.id), loaded.batch))
          view.discovery.push(item)
          hash.update(item)
        }
        const indexed = indexedEndpoint(e, ep, loaded.platform?.get(ep.id), example, item)
        searchable.push(indexed)
        hash.update(indexed.json)
      }
    }
    view.offsets = new Int32Array(view.entries.length)
    let at = 0
    view.entries.forEach((e, i) => {
      view.offsets[i] = at
      at += e.haystack.length + 1
    })
    view.searchText = view.entries.map((e) => e.haystack).join('\u0001')
    view.endpoints = new EndpointSearchIndex(searchable)
    hash.update(`\u0001${network}`)
    views[network] = view
  }
  const now = Date.now()
  return { hash: hash.digest('base64url').slice(0, 27), builtAt: now, checkedAt: now, views }
}

/**
 * One endpoint in the x402 Bazaar discovery shape (coinbase/x402 `DiscoveryResource`). `accepts`
 * holds v2 payment requirements (CAIP-2 network, `amount`) or v1 ones (network name,
 * `maxAmountRequired`, `resource`), following the endpoint's protocol version.
 */
export function discoveryItem(
  entry: CuratedAgentDTO,
  ep: CuratedAgentEndpointDTO,
  config: Readonly<Config>,
  mimeType = 'application/json',
  batch?: LoadedEntries['batch'],
) {
  const pc = ep.pricing_config
  const chain = Object.values(CHAINS).find((c) => c.caip2 === pc.networkCaip2ID)
  const extra =
    chain && chain.usdc.address.toLowerCase() === pc.assetAddress.toLowerCase()
      ? { name: chain.usdc.name, version: chain.usdc.version }
      : {}
  const description = ep.description ?? entry.description ?? entry.name
  const accepts =
    ep.x402_protocol_version === 2
      ? {
          scheme: pc.x402Schema ?? 'exact',
          network: pc.networkCaip2ID,
          amount: pc.amount,
          asset: pc.assetAddress,
          payTo: pc.payTo,
          maxTimeoutSeconds: config.x402.maxTimeoutSeconds,
          extra,
        }
      : {
          scheme: pc.x402Schema ?? 'exact',
          network: ep.network,
          maxAmountRequired: pc.amount,
          resource: ep.url,
          description,
          mimeType,
          payTo: pc.payTo,
          maxTimeoutSeconds: config.x402.maxTimeoutSeconds,
          asset: pc.assetAddress,
          extra,
        }
  // the deferred scheme beside exact, with the requirement the proxy's challenge carries (v2 only)
  const escrow = config.deferredEscrowAddress
  const deferred =
    ep.x402_protocol_version === 2 && escrow && ep.schemes.includes('deferred') && accepts.scheme === 'exact'
      ? [{ ...accepts, scheme: 'deferred', extra: { escrow: getAddress(escrow), ...extra, voucherStorage: 'server' } }]
      : []
  // batch-settlement as the proxy's challenge offers it (v2 only), with the spec's extra
  const batched =
    ep.x402_protocol_version === 2 && batch && ep.schemes.includes('batch-settlement') && accepts.scheme === 'exact'
      ? [
          {
            ...accepts,
            scheme: 'batch-settlement',
            // checksummed, as the challenge has them (the channel config is signed over them)
            payTo: getAddress(pc.payTo!),
            asset: getAddress(pc.assetAddress),
            extra: {
              receiverAuthorizer: getAddress(batch.receiverAuthorizer),
              withdrawDelay: batch.withdrawDelay,
              ...extra,
            },
          },
        ]
      : []
  const serviceName = printableAscii(entry.name, 32) ? entry.name : undefined
  const tags = [...new Map(entry.tags.filter((t) => printableAscii(t, 32)).map((t) => [t.toLowerCase(), t])).values()]
  return {
    resource: ep.url,
    type: 'http',
    x402Version: ep.x402_protocol_version,
    accepts: [accepts, ...deferred, ...batched],
    lastUpdated: new Date(ep.updated_at).toISOString(),
    // the bazaar spec's service metadata, within its limits (printable ASCII, 32 characters, 5 tags)
    description,
    mimeType,
    ...(serviceName ? { serviceName } : {}),
    ...(tags.length ? { tags: tags.slice(0, 5) } : {}),
    metadata: {
      name: entry.name,
      description,
      category: entry.category,
      tags: entry.tags,
      methods: ep.methods,
      source: entry.source,
      curatedAgentId: entry.id,
      endpointId: ep.id,
    },
  }
}

function printableAscii(s: string, max: number): boolean {
  return s.length > 0 && s.length <= max && /^[\x20-\x7e]+$/.test(s)
}
