import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../../deps.js'
import { appError } from '../../../errors.js'
import { queryParameters } from '../../../proxy/origin-documents.js'
import { formatUsdc } from '../../../x402/usdc-amount.js'

const NAMESPACE_RE = /^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$/

type JsonSchema = {
  type?: unknown
  properties?: Record<string, JsonSchema>
  required?: string[]
  description?: string
  items?: JsonSchema
  [k: string]: unknown
}

/**
 * GET /docs/endpoints/{namespace}.json: an OpenAPI 3 document of one seller's enabled paid
 * endpoints on the proxy (`tollgate` for the hosted services), built from what the registry holds
 * (methods, price, description, output type and input schema), so an agent or a code generator sees
 * each endpoint's parameters. GET takes them from the query string (arrays of objects and objects as
 * JSON), POST as a JSON body. Read from Postgres per request; one seller's endpoints only.
 */
export function paidEndpointDocsRoutes(deps: Deps) {
  const { config } = deps
  return async function (app: FastifyInstance) {
    app.get<{ Params: { file: string } }>('/docs/endpoints/:file', { schema: { hide: true } }, async (request) => {
      const m = /^(.+)\.json$/.exec(request.params.file)
      const namespace = m?.[1]
      if (!namespace || !NAMESPACE_RE.test(namespace))
        throw appError('not_found', { what: `endpoint document ${request.params.file} (expected <namespace>.json)` })
      const rows = await deps.db
        .selectFrom('endpoints as e')
        .innerJoin('services as s', 's.id', 'e.service_id')
        .innerJoin('sellers as x', 'x.id', 's.seller_id')
        .select([
          'x.display_name as seller',
          's.name as service',
          's.display_name as service_name',
          's.pay_to',
          'e.slug',
          'e.methods',
          'e.price',
          'e.description',
          'e.mime_type',
          'e.input_schema',
        ])
        .where('x.namespace', '=', namespace)
        .where('s.enabled', '=', true)
        .where('e.enabled', '=', true)
        .orderBy('s.name')
        .orderBy('e.slug')
        .execute()
      if (rows.length === 0) throw appError('not_found', { what: `seller ${namespace} with enabled endpoints` })
      const paths: Record<string, Record<string, unknown>> = {}
      for (const r of rows) {
        const schema = (r.input_schema ?? null) as JsonSchema | null
        const price = `${formatUsdc(String(r.price))} USDC (${r.price} atomic units) to ${r.pay_to} on ${config.chain.caip2}`
        const ops: Record<string, unknown> = {}
        for (const method of r.methods) {
          const op: Record<string, unknown> = {
            operationId: `${r.service}.${r.slug}.${method.toLowerCase()}`,
            summary: r.description || `${r.service}/${r.slug}`,
            tags: [r.service_name],
            'x-price': {
              amount: String(r.price),
              asset: config.chain.usdc.address,
              payTo: r.pay_to,
              network: config.chain.caip2,
            },
            responses: {
              200: {
                description: `the result (${r.mime_type}); the PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1) header carries the payment id`,
                content: { [r.mime_type]: {} },
              },
              400: { description: 'invalid input, the field named; nothing is charged' },
              402: {
                description: `payment required: ${price}. The body is the x402 v1 challenge, the PAYMENT-REQUIRED header the v2 one; pay with PAYMENT-SIGNATURE (v2) or X-PAYMENT (v1)`,
              },
            },
          }
          if (method === 'GET' || method === 'HEAD' || method === 'DELETE') {
            op.parameters = queryParameters(schema)
          } else {
            op.requestBody = {
              required: (schema?.required?.length ?? 0) > 0,
              content: { 'application/json': { schema: schema ?? {} } },
            }
          }
          ops[method.toLowerCase()] = op
        }
        paths[`/${namespace}/${r.service}/${r.slug}`] = ops
      }
      return {
        openapi: '3.0.3',
        info: {
          title: `${rows[0]!.seller}: paid endpoints`,
          version: '1',
          description:
            'Each call is paid per request with x402 (USDC, scheme exact): call once to get the 402 challenge, then repeat the call with a signed payment. ' +
            'Any x402 client pays these (e.g. @x402/fetch, x402-fetch, tollgate/client).',
        },
        servers: [{ url: config.proxyUrl }],
        paths,
      }
    })
  }
}
