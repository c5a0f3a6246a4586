/**
 * What the proxy origin sells, described by the origin itself: `/.well-known/x402` (the x402
 * discovery document agent wallets read) and `/openapi.json` (OpenAPI 3.1, prices in `x-payment`),
 * one seller's at `/<namespace>/openapi.json`. Generated from the in-memory endpoint table and
 * cached per table (the table is replaced on every registry change), never per request.
 */
import type { Config } from '../config.js'
import { formatUsdc } from '../x402/usdc-amount.js'
import type { EndpointEntry } from './endpoint-table.js'

type JsonSchema = {
  type?: unknown
  properties?: Record<string, JsonSchema>
  required?: string[]
  description?: string
  items?: JsonSchema
  [k: string]: unknown
}

const QUERY_METHODS = new Set(['GET', 'HEAD', 'DELETE'])

/**
 * A query parameter per top-level input field, required ones first (the schema is stored as jsonb,
 * which keeps no key order); arrays of objects and objects travel as JSON.
 */
export function queryParameters(schema: JsonSchema | null | undefined): unknown[] {
  const required = new Set(schema?.required ?? [])
  const fields = Object.entries(schema?.properties ?? {}).sort(
    ([a], [b]) => Number(required.has(b)) - Number(required.has(a)),
  )
  return fields.map(([name, sub]) => {
    const { description, ...rest } = sub
    const types = Array.isArray(sub.type) ? sub.type : [sub.type]
    const json = types.includes('object') || (types.includes('array') && sub.items?.type === 'object')
    return {
      name,
      in: 'query',
      required: required.has(name),
      ...(description ? { description } : {}),
      ...(json
        ? { content: { 'application/json': { schema: rest } } }
        : { schema: rest, ...(types.includes('array') ? { style: 'form', explode: true } : {}) }),
    }
  })
}

/** The price of one endpoint as the `x-payment` extension and the discovery document state it. */
function payment(e: EndpointEntry, config: Readonly<Config>) {
  return {
    protocol: 'x402',
    x402Versions: [1, 2],
    schemes: [...e.schemes],
    amount: e.price.toString(),
    usdc: formatUsdc(e.price),
    currency: 'USDC',
    asset: config.chain.usdc.address,
    network: config.chain.caip2,
    payTo: e.payTo,
  }
}

function operation(e: EndpointEntry, method: string, config: Readonly<Config>) {
  const schema = e.inputSchema as JsonSchema | undefined
  const pay = payment(e, config)
  const op: Record<string, unknown> = {
    operationId: `${e.namespace}.${e.service}.${e.slug}.${method.toLowerCase()}`,
    summary: e.description || `${e.service}/${e.slug}`,
    tags: [`${e.namespace}/${e.service}`],
    'x-payment': pay,
    responses: {
      200: {
        description: `the result (${e.mimeType}); the PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1) header carries the payment id`,
        content: { [e.mimeType]: {} },
      },
      400: { description: 'invalid input, the field named; nothing is charged' },
      402: {
        description: `payment required: ${pay.usdc} USDC (${pay.amount} atomic units) to ${e.payTo} on ${pay.network}. The body is the x402 v1 challenge, the PAYMENT-REQUIRED header the v2 one; pay with PAYMENT-SIGNATURE (v2) or X-PAYMENT (v1)`,
      },
    },
  }
  if (QUERY_METHODS.has(method)) {
    const params = queryParameters(schema)
    if (params.length > 0) op.parameters = params
  } else {
    op.requestBody = {
      required: (schema?.required?.length ?? 0) > 0,
      content: { 'application/json': { schema: schema ?? {} } },
    }
  }
  return op
}

const OPENAPI_METHODS = new Set(['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH'])

/** OpenAPI 3.1 of these endpoints (sorted by path), each operation priced in `x-payment`. */
function openApiDocument(
  entries: readonly EndpointEntry[],
  config: Readonly<Config>,
  title: string,
): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const e of [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    const ops: Record<string, unknown> = {}
    for (const method of e.methods)
      if (OPENAPI_METHODS.has(method)) ops[method.toLowerCase()] = operation(e, method, config)
    paths[e.path] = ops
  }
  return {
    openapi: '3.1.0',
    info: {
      title,
      version: '1',
      description:
        'Each call is paid per request with x402 (USDC on ' +
        `${config.chain.caip2}): call once to get the 402 challenge, then repeat the call with a signed payment. ` +
        'Any x402 client pays these (e.g. @x402/fetch, x402-fetch, tollgate fetch). The price of each operation is in its x-payment member.',
    },
    servers: [{ url: config.proxyUrl }],
    paths,
  }
}

/**
 * The x402 discovery document: `resources` lists the payable URLs (what wallets that read
 * `/.well-known/x402` expect), `endpoints` each with its methods and price, and where the
 * OpenAPI document is.
 */
function wellKnownDocument(entries: readonly EndpointEntry[], config: Readonly<Config>) {
  const sorted = [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  return {
    version: 1,
    x402Version: 2,
    resources: sorted.map((e) => e.resourceUrl),
    endpoints: sorted.map((e) => ({
      url: e.resourceUrl,
      methods: [...e.methods],
      description: e.description,
      mimeType: e.mimeType,
      price: payment(e, config),
    })),
    openapi: `${config.proxyUrl}/openapi.json`,
    instructions:
      'Each resource is paid per call with x402: request it, read the 402 challenge (PAYMENT-REQUIRED header, v2; JSON body, v1), and repeat the request with a signed payment. Input schemas are in the OpenAPI document.',
  }
}

/**
 * The documents of one endpoint table, each serialized once per table: the table is replaced on
 * every registry change, so a new table starts with an empty cache.
 */
export function createOriginDocuments(config: Readonly<Config>) {
  const cache = new WeakMap<ReadonlyMap<string, EndpointEntry>, Map<string, string | null>>()
  function cached(table: ReadonlyMap<string, EndpointEntry>, key: string, make: () => string | null): string | null {
    let docs = cache.get(table)
    if (!docs) cache.set(table, (docs = new Map()))
    if (!docs.has(key)) docs.set(key, make())
    return docs.get(key)!
  }
  return {
    wellKnown(table: ReadonlyMap<string, EndpointEntry>): string {
      return cached(table, 'well-known', () => JSON.stringify(wellKnownDocument([...table.values()], config)))!
    },
    openApi(table: ReadonlyMap<string, EndpointEntry>): string {
      return cached(table, 'openapi', () =>
        JSON.stringify(openApiDocument([...table.values()], config, 'Paid endpoints')),
      )!
    },
    /** one seller's document; null when it has no enabled endpoint (only sellers' documents are cached) */
    namespaceOpenApi(table: ReadonlyMap<string, EndpointEntry>, namespace: string): string | null {
      const own = [...table.values()].filter((e) => e.namespace === namespace)
      if (own.length === 0) return null
      return cached(table, `ns:${namespace}`, () =>
        JSON.stringify(openApiDocument(own, config, `${namespace}: paid endpoints`)),
      )
    },
  }
}
