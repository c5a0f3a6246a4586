import t from 'tap'
import { Ajv } from 'ajv'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import type { Deps } from '../../../src/deps.js'
import { buildProxyApp } from '../../../src/http/proxy-app.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { createCuratedAdmin } from '../../../src/services/marketplace/curated-admin.js'
import { syncCatalog } from '../../../src/services/marketplace/sync-catalog.js'
import type { CuratedAgentDTO } from '../../../src/services/marketplace/types.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { testDeps } from '../../helpers/test-env.js'

// ---- the spec's tables (2.2–2.5) as a JSON schema: every field, its type and nullability, nothing more
const str = { type: 'string' }
const nstr = { type: ['string', 'null'] }
const ms = { type: 'integer', minimum: 1_000_000_000_000 }
const obj = (properties: Record<string, unknown>) => ({
  type: 'object',
  required: Object.keys(properties),
  additionalProperties: false,
  properties,
})
const pricingSchema = obj({
  amount: { type: 'string', pattern: '^(0|[1-9][0-9]*)$' },
  amountAtomicUnit: { type: 'string', pattern: '^(0|[1-9][0-9]*)$' },
  currency: str,
  networkCaip2ID: { type: 'string', pattern: '^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$' },
  assetAddress: str,
  payTo: nstr,
  x402Schema: { enum: ['exact', 'deferred', null] },
})
const endpointSchema = obj({
  id: str,
  curated_agent_id: str,
  url: str,
  methods: { type: 'array', items: { enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] } },
  x402_enabled: { type: 'boolean' },
  x402_protocol_version: { enum: [1, 2] },
  network: nstr,
  description: nstr,
  enabled: { type: 'boolean' },
  pricing_config: pricingSchema,
  schemes: { type: 'array', minItems: 1, items: { enum: ['exact', 'deferred'] } },
  created_at: ms,
  updated_at: ms,
})
const skillSchema = obj({
  id: str,
  curated_agent_id: str,
  name: str,
  instructions: {},
  docs_url: nstr,
  skillmd_url: nstr,
  created_at: ms,
  updated_at: ms,
})
const agentSchema = obj({
  id: str,
  name: str,
  description: nstr,
  source: { enum: ['catalog', 'bazaar', 'platform'] },
  enabled: { type: 'boolean' },
  category: str,
  tags: { type: 'array', items: str },
  url: nstr,
  logo_url: nstr,
  docs_url: nstr,
  platform_agent_address: nstr,
  endpoints: { type: 'array', items: endpointSchema },
  skills: { type: 'array', items: skillSchema },
  created_at: ms,
  updated_at: ms,
})
const ajv = new Ajv({ allErrors: true, strict: false })
const validAgent = ajv.compile(agentSchema)
const validList = ajv.compile({ type: 'array', items: agentSchema })

const AGENT = '0x00000000000000000000000000000000000a6e27'
const PAY_TO = '0x9999999999999999999999999999999999999999'

/** A seller with one service and its endpoints, as the hosting side publishes them. */
async function publish(
  deps: Deps,
  ns: string,
  svc: string,
  endpoints: { slug: string; price: string; methods?: string[]; enabled?: boolean }[],
  extra: { category?: string; tags?: string[]; description?: string; agent?: string | null } = {},
) {
  if (extra.agent) {
    // a namespace links only to an agent that exists on the platform (sellers_agent_fk)
    const user = await deps.db
      .insertInto('users')
      .values({ email: `${ns}@example.com`, password_hash: 'x' })
      .returning('id')
      .executeTakeFirstOrThrow()
    await deps.db
      .insertInto('agents')
      .values({ user_id: user.id, name: ns, address: extra.agent, encrypted_key: 'x' })
      .onConflict((oc) => oc.column('address').doNothing())
      .execute()
  }
  const seller = await deps.db
    .insertInto('sellers')
    .values({ namespace: ns, display_name: ns, agent_address: extra.agent ?? null })
    .returning('id')
    .executeTakeFirstOrThrow()
  const service = await deps.db
    .insertInto('services')
    .values({
      seller_id: seller.id,
      name: svc,
      display_name: `${ns} ${svc}`,
      description: extra.description ?? null,
      category: extra.category ?? 'Crypto',
      tags: extra.tags ?? [],
      pay_to: PAY_TO,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  for (const e of endpoints) {
    await deps.db
      .insertInto('endpoints')
      .values({
        service_id: service.id,
        slug: e.slug,
        methods: e.methods ?? ['GET', 'POST'],
        price: e.price,
        handler: e.slug,
        enabled: e.enabled ?? true,
      })
      .execute()
  }
  await announceRegistryChange(deps, { service: service.id })
  return service.id
}

const bazaarListing = {
  name: 'Community Oracle',
  description: 'Community-run price oracle',
  category: 'Crypto',
  tags: ['oracle', 'community'],
  url: 'https://oracle.example.org',
  endpoints: [
    {
      url: 'https://oracle.example.org/x402/price',
      methods: ['GET'],
      x402_protocol_version: 1,
      network: 'base-sepolia',
      pricing_config: {
        amount: '2000',
        assetAddress: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        payTo: '0x1234567890123456789012345678901234567890',
        x402Schema: 'exact',
      },
    },
  ],
}

async function get(
  app: FastifyInstance,
  url: string,
  headers: Record<string, string> = {},
): Promise<{ res: Awaited<ReturnType<FastifyInstance['inject']>>; body: any }> {
  const res = await app.inject({ method: 'GET', url, headers })
  return { res, body: res.body ? res.json() : undefined }
}

/** Poll until `fn` passes; registry changes arrive through pub/sub, a few ms after the publish. */
async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 3000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (ok(v) || Date.now() > end) return v
    await new Promise((r) => setTimeout(r, 10))
  }
}

t.test('sandbox deployment', async (t) => {
  const deps = await testDeps(t, { PROXY_URL: 'https://proxy.tollgate.test' })
  await syncCatalog(deps)
  const serviceId = await publish(
    deps,
    'acme',
    'data',
    [
      { slug: 'token-price-feed', price: '1000' },
      { slug: 'gas-price-oracle', price: '1000', methods: ['GET'] },
      { slug: 'retired', price: '1000', enabled: false },
    ],
    { agent: AGENT, tags: ['defi', 'prices'], description: 'Hosted market data' },
  )
  const admin = createCuratedAdmin(deps)
  const { id: bazaarId } = await admin.submit(bazaarListing, '203.0.113.9')
  await admin.review(bazaarId, 'approved', null)
  const app = await buildWebApp(deps, { logger: false })
  t.teardown(() => app.close())

  t.test('DTO shape for entries of all three sources', async (t) => {
    const { res, body } = await get(app, '/api/v1/agents/marketplace')
    t.equal(res.statusCode, 200)
    t.match(res.headers['content-type'], /application\/json/)
    t.ok(validList(body), JSON.stringify(validList.errors))
    const list = body as CuratedAgentDTO[]
    t.same([...new Set(list.map((a) => a.source))].sort(), ['bazaar', 'catalog', 'platform'])
    for (const a of list) {
      t.ok(
        a.enabled && a.endpoints.length > 0 && a.endpoints.every((e) => e.enabled && e.network === 'base-sepolia'),
        `${a.id}: only enabled endpoints on base-sepolia`,
      )
      for (const e of a.endpoints) t.equal(e.curated_agent_id, a.id)
      for (const s of a.skills) t.equal(s.curated_agent_id, a.id)
    }
    const p = list.find((a) => a.source === 'platform')!
    t.equal(p.id, serviceId)
    t.equal(p.platform_agent_address, AGENT)
    t.same(p.skills, [])
    t.same(p.endpoints.map((e) => e.url).sort(), [
      'https://proxy.tollgate.test/acme/data/gas-price-oracle',
      'https://proxy.tollgate.test/acme/data/token-price-feed',
    ])
    t.same(p.endpoints[0].pricing_config, {
      amount: '1000',
      amountAtomicUnit: '1000',
      currency: 'USDC',
      networkCaip2ID: 'eip155:84532',
      assetAddress: deps.config.chain.usdc.address,
      payTo: PAY_TO,
      x402Schema: 'exact',
    })
    const cat = list.find((a) => a.id === 'example-weatherwise')!
    t.equal(cat.skills.length, 1, 'catalog skills are served')
    t.ok(validAgent(cat.skills.length && cat))
    const baz = list.find((a) => a.source === 'bazaar')!
    t.equal(baz.id, bazaarId)
    t.equal(baz.endpoints[0].x402_protocol_version, 1)
    const one = await get(app, `/api/v1/agents/marketplace/${serviceId}`)
    t.equal(one.res.statusCode, 200)
    t.ok(validAgent(one.body), JSON.stringify(validAgent.errors))
    t.same(one.body, p, 'get returns the same entry as the list')
  })

  t.test('filters and their combinations', async (t) => {
    const ids = async (qs: string) =>
      ((await get(app, `/api/v1/agents/marketplace?${qs}`)).body as CuratedAgentDTO[]).map((a) => a.id).sort()
    for (const source of ['catalog', 'bazaar', 'platform']) {
      const { body } = await get(app, `/api/v1/agents/marketplace?source=${source}`)
      t.ok(body.length > 0 && body.every((a: CuratedAgentDTO) => a.source === source), `source=${source}`)
    }
    const crypto = (await get(app, '/api/v1/agents/marketplace?category=Crypto')).body as CuratedAgentDTO[]
    t.ok(crypto.length >= 3 && crypto.every((a) => a.category === 'Crypto'), 'category')
    t.same(await ids('category=crypto'), [], 'category is an exact match')
    t.same(await ids('search=weatherwise'), ['example-weatherwise'], 'search: name')
    t.same(await ids('search=PUBLIC%20SANCTIONS'), ['example-sanctionscheck'], 'search: description, case-insensitive')
    t.same(await ids('search=omplianc'), ['example-sanctionscheck'], 'search: category')
    t.same(await ids('search=serp'), ['example-searchlight'], 'search: tags')
    t.same(await ids('search=prices'), [serviceId], 'search: platform tags')
    t.same(await ids('search=nothing-matches-this'), [])
    t.same(await ids('source=catalog&category=Crypto&search=risk'), ['example-chainscope'], 'combined')
    t.same(await ids('source=platform&category=Crypto&search=hosted'), [serviceId], 'combined on platform')
    t.same(await ids('source=bazaar&category=Weather'), [], 'combined, no match')
  })

  t.test('default network and the override', async (t) => {
    const ids = async (qs: string) =>
      ((await get(app, `/api/v1/agents/marketplace?${qs}`)).body as CuratedAgentDTO[]).map((a) => a.id)
    const dflt = await ids('')
    t.ok(dflt.includes('example-geoip'), 'sepolia-only entry listed on sandbox')
    t.notOk(dflt.includes('example-pricefeed'), 'mainnet-only entry hidden on sandbox')
    const main = (await get(app, '/api/v1/agents/marketplace?network=base')).body as CuratedAgentDTO[]
    t.ok(validList(main))
    t.ok(
      main.every((a) => a.endpoints.every((e) => e.network === 'base')),
      'override: only base endpoints',
    )
    t.ok(main.some((a) => a.id === 'example-pricefeed'))
    t.notOk(
      main.some((a) => a.id === 'example-geoip' || a.source === 'platform'),
      'entries with nothing on base are left out',
    )
    const chainscope = main.find((a) => a.id === 'example-chainscope')!
    t.notOk(
      chainscope.endpoints.some((e) => e.id === 'chainscope-holders'),
      'disabled catalog endpoint not listed',
    )
    // get returns an entry that exists, with its endpoints on the selected network (possibly none)
    const hidden = await get(app, '/api/v1/agents/marketplace/example-pricefeed')
    t.equal(hidden.res.statusCode, 200, 'a mainnet-only entry is not a 404 on sandbox')
    t.ok(validAgent(hidden.body), JSON.stringify(validAgent.errors))
    t.match(hidden.body, { id: 'example-pricefeed', source: 'catalog', endpoints: [] }, 'no endpoints on base-sepolia')
    const onBase = await get(app, '/api/v1/agents/marketplace/example-pricefeed?network=base')
    t.equal(onBase.res.statusCode, 200)
    t.ok(
      onBase.body.endpoints.length > 0 && onBase.body.endpoints.every((e: { network: string }) => e.network === 'base'),
      'its base endpoints with the override',
    )
    t.same(
      onBase.body,
      main.find((a) => a.id === 'example-pricefeed'),
      'the same entry as in the base list',
    )
    const geoip = await get(app, '/api/v1/agents/marketplace/example-geoip?network=base')
    t.equal(geoip.res.statusCode, 200)
    t.same(geoip.body.endpoints, [], 'a sepolia-only entry read on base: there, but with no endpoints')
    t.not(hidden.res.headers.etag, onBase.res.headers.etag, 'each network has its own ETag')
    t.equal(
      (await get(app, '/api/v1/agents/marketplace/no-such-entry?network=base')).res.statusCode,
      404,
      'an unknown id is 404 on every network',
    )
  })

  t.test('404 and 400', async (t) => {
    const missing = await get(app, '/api/v1/agents/marketplace/no-such-entry')
    t.equal(missing.res.statusCode, 404)
    t.same(missing.body, {
      statusCode: 404,
      code: 'not_found',
      error: 'Not Found',
      message: 'marketplace entry not found',
    })
    for (const [qs, param] of [
      ['source=community', 'source'],
      ['network=solana', 'network'],
      ['network=', 'network'],
      ['category=', 'category'],
      [`search=${'x'.repeat(201)}`, 'search'],
      ['source=catalog&source=bazaar', 'source'],
      ['limit=0', 'limit'],
      ['limit=abc', 'limit'],
      ['cursor=%25%25', 'cursor'],
      ['cursor=abc', 'cursor'],
    ]) {
      const { res, body } = await get(app, `/api/v1/agents/marketplace?${qs}`)
      t.equal(res.statusCode, 400, qs)
      t.match(body, { statusCode: 400, code: 'invalid_parameter', error: 'Bad Request', param }, qs)
      t.match(body.message, param)
    }
    t.equal((await get(app, '/api/v1/agents/marketplace/example-weatherwise?network=mainnet')).res.statusCode, 400)
  })

  t.test('ETag, Cache-Control and If-None-Match', async (t) => {
    const first = await get(app, '/api/v1/agents/marketplace?source=catalog')
    const etag = first.res.headers.etag as string
    t.match(etag, /^"[^"]+"$/)
    t.match(first.res.headers['cache-control'], /max-age=/)
    const again = await app.inject({
      url: '/api/v1/agents/marketplace?source=catalog',
      headers: { 'if-none-match': etag },
    })
    t.equal(again.statusCode, 304)
    t.equal(again.body, '')
    t.equal(again.headers.etag, etag)
    t.not(
      (await get(app, '/api/v1/agents/marketplace?source=bazaar')).res.headers.etag,
      etag,
      'another query has another ETag',
    )
    const one = await get(app, '/api/v1/agents/marketplace/example-weatherwise')
    t.equal(
      (
        await app.inject({
          url: '/api/v1/agents/marketplace/example-weatherwise',
          headers: { 'if-none-match': `W/${one.res.headers.etag}, "x"` },
        })
      ).statusCode,
      304,
    )
    await admin.setEnabled('example-searchlight', false)
    const after = await eventually(
      () => get(app, '/api/v1/agents/marketplace?source=catalog'),
      (r) => r.res.headers.etag !== etag,
    )
    t.not(after.res.headers.etag, etag, 'the ETag changes with the content')
    t.notOk(
      (after.body as CuratedAgentDTO[]).some((a) => a.id === 'example-searchlight'),
      'disabled entry gone',
    )
    await admin.setEnabled('example-searchlight', true)
  })

  t.test('limit and cursor', async (t) => {
    const all = (await get(app, '/api/v1/agents/marketplace')).body as CuratedAgentDTO[]
    t.notOk(
      (await get(app, '/api/v1/agents/marketplace')).res.headers['x-next-cursor'],
      'a small catalog comes back whole',
    )
    const seen: string[] = []
    let url = '/api/v1/agents/marketplace?limit=2'
    for (let i = 0; i < 20; i++) {
      const { res, body } = await get(app, url)
      t.ok(body.length <= 2)
      t.equal(res.headers['x-total-count'], String(all.length))
      seen.push(...body.map((a: CuratedAgentDTO) => a.id))
      const next = res.headers['x-next-cursor']
      if (!next) break
      t.match(res.headers.link, /rel="next"/)
      url = `/api/v1/agents/marketplace?limit=2&cursor=${next}`
    }
    t.same(
      seen,
      all.map((a) => a.id),
      'pages concatenate to the whole list in order',
    )
  })

  t.test('registry changes show at once', async (t) => {
    const list = () => get(app, '/api/v1/agents/marketplace?source=platform')
    const platformEps = (r: { body: CuratedAgentDTO[] }) => r.body.flatMap((a) => a.endpoints)
    await list() // warm the cache
    // publish: a new endpoint row
    await deps.db
      .insertInto('endpoints')
      .values({ service_id: serviceId, slug: 'dns-lookup', methods: ['GET'], price: '1000', handler: 'dns-lookup' })
      .execute()
    await announceRegistryChange(deps, { service: serviceId })
    let r = await eventually(list, (r) => platformEps(r).some((e) => e.url.endsWith('/dns-lookup')))
    t.ok(
      platformEps(r).some((e) => e.url.endsWith('/acme/data/dns-lookup')),
      'published endpoint listed',
    )
    // reprice
    await deps.db
      .updateTable('endpoints')
      .set({ price: '2500', updated_at: sql`now()` })
      .where('slug', '=', 'dns-lookup')
      .execute()
    await announceRegistryChange(deps)
    r = await eventually(
      list,
      (r) => platformEps(r).find((e) => e.url.endsWith('/dns-lookup'))?.pricing_config.amount === '2500',
    )
    t.equal(
      platformEps(r).find((e) => e.url.endsWith('/dns-lookup'))?.pricing_config.amountAtomicUnit,
      '2500',
      'repriced',
    )
    // disable
    await deps.db.updateTable('endpoints').set({ enabled: false }).where('slug', '=', 'dns-lookup').execute()
    await announceRegistryChange(deps)
    r = await eventually(list, (r) => !platformEps(r).some((e) => e.url.endsWith('/dns-lookup')))
    t.notOk(
      platformEps(r).some((e) => e.url.endsWith('/dns-lookup')),
      'disabled endpoint gone',
    )
    // a whole new service
    const other = await publish(deps, 'globex', 'svc-b', [
      { slug: 'wallet-behavior-score-query', price: '10000', methods: ['GET'] },
    ])
    r = await eventually(list, (r) => r.body.some((a: CuratedAgentDTO) => a.id === other))
    const b = (r.body as CuratedAgentDTO[]).find((a) => a.id === other)!
    t.equal(b.platform_agent_address, null, 'not a platform agent')
    t.same(b.endpoints[0].methods, ['GET'])
    t.equal(b.endpoints[0].pricing_config.amount, '10000')
  })

  t.test("each platform endpoint's 402 challenge agrees with its marketplace entry", async (t) => {
    const proxy = await buildProxyApp(deps, { logger: false })
    t.teardown(() => proxy.close())
    const market = (await get(app, '/api/v1/agents/marketplace?source=platform')).body as CuratedAgentDTO[]
    const endpoints = market.flatMap((a) => a.endpoints)
    t.ok(endpoints.length >= 2, `${endpoints.length} platform endpoints`)
    for (const ep of endpoints) {
      const url = new URL(ep.url)
      t.equal(url.origin, deps.config.proxyUrl, 'the listed URL is on our proxy')
      for (const method of ep.methods) {
        const res = await proxy.inject({ method, url: url.pathname })
        t.equal(res.statusCode, 402, `${method} ${url.pathname}`)
        const v2 = JSON.parse(Buffer.from(String(res.headers['payment-required']), 'base64').toString())
        t.equal(v2.resource.url, ep.url, 'same URL')
        t.match(
          v2.accepts[0],
          {
            scheme: ep.pricing_config.x402Schema,
            network: ep.pricing_config.networkCaip2ID,
            amount: ep.pricing_config.amount,
            asset: ep.pricing_config.assetAddress,
          },
          'same price, asset and network',
        )
        t.equal(String(v2.accepts[0].payTo).toLowerCase(), String(ep.pricing_config.payTo).toLowerCase(), 'same payTo')
        const v1 = res.json()
        t.match(
          v1.accepts[0],
          { network: ep.network, maxAmountRequired: ep.pricing_config.amount, resource: ep.url },
          'the v1 body agrees too',
        )
      }
    }
  })

  t.test('x402 Bazaar discovery shape', async (t) => {
    const { res, body } = await get(app, '/discovery/resources?type=http&limit=100&offset=0')
    t.equal(res.statusCode, 200)
    t.match(body, { x402Version: 2, items: Array, pagination: { limit: 100, offset: 0, total: Number } })
    const market = (await get(app, '/api/v1/agents/marketplace?source=platform')).body as CuratedAgentDTO[]
    for (const ep of market.flatMap((a) => a.endpoints)) {
      const item = body.items.find((i: { resource: string }) => i.resource === ep.url)
      t.ok(item, `${ep.url} discoverable`)
      t.match(item, { type: 'http', x402Version: 2, lastUpdated: String })
      t.same(item.accepts[0], {
        scheme: 'exact',
        network: ep.pricing_config.networkCaip2ID,
        amount: ep.pricing_config.amount,
        asset: ep.pricing_config.assetAddress,
        payTo: ep.pricing_config.payTo,
        maxTimeoutSeconds: deps.config.x402.maxTimeoutSeconds,
        extra: { name: deps.config.chain.usdc.name, version: deps.config.chain.usdc.version },
      })
    }
    const v1 = body.items.find((i: { x402Version: number }) => i.x402Version === 1)
    t.same(
      body.items.filter((i: { accepts: unknown[] }) => i.accepts.length > 1),
      [],
      'no endpoint offers deferred yet: exact only',
    )
    t.match(
      v1.accepts[0],
      { network: 'base-sepolia', maxAmountRequired: String, resource: v1.resource, payTo: String, asset: String },
      'v1 endpoints carry v1 requirements',
    )
    const page = (await get(app, '/discovery/resources?limit=2&offset=1')).body
    t.equal(page.items.length, 2)
    t.same(page.items[0], body.items[1])
    t.equal((await get(app, '/discovery/resources?type=mcp')).body.items.length, 0)
    t.equal((await get(app, '/discovery/resources?limit=-1')).res.statusCode, 400)
  })

  t.test('an endpoint that enables deferred lists it beside exact, as its 402 offers it', async (t) => {
    await deps.db
      .updateTable('endpoints')
      .set({ schemes: ['exact', 'deferred'], updated_at: sql`now()` })
      .where('slug', '=', 'gas-price-oracle')
      .execute()
    await announceRegistryChange(deps)
    const list = () => get(app, '/api/v1/agents/marketplace?source=platform')
    const find = (r: { body: CuratedAgentDTO[] }) =>
      r.body.flatMap((a) => a.endpoints).find((e) => e.url.endsWith('/acme/data/gas-price-oracle'))
    const r = await eventually(list, (r) => find(r)?.schemes.length === 2)
    t.ok(validList(r.body), JSON.stringify(validList.errors))
    t.same(find(r)!.schemes, ['exact', 'deferred'], 'the marketplace entry')
    t.same(find(r)!.pricing_config.x402Schema, 'exact', 'pricing_config keeps the first scheme')
    const others = (r.body as CuratedAgentDTO[])
      .flatMap((a) => a.endpoints)
      .filter((e) => !e.url.endsWith('/gas-price-oracle'))
    t.same(
      others.map((e) => e.schemes),
      others.map(() => ['exact']),
      'the others exact only',
    )
    const item = (await get(app, '/discovery/resources?limit=100')).body.items.find(
      (i: { resource: string }) => i.resource === find(r)!.url,
    )
    t.same(
      item.accepts.map((a: { scheme: string }) => a.scheme),
      ['exact', 'deferred'],
      'discovery',
    )
    const proxy = await buildProxyApp(deps, { logger: false })
    t.teardown(() => proxy.close())
    const challenge = JSON.parse(
      Buffer.from(
        String(
          (await proxy.inject({ method: 'GET', url: new URL(find(r)!.url).pathname })).headers['payment-required'],
        ),
        'base64',
      ).toString(),
    )
    t.same(
      challenge.accepts.map((a: { scheme: string }) => a.scheme),
      ['exact', 'deferred'],
      'the 402 offers the same',
    )
    const deferred = challenge.accepts[1]
    t.same(
      item.accepts[1],
      { ...deferred, asset: item.accepts[0].asset, payTo: item.accepts[0].payTo },
      'the same deferred requirement (escrow, name, version, voucherStorage)',
    )
  })
})

t.test('production deployment defaults to Base mainnet', async (t) => {
  const deps = await testDeps(t, {
    TOLLGATE_DEPLOYMENT: 'production',
    RPC_URL: 'http://127.0.0.1:1',
    RELAYER_PRIVATE_KEYS: `0x${'11'.repeat(32)}`,
    TOLLGATE_MASTER_KEY: '22'.repeat(32),
    TOLLGATE_RECEIVER_ADDRESS: PAY_TO,
  })
  t.equal(deps.config.chain.chainId, 8453)
  await syncCatalog(deps)
  const serviceId = await publish(deps, 'acme', 'data', [{ slug: 'token-price-feed', price: '1000' }])
  const app = await buildWebApp(deps, { logger: false })
  t.teardown(() => app.close())
  const { body } = await get(app, '/api/v1/agents/marketplace')
  t.ok(validList(body))
  const list = body as CuratedAgentDTO[]
  t.ok(
    list.length > 0 &&
      list.every((a) =>
        a.endpoints.every((e) => e.network === 'base' && e.pricing_config.networkCaip2ID === 'eip155:8453'),
      ),
    'only Base mainnet endpoints',
  )
  t.ok(list.some((a) => a.id === 'example-pricefeed'))
  t.notOk(list.some((a) => a.id === 'example-geoip'))
  const p = list.find((a) => a.id === serviceId)!
  t.equal(p.endpoints[0].pricing_config.assetAddress, '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913')
  const sepolia = (await get(app, '/api/v1/agents/marketplace?network=base-sepolia')).body as CuratedAgentDTO[]
  t.ok(
    sepolia.some((a) => a.id === 'example-geoip') && !sepolia.some((a) => a.source === 'platform'),
    'override to base-sepolia',
  )
})
