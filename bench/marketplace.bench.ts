/**
 * Marketplace read path at 10,000 entries / 50,000 endpoints: p50/p99 and requests/s for list
 * (no filter, each filter, search), get and discovery, against a bare Fastify route in the same
 * run; then the endpoint search index alone at 100,000 endpoints (bench/endpoint-search-case.ts). Over real HTTP on loopback (undici, one keep-alive connection, one request at a time), so
 * the times are what a client next to the server sees; the ratio to the bare route is the figure
 * to compare across machines. (app.inject was used before: its own payload copying dominated the
 * p99 of large pages, not the server.)
 *
 *   npm run bench:marketplace            # needs the test Postgres and Redis (TEST_DATABASE_URL, TEST_REDIS_URL)
 */
import Fastify, { type FastifyInstance } from 'fastify'
import { Agent, request } from 'undici'
import { sql } from 'kysely'
import { buildWebApp } from '../src/http/web-app.js'
import { testDeps } from '../test/helpers/test-env.js'
import { printEndpointSearchCase, runEndpointSearchCase } from './endpoint-search-case.js'

const ENTRIES = 10_000
const PLATFORM_SERVICES = 2_000
const ENDPOINTS_PER_ENTRY = 5
const CURATED = ENTRIES - PLATFORM_SERVICES

const teardowns: (() => unknown)[] = []
const deps = await testDeps({ teardown: (fn) => void teardowns.push(fn) })

async function seed(): Promise<void> {
  const db = deps.db
  await sql`
    insert into curated_agents (id, source, status, managed_by, name, description, category, tags)
    select 'bench-' || g, case when g % 4 = 0 then 'bazaar' else 'catalog' end, 'approved', 'operator',
           'Agent ' || g, 'Benchmark agent number ' || g || ' serving data per call',
           (array['Crypto','Search','Compliance','AI','Data','Weather'])[1 + g % 6], array['tag' || (g % 50), 'bench']
    from generate_series(1, ${CURATED}) g`.execute(db)
  await sql`
    insert into curated_agent_endpoints (id, curated_agent_id, position, url, methods, x402_protocol_version, network, description, amount, network_caip2_id, asset_address, pay_to, x402_schema)
    select 'bench-' || g || '.e' || k, 'bench-' || g, k, 'https://a' || g || '.example.com/x402/op' || k, array['GET','POST'], 1 + k % 2,
           case when k % 2 = 0 then 'base' else 'base-sepolia' end, 'Operation ' || k, 1000 * k,
           case when k % 2 = 0 then 'eip155:8453' else 'eip155:84532' end,
           case when k % 2 = 0 then '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' else '0x036CbD53842c5426634e7929541eC2318f3dCF7e' end,
           '0x1111111111111111111111111111111111111111', 'exact'
    from generate_series(1, ${CURATED}) g, generate_series(1, ${ENDPOINTS_PER_ENTRY}) k`.execute(db)
  // half the namespaces link to a platform agent, which must exist (sellers_agent_fk)
  await sql`with u as (insert into users (email, password_hash) values ('bench@example.com', 'x') returning id)
            insert into agents (user_id, name, address, encrypted_key) select id, 'bench agent', '0x000000000000000000000000000000000000a6e2', 'x' from u`.execute(
    db,
  )
  await sql`insert into sellers (namespace, display_name, agent_address) select 'ns' || g, 'Seller ' || g, case when g % 2 = 0 then '0x000000000000000000000000000000000000a6e2' end from generate_series(1, ${PLATFORM_SERVICES}) g`.execute(
    db,
  )
  await sql`
    insert into services (seller_id, name, display_name, description, category, tags, pay_to)
    select id, 'svc', 'Hosted ' || namespace, 'Hosted service of ' || namespace, 'Crypto', array['hosted'], '0x2222222222222222222222222222222222222222' from sellers`.execute(
    db,
  )
  await sql`
    insert into endpoints (service_id, slug, methods, price, handler)
    select s.id, 'ep' || k, array['GET','POST'], 1000, 'ep' || k from services s, generate_series(1, ${ENDPOINTS_PER_ENTRY}) k`.execute(
    db,
  )
}

interface Result {
  name: string
  n: number
  p50: number
  p99: number
  rps: number
  bytes: number
}

const agent = new Agent({ connections: 1, pipelining: 1, keepAliveTimeout: 60_000 })

/** `url` may vary per request (a function of the request number), e.g. to defeat the page cache. */
async function measure(
  app: FastifyInstance,
  name: string,
  urlOf: string | ((i: number) => string),
  n: number,
  headers: Record<string, string> = {},
): Promise<Result> {
  const origin = await listening(app)
  const at = typeof urlOf === 'string' ? () => urlOf : urlOf
  const once = async (url: string) => {
    const res = await request(`${origin}${url}`, { headers, dispatcher: agent })
    const body = Buffer.from(await res.body.arrayBuffer())
    if (res.statusCode !== 200 && res.statusCode !== 304)
      throw new Error(`${url}: ${res.statusCode} ${body.toString().slice(0, 200)}`)
    return body.length
  }
  for (let i = 0; i < Math.min(50, n); i++) await once(at(n + i)) // warm-up
  const times = new Float64Array(n)
  let bytes = 0
  const start = performance.now()
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    bytes = await once(at(i))
    times[i] = performance.now() - t0
  }
  const total = performance.now() - start
  times.sort()
  return {
    name,
    n,
    p50: times[Math.floor(n * 0.5)],
    p99: times[Math.min(n - 1, Math.floor(n * 0.99))],
    rps: (n / total) * 1000,
    bytes,
  }
}

const origins = new Map<FastifyInstance, string>()
async function listening(app: FastifyInstance): Promise<string> {
  let origin = origins.get(app)
  if (!origin) origins.set(app, (origin = await app.listen({ host: '127.0.0.1', port: 0 })))
  return origin
}

const t0 = performance.now()
await seed()
const seedMs = performance.now() - t0
const app = await buildWebApp(deps, { logger: false })
const t1 = performance.now()
await app.inject({ url: '/api/v1/agents/marketplace?limit=1' })
const coldMs = performance.now() - t1

const bare = Fastify({ logger: false })
bare.get('/bare', async () => [{ id: 'x', name: 'bare' }])
await bare.ready()

const someId = 'bench-4242'
const etag = (await app.inject({ url: '/api/v1/agents/marketplace?category=Crypto&limit=100' })).headers.etag as string
const N = Number(process.env.BENCH_N ?? 2000)
const results: Result[] = []
await measure(bare, 'warm-up (client and JIT)', '/bare', N) // not reported
results.push(await measure(bare, 'bare Fastify (baseline)', '/bare', N))
for (const [name, url, n] of [
  ['list, no filter (default page 100)', '/api/v1/agents/marketplace', N / 4],
  ['list, no filter, limit=1000', '/api/v1/agents/marketplace?limit=1000', N / 20],
  ['list, source=platform', '/api/v1/agents/marketplace?source=platform&limit=20', N],
  ['list, category=Crypto', '/api/v1/agents/marketplace?category=Crypto&limit=20', N],
  ['list, search=number 77 (substring)', '/api/v1/agents/marketplace?search=number%2077&limit=20', N],
  ['list, search, no match', '/api/v1/agents/marketplace?search=zzzz', N],
  ['list, network=base', '/api/v1/agents/marketplace?network=base&limit=20', N],
  ['list, source+category+search', '/api/v1/agents/marketplace?source=bazaar&category=AI&search=agent&limit=20', N],
  ['get by id', `/api/v1/agents/marketplace/${someId}`, N],
  ['discovery, limit=100', '/discovery/resources?limit=100', N / 4],
] as const)
  results.push(await measure(app, name, url, Math.max(50, Math.round(n))))
// every request a query not seen before: the filter, search and render cost without the page cache
results.push(
  await measure(
    app,
    'uncached: category, distinct limit 20+',
    (i) => `/api/v1/agents/marketplace?category=Crypto&limit=${20 + (i % 900)}`,
    N / 4,
  ),
)
results.push(
  await measure(
    app,
    'uncached: search, distinct term',
    (i) => `/api/v1/agents/marketplace?search=${encodeURIComponent(`number ${i % 10000}`)}&limit=20`,
    N / 4,
  ),
)
results.push(
  await measure(app, 'list, If-None-Match → 304', '/api/v1/agents/marketplace?category=Crypto&limit=100', N, {
    'if-none-match': etag,
  }),
)

// endpoint search over the same 50,000 endpoints: a repeated query (its page cached per snapshot),
// and a query not seen before each time ("agent <n>": one entry's endpoints, among 40,000 "agent" matches)
results.push(
  await measure(app, 'endpoint search, repeated query', '/api/v1/endpoints?search=operation&limit=20', N / 4),
)
results.push(
  await measure(
    app,
    'uncached: endpoint search, distinct words',
    (i) => `/api/v1/endpoints?search=agent+${1 + (i % 8000)}&limit=20`,
    N / 4,
  ),
)
const base = results[0]
console.log(
  `marketplace bench: ${ENTRIES} entries, ${ENTRIES * ENDPOINTS_PER_ENTRY} endpoints (seed ${Math.round(seedMs)} ms, first snapshot ${Math.round(coldMs)} ms)`,
)
console.log(
  [
    'case'.padEnd(40),
    'n'.padStart(6),
    'p50 ms'.padStart(9),
    'p99 ms'.padStart(9),
    'req/s'.padStart(9),
    'vs bare'.padStart(8),
    'bytes'.padStart(10),
  ].join(' '),
)
for (const r of results) {
  console.log(
    [
      r.name.padEnd(40),
      String(r.n).padStart(6),
      r.p50.toFixed(3).padStart(9),
      r.p99.toFixed(3).padStart(9),
      Math.round(r.rps).toString().padStart(9),
      (r.rps / base.rps).toFixed(2).padStart(8),
      String(r.bytes).padStart(10),
    ].join(' '),
  )
}

// the endpoint search index at 100,000 endpoints (in process; its HTTP route adds what the rows above show)
console.log('')
printEndpointSearchCase(runEndpointSearchCase(100_000))
await app.close()
await bare.close()
await agent.close()
for (const fn of teardowns.reverse()) await fn()
