/**
 * `tollgate publish` (flags, YAML, JSON) and `tollgate endpoints test` against a real web app,
 * proxy and upstream; then a paid call to what was published.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { runCli, type Io } from '../../../src/cli/main.js'
import { buildProxyApp } from '../../../src/http/proxy-app.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { createApiKeys } from '../../../src/services/accounts/api-keys.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { freePort } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'

const p = await startBuyerPlatform(t)
// the upstream test runs in the web role: this one may call 127.0.0.1 (as TOLLGATE_ALLOW_PRIVATE_UPSTREAMS=true)
const web = await buildWebApp(
  { ...p.deps, config: Object.freeze({ ...p.deps.config, allowPrivateUpstreams: true }) },
  { logger: false },
)
t.teardown(() => web.close())
const webPort = await freePort()
await web.listen({ host: '127.0.0.1', port: webPort })
const webUrl = `http://127.0.0.1:${webPort}`
// and a proxy that may forward to it, with its own address in the challenges it sends
const proxyPort = await freePort()
const proxyUrl = `http://127.0.0.1:${proxyPort}`
const proxy = await buildProxyApp(
  { ...p.deps, config: Object.freeze({ ...p.deps.config, allowPrivateUpstreams: true, proxyUrl }) },
  { logger: false },
)
t.teardown(() => proxy.close())
await proxy.listen({ host: '127.0.0.1', port: proxyPort })

let upstreamStatus = 200
const seen: IncomingHttpHeaders[] = []
const upstream = createServer((req, res) => {
  seen.push(req.headers)
  res.writeHead(upstreamStatus, { 'content-type': 'application/json' }).end('{"forecast":"sun"}')
})
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
t.teardown(() => new Promise((resolve) => upstream.close(resolve)))
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as { port: number }).port}/forecast`

const home = mkdtempSync(path.join(os.tmpdir(), 'tg-cli-pub-'))
async function run(args: string[], env: Record<string, string> = {}) {
  const out: string[] = []
  const err: string[] = []
  const io: Io = {
    stdout: (c) => out.push(Buffer.from(c).toString()),
    stderr: (l) => err.push(l),
    env,
    home,
    hostname: 'testbox',
    progressAfterMs: 0,
  }
  const code = await runCli(args, io)
  return { code, out: out.join(''), err: err.join('') }
}

const user = await createUsers({ db: p.deps.db }).create(`pub${Date.now()}@example.com`, 'correct horse battery')
const key = await createApiKeys({ db: p.deps.db, deployment: 'sandbox' }).create(user.id, 'k')
const ns = `ns${Date.now().toString(36)}`

t.test('publish needs somewhere to send payments', async (t) => {
  t.equal((await run(['login', '--api-url', webUrl, '--api-key', key.secret])).code, 0)
  const r = await run([
    'publish',
    '--namespace',
    ns,
    '--service',
    'weather',
    '--slug',
    'forecast',
    '--price',
    '0.002',
    '--upstream-url',
    upstreamUrl,
  ])
  t.equal(r.code, 1)
  t.match(r.err, /where do payments go\? give --pay-to/)
})

t.test('publish from flags, then from YAML and JSON files; --test and endpoints test', async (t) => {
  t.equal(
    (await run(['setup', '--agent', 'seller', '--no-fund'])).code,
    0,
    'the context has an agent: the default pay_to',
  )
  const flags = await run([
    'publish',
    '--namespace',
    ns,
    '--service',
    'weather',
    '--slug',
    'forecast',
    '--price',
    '0.002',
    '--upstream-url',
    upstreamUrl,
    '--method',
    'get',
    '--test',
    '--json',
  ])
  t.equal(flags.code, 0, flags.out)
  const r = JSON.parse(flags.out)
  t.match(r, {
    object: 'publication',
    namespace: { namespace: ns, created: true },
    service: { name: 'weather', created: true },
  })
  t.match(r.endpoints[0], {
    slug: 'forecast',
    created: true,
    price: '2000',
    methods: ['GET'],
    url: `${p.proxyUrl}/${ns}/weather/forecast`,
    signing_secret: /^tgs_/,
    test: { ok: true, status: 200 },
  })
  t.match(
    seen.at(-1),
    { 'x-tollgate-test': '1', 'x-tollgate-signature': /^t=\d+,v1=[0-9a-f]{64}$/ },
    'the upstream got the signed test call',
  )

  const yaml = path.join(home, 'publish.yaml')
  writeFileSync(
    yaml,
    [
      `namespace: ${ns}`,
      'service:',
      '  name: weather',
      '  category: Weather',
      '  tags: [forecast, sun]',
      'endpoints:',
      '  - slug: forecast',
      '    price: "0.003"        # USDC',
      '    methods: [GET]',
      `    upstream_url: ${upstreamUrl}`,
      '  - slug: hash',
      '    price_atomic: "1500"',
      '    methods: [GET, POST]',
      '    handler: hash-generator',
      '',
    ].join('\n'),
  )
  const fromYaml = await run(['publish', '--file', yaml])
  t.equal(fromYaml.code, 0, fromYaml.err)
  t.match(
    fromYaml.out,
    new RegExp(`updated  ${p.proxyUrl}/${ns}/weather/forecast  0\\.003 USDC  GET  → ${upstreamUrl}`),
  )
  t.match(
    fromYaml.out,
    new RegExp(`published  ${p.proxyUrl}/${ns}/weather/hash  0\\.0015 USDC  GET,POST  handler hash-generator`),
  )
  const svc = await p.deps.db
    .selectFrom('services')
    .select(['category'])
    .where('name', '=', 'weather')
    .executeTakeFirstOrThrow()
  t.equal(svc.category, 'Weather', 'the service listing from the file')

  const json = path.join(home, 'publish.json')
  writeFileSync(
    json,
    JSON.stringify({
      namespace: ns,
      service: 'weather',
      endpoints: [{ slug: 'forecast', price: '0.004', upstream_url: upstreamUrl }],
    }),
  )
  const fromJson = await run(['publish', '-f', json, '--json'])
  t.equal(fromJson.code, 0, fromJson.out)
  t.match(JSON.parse(fromJson.out).endpoints[0], { slug: 'forecast', created: false, price: '4000' })

  // endpoints test: ok, an upstream error (3), an upstream that does not answer (1)
  const ok = await run(['endpoints', 'test', `${ns}/weather/forecast`])
  t.equal(ok.code, 0, ok.err)
  t.match(ok.out, /^upstream answered 200 in \d+ ms\n$/)
  upstreamStatus = 503
  const failing = await run(['endpoints', 'test', `${p.proxyUrl}/${ns}/weather/forecast`, '--json'])
  t.equal(failing.code, 3)
  t.match(JSON.parse(failing.out), { object: 'upstream_test', ok: false, status: 503 })
  upstreamStatus = 200
  const hosted = await run(['endpoints', 'test', `${ns}/weather/hash`])
  t.equal(hosted.code, 3)
  t.match(hosted.err, /only upstream endpoints can be tested/)

  // what was published is paid for like any endpoint
  const url = `${proxyUrl}/${ns}/weather/forecast`
  await until(
    'the proxy to serve the new endpoint at its new price',
    async () => (await fetch(url)).status === 402 && JSON.stringify(await (await fetch(url)).json()).includes('"4000"'),
  )
  const payer = await p.agent({ fund: 1_000_000n })
  const paid = await run(['fetch', url], { TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: payer.key })
  t.equal(paid.code, 0, paid.err)
  t.same(JSON.parse(paid.out), { forecast: 'sun' }, "the upstream's answer")
  t.match(paid.err, /^paid 0\.004 USDC to 0x/i)

  // the seller's view: calls, revenue, settled and uncollected vouchers per endpoint, in USDC
  const rev = await run(['revenue'])
  t.equal(rev.code, 0, rev.err)
  t.match(rev.out, /^since \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\n/)
  t.match(rev.out, /ENDPOINT\s+CALLS\s+REVENUE USDC\s+SETTLED USDC\s+UNCOLLECTED VOUCHERS\s+UNCOLLECTED USDC\n/)
  t.match(rev.out, new RegExp(`${ns}/weather/forecast\\s+1\\s+0\\.004\\s+0(\\.004)?\\s+0\\s+0\\n`))
  t.match(rev.out, /total\s+1\s+0\.004\s/)
  const revJson = JSON.parse((await run(['revenue', '--json'])).out)
  t.match(revJson, {
    object: 'revenue',
    endpoints: [
      { path: `${ns}/weather/forecast`, calls: 1, revenue: '4000', uncollected_vouchers: 0, uncollected: '0' },
    ],
    total: { calls: 1, revenue: '4000' },
  })
  const later = JSON.parse((await run(['revenue', '--since', '2999-01-01', '--json'])).out)
  t.match(later.total, { calls: 0, revenue: '0' }, 'nothing since a future date')
})

t.test('publish refuses files it cannot read as meant', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    [
      'unknown.yaml',
      `namespace: ${ns}\nservice: weather\nendpoints:\n  - slug: x\n    price: "0.001"\n    handler: echo\n    colour: red\n`,
      /endpoints\[0\]: unknown field colour/,
    ],
    [
      'atomic.yaml',
      `namespace: ${ns}\nservice: weather\nendpoints:\n  - slug: x\n    price: 1000000\n    handler: echo\n`,
      /1000000 USDC per call\? price is in USDC; for atomic units use price_atomic/,
    ],
    [
      'both.yaml',
      `namespace: ${ns}\nservice: weather\nendpoints:\n  - slug: x\n    price: "0.001"\n    price_atomic: "1000"\n    handler: echo\n`,
      /give price .* or price_atomic .*, one of them/,
    ],
    ['broken.yaml', 'namespace: [\n', /broken\.yaml is not valid YAML/],
    ['empty.json', '{"namespace":"x","service":"y","endpoints":[]}', /"endpoints" is missing or empty/],
  ]
  for (const [name, text, why] of cases) {
    const f = path.join(home, name)
    writeFileSync(f, text)
    const r = await run(['publish', '--file', f])
    t.equal(r.code, 1, name)
    t.match(r.err, why, name)
  }
  const both = await run(['publish', '--file', 'x.yaml', '--slug', 'y'])
  t.equal(both.code, 1)
  t.match(both.err, /use either --file or the flags/)
  const neither = await run(['publish', '--namespace', ns, '--service', 's', '--slug', 'x', '--price', '1'])
  t.match(neither.err, /give --upstream-url .* or --handler/)
})

t.test("the README's publish.yaml publishes with --test, its schemes included", async (t) => {
  // the repository's example as it is, but for this test's namespace and web address (it names npm start's)
  const example = readFileSync(
    path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../publish.yaml'),
    'utf8',
  )
  t.match(example, /upstream_url: http:\/\/localhost:4020\/healthz/)
  const demo = `demo${Date.now().toString(36)}`
  const f = path.join(home, 'example.yaml')
  writeFileSync(
    f,
    example.replace('namespace: acme-demo', `namespace: ${demo}`).replaceAll('http://localhost:4020', webUrl),
  )
  const r = await run(['publish', '--file', f, '--test', '--json'])
  t.equal(r.code, 0, r.out + r.err)
  const pub = JSON.parse(r.out)
  t.match(pub, { namespace: { namespace: demo, created: true }, service: { name: 'demo', created: true } })
  t.match(pub.endpoints, [
    { slug: 'status', price: '1000', schemes: ['exact', 'deferred'], test: { ok: true, status: 200 } },
    { slug: 'hash', price: '2000', handler: 'hash-generator' },
  ])
})
