import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { FastifyInstance } from 'fastify'
import { createDeps } from '../../../src/deps.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { defaultCatalogFile, syncCatalog } from '../../../src/services/marketplace/sync-catalog.js'
import type { CuratedAgentDTO } from '../../../src/services/marketplace/types.js'
import { testDeps } from '../../helpers/test-env.js'

const TOKEN = 'operator-secret-token'
const op = { authorization: `Bearer ${TOKEN}` }

const listing = (over: Record<string, unknown> = {}) => ({
  name: 'Community Oracle',
  description: 'Community-run price oracle',
  category: 'Crypto',
  tags: ['oracle'],
  url: 'https://oracle.example.org',
  contact: 'ops@oracle.example.org',
  endpoints: [
    {
      url: 'https://oracle.example.org/x402/price',
      methods: ['GET'],
      network: 'base-sepolia',
      pricing_config: {
        amount: '2000',
        assetAddress: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        payTo: '0x1234567890123456789012345678901234567890',
        x402Schema: 'exact',
      },
    },
  ],
  ...over,
})

/** The listing's endpoint with `network` and `pricing_config.networkCaip2ID` as given (undefined: left out). */
function withNetwork(network: string | undefined, caip2: string | undefined) {
  const ep = listing().endpoints[0]
  return { ...ep, network, pricing_config: { ...ep.pricing_config, networkCaip2ID: caip2 } }
}

async function ids(app: FastifyInstance, qs = ''): Promise<string[]> {
  return ((await app.inject({ url: `/api/v1/agents/marketplace${qs}` })).json() as CuratedAgentDTO[]).map((a) => a.id)
}

async function eventually(fn: () => Promise<boolean>, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (await fn()) return true
    await new Promise((r) => setTimeout(r, 10))
  }
  return fn()
}

t.test('bazaar, operator routes and catalog sync', async (t) => {
  const deps = await testDeps(t, { TOLLGATE_OPERATOR_TOKEN: TOKEN })
  const app = await buildWebApp(deps, { logger: false })
  t.teardown(() => app.close())
  const submit = (body: unknown, ip = '198.51.100.1') =>
    app.inject({
      method: 'POST',
      url: '/api/v1/agents/marketplace/submissions',
      payload: body as object,
      remoteAddress: ip,
    })

  t.test('submission lifecycle: pending → invisible → approved → listed; rejected never listed', async (t) => {
    const res = await submit(listing())
    t.equal(res.statusCode, 202)
    const { id, status } = res.json()
    t.equal(status, 'pending')
    t.notOk((await ids(app)).includes(id), 'pending entry is not listed')
    t.equal((await app.inject({ url: `/api/v1/agents/marketplace/${id}` })).statusCode, 404, 'nor returned by get')
    const pending = (
      await app.inject({ url: '/api/v1/operator/marketplace/entries?status=pending', headers: op })
    ).json()
    t.match(pending, [{ id, source: 'bazaar', status: 'pending', endpoint_count: 1, submitter_ip: '198.51.100.1' }])
    t.equal(
      (await app.inject({ method: 'POST', url: `/api/v1/operator/marketplace/entries/${id}/approve`, headers: op }))
        .statusCode,
      200,
    )
    t.ok(await eventually(async () => (await ids(app)).includes(id)), 'approved entry listed')
    const got = (await app.inject({ url: `/api/v1/agents/marketplace/${id}` })).json()
    t.match(got, {
      id,
      source: 'bazaar',
      platform_agent_address: null,
      endpoints: [{ x402_protocol_version: 2, pricing_config: { amount: '2000', networkCaip2ID: 'eip155:84532' } }],
    })
    // disable then enable
    await app.inject({ method: 'POST', url: `/api/v1/operator/marketplace/entries/${id}/disable`, headers: op })
    t.ok(await eventually(async () => !(await ids(app)).includes(id)), 'disabled entry gone')
    await app.inject({ method: 'POST', url: `/api/v1/operator/marketplace/entries/${id}/enable`, headers: op })
    t.ok(await eventually(async () => (await ids(app)).includes(id)), 'enabled again')

    const r2 = (await submit(listing({ name: 'Spam Listing' }), '198.51.100.2')).json()
    const rej = await app.inject({
      method: 'POST',
      url: `/api/v1/operator/marketplace/entries/${r2.id}/reject`,
      headers: op,
      payload: { note: 'spam' },
    })
    t.equal(rej.statusCode, 200)
    t.equal(
      (await app.inject({ method: 'POST', url: `/api/v1/operator/marketplace/entries/${r2.id}/approve`, headers: op }))
        .statusCode,
      409,
      'a rejected entry cannot be approved later',
    )
    await app.inject({ method: 'POST', url: `/api/v1/operator/marketplace/entries/${r2.id}/enable`, headers: op })
    t.notOk((await ids(app)).includes(r2.id), 'rejected never listed, even when enabled')
  })

  t.test(
    'a submission naming its network only by networkCaip2ID is stored on that network and listed there',
    async (t) => {
      const cases = [
        ['eip155:84532', 'base-sepolia', ''],
        ['eip155:8453', 'base', '?network=base'],
      ] as const
      let ip = 1
      for (const [caip2, network, qs] of cases) {
        const res = await submit(
          listing({ name: `CAIP-2 only ${network}`, endpoints: [withNetwork(undefined, caip2)] }),
          `198.51.100.${200 + ip++}`,
        )
        t.equal(res.statusCode, 202, res.body)
        const { id } = res.json()
        const stored = await deps.db
          .selectFrom('curated_agent_endpoints')
          .select(['network', 'network_caip2_id'])
          .where('curated_agent_id', '=', id)
          .execute()
        t.same(stored, [{ network, network_caip2_id: caip2 }], `${caip2}: network derived and stored`)
        await app.inject({ method: 'POST', url: `/api/v1/operator/marketplace/entries/${id}/approve`, headers: op })
        t.ok(
          await eventually(async () => (await ids(app, qs)).includes(id)),
          `${caip2}: approved entry listed on ${network}`,
        )
        t.match((await app.inject({ url: `/api/v1/agents/marketplace/${id}${qs}` })).json(), {
          endpoints: [{ network, pricing_config: { networkCaip2ID: caip2 } }],
        })
      }
      // both given and in agreement: accepted as before
      t.equal(
        (
          await submit(
            listing({ name: 'Both agree', endpoints: [withNetwork('base', 'eip155:8453')] }),
            '198.51.100.210',
          )
        ).statusCode,
        202,
      )
    },
  )

  t.test(
    'an endpoint stored earlier with networkCaip2ID but no network is served on the network the id names',
    async (t) => {
      const res = await submit(listing({ name: 'Stored Before The Fix' }), '198.51.100.211')
      const { id } = res.json()
      // as submissions were stored before network was derived from the CAIP-2 id
      await deps.db
        .updateTable('curated_agent_endpoints')
        .set({ network: null, network_caip2_id: 'eip155:84532' })
        .where('curated_agent_id', '=', id)
        .execute()
      await app.inject({ method: 'POST', url: `/api/v1/operator/marketplace/entries/${id}/approve`, headers: op })
      t.ok(await eventually(async () => (await ids(app)).includes(id)), 'listed on base-sepolia')
      t.match((await app.inject({ url: `/api/v1/agents/marketplace/${id}` })).json(), {
        endpoints: [{ network: 'base-sepolia' }],
      })
    },
  )

  t.test('hostile submissions are refused with reasons', async (t) => {
    const cases: [string, unknown, string][] = [
      ['huge name', listing({ name: 'x'.repeat(5000) }), 'name'],
      ['script tag', listing({ description: 'hi <script>alert(1)</script>' }), 'description'],
      ['script tag in a tag', listing({ tags: ['<SCRIPT src=//evil.example>'] }), 'tags[0]'],
      ['html', listing({ name: '<img src=x onerror=alert(1)>' }), 'name'],
      ['javascript url', listing({ url: 'javascript:alert(1)' }), 'url'],
      ['data url', listing({ logo_url: 'data:text/html,<b>x</b>' }), 'logo_url'],
      [
        'ftp endpoint',
        listing({ endpoints: [{ ...listing().endpoints[0], url: 'ftp://oracle.example.org/x' }] }),
        'endpoints[0].url',
      ],
      [
        'localhost endpoint',
        listing({ endpoints: [{ ...listing().endpoints[0], url: 'http://127.0.0.1:8080/x' }] }),
        'endpoints[0].url',
      ],
      ['credentials in url', listing({ docs_url: 'https://user:pw@docs.example.org' }), 'docs_url'],
      [
        'bad method',
        listing({ endpoints: [{ ...listing().endpoints[0], methods: ['TRACE'] }] }),
        'endpoints[0].methods',
      ],
      [
        'negative price',
        listing({
          endpoints: [
            { ...listing().endpoints[0], pricing_config: { ...listing().endpoints[0].pricing_config, amount: '-1' } },
          ],
        }),
        'endpoints[0].pricing_config.amount',
      ],
      [
        'too many endpoints',
        listing({ endpoints: Array.from({ length: 21 }, () => listing().endpoints[0]) }),
        'endpoints',
      ],
      ['self-approval', listing({ status: 'approved' }), 'status'],
      [
        'claims a platform agent',
        listing({ platform_agent_address: '0x1234567890123456789012345678901234567890' }),
        'platform_agent_address',
      ],
      ['not an object', [1, 2, 3], 'body'],
      [
        'network and networkCaip2ID disagree',
        listing({ endpoints: [withNetwork('base', 'eip155:84532')] }),
        'endpoints[0].pricing_config.networkCaip2ID',
      ],
      ['no network at all', listing({ endpoints: [withNetwork(undefined, undefined)] }), 'endpoints[0].network'],
      [
        'a network the marketplace does not list',
        listing({ endpoints: [withNetwork('solana', undefined)] }),
        'endpoints[0].network',
      ],
      [
        'a CAIP-2 id the marketplace does not list',
        listing({ endpoints: [withNetwork(undefined, 'eip155:1')] }),
        'endpoints[0].pricing_config.networkCaip2ID',
      ],
      [
        'a malformed CAIP-2 id',
        listing({ endpoints: [withNetwork(undefined, 'base')] }),
        'endpoints[0].pricing_config.networkCaip2ID',
      ],
    ]
    let ip = 10
    for (const [name, body, field] of cases) {
      const res = await submit(body, `192.0.2.${ip++}`)
      t.equal(res.statusCode, 400, name)
      const b = res.json()
      t.equal(b.code, 'invalid_submission', name)
      t.ok(
        b.problems.some((p: { field: string; reason: string }) => p.field === field && p.reason.length > 0),
        `${name}: names ${field} (${JSON.stringify(b.problems)})`,
      )
    }
    const big = await submit({ ...listing(), description: 'x'.repeat(100_000) }, '192.0.2.99')
    t.equal(big.statusCode, 413, 'body over the size limit')
    const stored = await deps.db.selectFrom('curated_agents').select('name').execute()
    t.notOk(
      stored.some((r) => /script|onerror/i.test(r.name)),
      'nothing hostile stored',
    )
  })

  t.test('submissions are rate limited per IP', async (t) => {
    const codes: number[] = []
    for (let i = 0; i < 6; i++) codes.push((await submit(listing({ name: `Flood ${i}` }), '203.0.113.50')).statusCode)
    t.same(codes, [202, 202, 202, 202, 202, 429])
    const limited = await submit(listing(), '203.0.113.50')
    t.equal(limited.json().code, 'rate_limited')
    t.ok(Number(limited.headers['retry-after']) > 0)
    t.equal((await submit(listing(), '203.0.113.51')).statusCode, 202, 'another IP is not affected')
  })

  t.test('operator routes need the operator token', async (t) => {
    for (const headers of [
      {},
      { authorization: 'Bearer wrong' },
      { authorization: TOKEN },
      { authorization: `Basic ${TOKEN}` },
    ]) {
      const res = await app.inject({ url: '/api/v1/operator/marketplace/entries', headers })
      t.equal(res.statusCode, 401)
      t.equal(res.json().code, 'operator_only')
    }
    const post = await app.inject({ method: 'POST', url: '/api/v1/operator/marketplace/catalog', payload: {} })
    t.equal(post.statusCode, 401)
  })

  t.test('catalog: sync from the file, idempotent; operator CRUD', async (t) => {
    const first = await syncCatalog(deps)
    const fileIds = (JSON.parse(readFileSync(defaultCatalogFile, 'utf8')).entries as { id: string }[]).map((e) => e.id)
    t.same(first.inserted.sort(), [...fileIds].sort())
    const before = await deps.db
      .selectFrom('curated_agents')
      .select(['id', 'updated_at'])
      .where('source', '=', 'catalog')
      .orderBy('id')
      .execute()
    const again = await syncCatalog(deps)
    t.same(
      again,
      { inserted: [], updated: [], deleted: [], unchanged: fileIds.length, skipped: [] },
      'second sync changes nothing',
    )
    t.same(
      await deps.db
        .selectFrom('curated_agents')
        .select(['id', 'updated_at'])
        .where('source', '=', 'catalog')
        .orderBy('id')
        .execute(),
      before,
      'updated_at untouched',
    )
    t.ok(await eventually(async () => (await ids(app, '?source=catalog')).includes('example-weatherwise')))

    // an operator's disable survives a sync; an edited file updates and removes
    await app.inject({ method: 'POST', url: '/api/v1/operator/marketplace/entries/example-geoip/disable', headers: op })
    const doc = JSON.parse(readFileSync(defaultCatalogFile, 'utf8'))
    doc.entries = doc.entries.filter((e: { id: string }) => e.id !== 'example-searchlight')
    doc.entries.find((e: { id: string }) => e.id === 'example-weatherwise').name = 'WeatherWise Pro (example)'
    const file = path.join(tmpdir(), `catalog-${process.pid}-${Date.now()}.json`)
    writeFileSync(file, JSON.stringify(doc))
    t.teardown(() => import('node:fs').then((fs) => fs.rmSync(file, { force: true })))
    const edited = await syncCatalog(deps, { file })
    t.same(edited.updated, ['example-weatherwise'])
    t.same(edited.deleted, ['example-searchlight'])
    t.ok(
      await eventually(async () => {
        const list = await ids(app, '?source=catalog')
        return !list.includes('example-searchlight') && !list.includes('example-geoip')
      }),
      'removed from the file and operator-disabled entries are gone',
    )
    t.equal(
      (await app.inject({ url: '/api/v1/agents/marketplace/example-weatherwise' })).json().name,
      'WeatherWise Pro (example)',
    )

    // operator-created catalog entries
    const entry = {
      ...listing({ name: 'Operator Pick' }),
      contact: undefined,
      id: 'operator-pick',
      platform_agent_address: '0x00000000000000000000000000000000000a6e27',
    }
    delete (entry as Record<string, unknown>).contact
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/operator/marketplace/catalog',
      headers: op,
      payload: entry,
    })
    t.equal(created.statusCode, 201, created.body)
    t.equal(
      (await app.inject({ method: 'POST', url: '/api/v1/operator/marketplace/catalog', headers: op, payload: entry }))
        .statusCode,
      409,
      'id taken',
    )
    const put = await app.inject({
      method: 'PUT',
      url: '/api/v1/operator/marketplace/catalog/operator-pick',
      headers: op,
      payload: { ...entry, name: 'Operator Pick v2' },
    })
    t.equal(put.statusCode, 200)
    t.ok(
      await eventually(
        async () =>
          (await app.inject({ url: '/api/v1/agents/marketplace/operator-pick' })).json().name === 'Operator Pick v2',
      ),
    )
    t.equal(
      (await app.inject({ url: '/api/v1/agents/marketplace/operator-pick' })).json().platform_agent_address,
      '0x00000000000000000000000000000000000a6e27',
    )
    t.equal(
      (
        await app.inject({
          method: 'PUT',
          url: '/api/v1/operator/marketplace/catalog/example-weatherwise',
          headers: op,
          payload: entry,
        })
      ).statusCode,
      409,
      'file entries are edited in the file',
    )
    t.equal(
      (await app.inject({ method: 'DELETE', url: '/api/v1/operator/marketplace/entries/operator-pick', headers: op }))
        .statusCode,
      204,
    )
    t.ok(
      await eventually(
        async () => (await app.inject({ url: '/api/v1/agents/marketplace/operator-pick' })).statusCode === 404,
      ),
    )
    const sync = await app.inject({ method: 'POST', url: '/api/v1/operator/marketplace/catalog/sync', headers: op })
    t.equal(sync.statusCode, 200)
    t.same(sync.json().inserted, ['example-searchlight'], 'sync route restores the shipped file')
  })

  t.test('changes reach another process', async (t) => {
    // a second process: its own connections, the same database schema and Redis prefix
    const other = createDeps(deps.config)
    t.teardown(() => other.close())
    const app2 = await buildWebApp(other, { logger: false })
    t.teardown(() => app2.close())
    const { id } = (await submit(listing({ name: 'Cross Process' }), '198.51.100.77')).json()
    t.notOk((await ids(app2)).includes(id), 'warm cache in process 2')
    await app.inject({ method: 'POST', url: `/api/v1/operator/marketplace/entries/${id}/approve`, headers: op })
    t.ok(await eventually(async () => (await ids(app2)).includes(id)), 'process 2 sees the approval')
  })
})
