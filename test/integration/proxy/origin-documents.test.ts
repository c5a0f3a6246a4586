/**
 * The proxy origin describes itself: /.well-known/x402 and /openapi.json (OpenAPI 3.1, checked by
 * an OpenAPI validator from npm), one seller's at /<namespace>/openapi.json, all following the
 * endpoint table as the registry changes.
 */
import t, { type Test } from 'tap'
import { compileErrors, validate } from '@readme/openapi-parser'
import { loadHandlerRegistry } from '../../../src/pool/handler-registry.js'
import { HOSTED_NAMESPACE } from '../../../src/services/hosted-seed.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'

const platform = await startTestPlatform(t)
const { proxyUrl, deps } = platform
const handlers = await loadHandlerRegistry()
const get = async (path: string) => {
  const res = await fetch(`${proxyUrl}${path}`)
  return { res, body: (await res.json()) as any }
}

async function valid(t: Test, doc: unknown, what: string) {
  const result = await validate(structuredClone(doc) as never)
  t.ok(result.valid, `${what} is valid OpenAPI${result.valid ? '' : `: ${compileErrors(result)}`}`)
}

t.test('/.well-known/x402: every resource with its price and methods', async (t) => {
  const { res, body } = await get('/.well-known/x402')
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /application\/json/)
  t.equal(body.version, 1)
  t.equal(body.resources.length, handlers.size, 'one per hosted endpoint')
  for (const r of body.resources) t.ok(URL.canParse(r) && r.startsWith(`${proxyUrl}/`), `${r} is a URL here`)
  const hash = body.endpoints.find((e: { url: string }) => e.url.endsWith('/toolbox/hash-generator'))
  t.match(hash, {
    methods: ['GET', 'POST'],
    price: { amount: '1000', usdc: '0.001', currency: 'USDC', network: deps.config.chain.caip2, schemes: ['exact'] },
  })
  t.equal(body.openapi, `${proxyUrl}/openapi.json`)
  // the resource it names is what the proxy sells
  const paid = await fetch(hash.url)
  await paid.body?.cancel()
  t.equal(paid.status, 402)
})

t.test('/openapi.json and /<namespace>/openapi.json are valid OpenAPI 3.1 with prices in x-payment', async (t) => {
  const { res, body } = await get('/openapi.json')
  t.equal(res.status, 200)
  t.equal(body.openapi, '3.1.0')
  t.same(body.servers, [{ url: proxyUrl }])
  t.equal(Object.keys(body.paths).length, handlers.size)
  await valid(t, body, '/openapi.json')
  const op = body.paths[`/${HOSTED_NAMESPACE}/toolbox/hash-generator`].get
  t.match(op['x-payment'], { amount: '1000', usdc: '0.001', asset: deps.config.chain.usdc.address })
  t.ok(
    op.parameters.some((p: { name: string; required: boolean }) => p.name === 'text' && p.required),
    'input fields as query parameters',
  )
  t.match(body.paths[`/${HOSTED_NAMESPACE}/toolbox/hash-generator`].post.requestBody, {
    content: { 'application/json': { schema: { required: ['text'] } } },
  })
  const own = await get(`/${HOSTED_NAMESPACE}/openapi.json`)
  t.equal(own.res.status, 200)
  t.same(Object.keys(own.body.paths), Object.keys(body.paths), 'the hosted seller has them all')
  await valid(t, own.body, `/${HOSTED_NAMESPACE}/openapi.json`)
  const none = await get('/nobody/openapi.json')
  t.equal(none.res.status, 404)
  t.equal(none.body.code, 'not_found')
  t.equal((await get('/NOT_A_NAMESPACE/openapi.json')).res.status, 404)
})

t.test('the documents follow the registry', async (t) => {
  const before = (await get('/openapi.json')).body
  await deps.db.updateTable('endpoints').set({ price: '5000' }).where('slug', '=', 'hash-generator').execute()
  await announceRegistryChange(deps)
  const after = await until('the new price in /openapi.json', async () => {
    const doc = (await get('/openapi.json')).body
    return doc.paths[`/${HOSTED_NAMESPACE}/toolbox/hash-generator`].get['x-payment'].amount === '5000' && doc
  })
  t.not(after, before)
  const wk = (await get('/.well-known/x402')).body
  t.equal(wk.endpoints.find((e: { url: string }) => e.url.endsWith('/hash-generator')).price.usdc, '0.005')
})
