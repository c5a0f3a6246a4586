import t from 'tap'
import { loadConfig } from '../../src/config.js'
import { createMarketplace, decodeCursor } from '../../src/services/marketplace/marketplace.js'
import { buildSnapshot } from '../../src/services/marketplace/snapshot.js'
import type { CuratedAgentDTO, CuratedAgentEndpointDTO } from '../../src/services/marketplace/types.js'

const config = loadConfig({ LOG_LEVEL: 'silent' })
const words = ['oracle', 'weather', 'Risk', 'search', 'café', 'data', 'AI', 'swap']

function entry(i: number): CuratedAgentDTO {
  const ep = (n: number, network: string | null): CuratedAgentEndpointDTO => ({
    id: `${i}.${n}`,
    curated_agent_id: `e${i}`,
    url: `https://a${i}.example.com/${n}`,
    methods: ['GET'],
    x402_enabled: true,
    x402_protocol_version: 2,
    network,
    description: null,
    enabled: true,
    pricing_config: {
      amount: '1000',
      amountAtomicUnit: '1000',
      currency: 'USDC',
      networkCaip2ID: 'eip155:84532',
      assetAddress: config.chain.usdc.address,
      payTo: null,
      x402Schema: 'exact',
    },
    schemes: ['exact'],
    created_at: 1,
    updated_at: 1,
  })
  return {
    id: `e${i}`,
    name: `${words[i % 8]} agent ${i}`,
    description: i % 3 ? `about ${words[(i * 7) % 8]}` : null,
    source: (['catalog', 'bazaar', 'platform'] as const)[i % 3],
    enabled: true,
    category: ['Crypto', 'Search'][i % 2],
    tags: [words[(i * 3) % 8], `t${i % 5}`],
    url: null,
    logo_url: null,
    docs_url: null,
    platform_agent_address: null,
    endpoints: i % 10 === 0 ? [ep(1, 'base')] : [ep(1, 'base-sepolia'), ep(2, 'base')],
    skills: [],
    created_at: 1,
    updated_at: 1,
  }
}

const entries = Array.from({ length: 500 }, (_, i) => entry(i))
const snap = buildSnapshot({ entries, mimeTypes: new Map() }, config)
const market = createMarketplace({ config } as never)

t.test('search equals a naive case-insensitive scan over the four fields', async (t) => {
  for (const q of ['oracle', 'RISK', 'café', 'agent 1', 't3', 'about', 'crypto', 'zzz', 'e agent', 'le\u0000agent']) {
    const got = JSON.parse(market.list(snap, { search: q, limit: 1000 }, 'base-sepolia').body.toString()).map(
      (a: CuratedAgentDTO) => a.id,
    )
    const needle = q.toLowerCase()
    const want = snap.views['base-sepolia'].entries
      .map((e) => entries.find((x) => x.id === e.id)!)
      .filter((a) => [a.name, a.description ?? '', a.category, ...a.tags].some((f) => f.toLowerCase().includes(needle)))
      .map((a) => a.id)
    t.same(got, want, JSON.stringify(q))
  }
})

t.test('entries without endpoints on a network are not listed there, but get returns them with none', async (t) => {
  t.equal(snap.views['base-sepolia'].entries.length, 450)
  t.equal(snap.views.base.entries.length, 500)
  const listed = JSON.parse(market.list(snap, { limit: 1000 }, 'base-sepolia').body.toString()).map(
    (a: CuratedAgentDTO) => a.id,
  )
  t.notOk(listed.includes('e10'), 'not in the base-sepolia list')
  t.notOk(
    JSON.parse(market.list(snap, { search: 'agent 10', limit: 1000 }, 'base-sepolia').body.toString()).some(
      (a: CuratedAgentDTO) => a.id === 'e10',
    ),
    'nor found by search there',
  )
  const onSepolia = JSON.parse(market.get(snap, 'e10', 'base-sepolia')!) as CuratedAgentDTO
  t.match(
    onSepolia,
    { id: 'e10', name: entries[10].name, endpoints: [] },
    'get: the entry, with no endpoints on base-sepolia',
  )
  t.same(
    JSON.parse(market.get(snap, 'e10', 'base')!).endpoints.map((e: CuratedAgentEndpointDTO) => e.id),
    ['10.1'],
    'get on base: its base endpoint',
  )
  t.same(
    JSON.parse(market.get(snap, 'e11', 'base-sepolia')!).endpoints.map((e: CuratedAgentEndpointDTO) => e.network),
    ['base-sepolia'],
    'get filters endpoints by network',
  )
  t.equal(market.get(snap, 'e500', 'base'), undefined, 'an id no entry has')
  t.equal(market.get(snap, 'e500', 'base-sepolia'), undefined)
})

t.test('cursor paging walks every match once, in order', async (t) => {
  const ids: string[] = []
  let cursor: string | undefined
  for (;;) {
    const page = market.list(snap, { category: 'Search', limit: 7, cursor: cursor && decodeCursor(cursor) }, 'base')
    ids.push(...JSON.parse(page.body.toString()).map((a: CuratedAgentDTO) => a.id))
    if (!page.nextCursor) break
    cursor = page.nextCursor
  }
  const want = snap.views.base.entries.filter((e) => e.category === 'Search').map((e) => e.id)
  t.same(ids, want)
})

t.test(
  'rendered pages are cached per snapshot: a repeat is the same page, a new snapshot renders afresh',
  async (t) => {
    const q = { category: 'Crypto', limit: 5 }
    const first = market.list(snap, q, 'base')
    t.equal(market.list(snap, { ...q }, 'base'), first, 'same query, same snapshot: the cached page')
    t.not(market.list(snap, { ...q, limit: 6 }, 'base'), first, 'another query renders its own page')
    t.not(market.list(snap, q, 'base-sepolia'), first, 'another network renders its own page')
    const changed = buildSnapshot(
      {
        entries: entries.map((e) => ({ ...e, category: e.category === 'Crypto' ? 'Search' : 'Crypto' })),
        mimeTypes: new Map(),
      },
      config,
    )
    const after = market.list(changed, q, 'base')
    t.not(after, first)
    t.notSame(
      JSON.parse(after.body.toString()),
      JSON.parse(first.body.toString()),
      "the new snapshot's content, not the old page",
    )
    t.same(after.body, market.renderPage(changed, q, 'base').body, 'cached page equals a fresh render')
  },
)
