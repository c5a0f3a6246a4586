/**
 * Every hosted endpoint's 402 declares a Bazaar example request that its own declaration's schema
 * accepts: the module's `example` as `info.input.queryParams` (GET) or `info.input.body` (POST), and
 * its `output.example` as `info.output.example`, so an agent that discovers it can call it right the
 * first time and knows what it gets. Table-driven over every handler.
 */
import t from 'tap'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { loadHandlerRegistry } from '../../../src/pool/handler-registry.js'
import { HOSTED_NAMESPACE, HOSTED_SERVICES } from '../../../src/services/hosted-seed.js'
import { startTestPlatform } from '../../helpers/platform.js'

const platform = await startTestPlatform(t)
const handlers = await loadHandlerRegistry()
const ajv = new Ajv2020({ strict: false, allErrors: true })
// what Node's fetch (undici) reads by default: a 402 header past it could not be read at all
const MAX_HEADER = 16 * 1024

t.ok(handlers.size >= 100, `${handlers.size} hosted handlers`)
for (const [slug, { module }] of handlers) {
  const service = HOSTED_SERVICES.find((s) => s.slugs(slug))!
  const methods = service.methods.filter((m) => !module.methods || module.methods.includes(m))
  t.test(slug, async (t) => {
    for (const method of methods) {
      const res = await fetch(`${platform.proxyUrl}/${HOSTED_NAMESPACE}/${service.name}/${slug}`, {
        method,
        ...(method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {}),
      })
      await res.body?.cancel()
      t.equal(res.status, 402, `${method}: 402`)
      const header = res.headers.get('payment-required')!
      t.ok(header.length < MAX_HEADER, `${method}: the 402 header is ${header.length} bytes`)
      const bazaar = JSON.parse(Buffer.from(header, 'base64').toString('utf8')).extensions.bazaar
      const example = method === 'GET' ? bazaar.info.input.queryParams : bazaar.info.input.body
      t.same(example, module.example, `${method}: the module's example is the declared request`)
      t.ok(
        Object.keys(example).length > 0 || Object.keys(module.inputSchema.properties ?? {}).length === 0,
        'not empty',
      )
      t.same(bazaar.info.output, { type: 'json', example: module.output.example }, `${method}: the example answer`)
      const valid = ajv.validate(bazaar.schema, bazaar.info)
      t.ok(valid, `${method}: info passes the declaration's own schema ${JSON.stringify(ajv.errors)}`)
    }
  })
}
