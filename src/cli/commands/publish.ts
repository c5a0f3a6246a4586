/**
 * `tollgate publish`: a namespace, a service and its endpoints, from flags or a JSON/YAML file,
 * created or brought up to date (publishing again updates), optionally tested (--test). Prices are
 * in USDC (`price: "0.001"`); `price_atomic` takes atomic units.
 */
import { readFileSync } from 'node:fs'
import { parse as parseYaml } from 'yaml'
import { formatUsdc } from '../../x402/usdc-amount.js'
import { parseUsdc } from '../amounts.js'
import type { Api } from '../api-client.js'
import { parseOptions, type Command } from '../command.js'
import { ApiError, UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { testEndpoint, testLine, type UpstreamTest } from './endpoints.js'

export const PUBLISH_HELP = `usage: tollgate publish --file FILE.yaml|FILE.json [--test] [--json]
       tollgate publish --namespace NS --service SVC --slug SLUG --price USDC
                        (--upstream-url URL | --handler NAME) [--method M]... [--description D]
                        [--settlement async|sync] [--mime-type T] [--pay-to 0x…] [--test] [--json]

Claims the namespace if it is not yours yet, creates the service (its payments go to --pay-to,
default the context's agent) and publishes each endpoint; what exists already is updated. The
answer names each endpoint's paid URL; a new upstream endpoint's signing secret (tgs_…) is shown
once. --test then has the platform call each upstream endpoint once. Uses the API key.

The file (docs/cli.md has the whole shape):
  namespace: acme
  service: { name: weather, pay_to: "0x…", category: Weather, tags: [forecast] }
  endpoints:
    - slug: forecast
      price: "0.001"            # USDC; or price_atomic: "1000"
      methods: [GET]
      upstream_url: https://api.acme.example/forecast
      schemes: [exact, deferred]  # optional: x402 schemes besides exact (deferred, upto)
publish.yaml in the repository is an example to start from.
`

const SERVICE_FIELDS = [
  'display_name',
  'description',
  'pay_to',
  'category',
  'tags',
  'website_url',
  'docs_url',
  'logo_url',
] as const
const ENDPOINT_FIELDS = [
  'methods',
  'description',
  'mime_type',
  'input_schema',
  'settlement_mode',
  'schemes',
  'handler',
  'upstream_url',
  'upstream',
  'enabled',
] as const
/** A price above this many USDC is taken for atomic units typed as USDC, and refused. */
const PRICE_SANITY_USDC = 1000n

interface Spec {
  namespace: string
  display_name?: string
  service: Record<string, unknown> & { name: string }
  endpoints: Array<Record<string, unknown> & { slug: string }>
}

/** The flags of publish (the file's, or one endpoint's). */
interface PublishFlags {
  file?: string
  namespace?: string
  service?: string
  slug?: string
  price?: string
  'upstream-url'?: string
  handler?: string
  method?: string[]
  description?: string
  settlement?: string
  'mime-type'?: string
  'pay-to'?: string
  test?: boolean
}

type Published = Record<string, any> & { created: boolean; test?: UpstreamTest }
type Ensured = { value: any; created: boolean }

export async function publishCommand(args: string[], cmd: Command): Promise<number> {
  const { values: v } = parseOptions(
    args,
    {
      file: { type: 'string', short: 'f' },
      namespace: { type: 'string' },
      service: { type: 'string' },
      slug: { type: 'string' },
      price: { type: 'string' },
      'upstream-url': { type: 'string' },
      handler: { type: 'string' },
      method: { type: 'string', multiple: true },
      description: { type: 'string' },
      settlement: { type: 'string' },
      'mime-type': { type: 'string' },
      'pay-to': { type: 'string' },
      test: { type: 'boolean' },
    },
    PUBLISH_HELP,
  )
  if (v.help) {
    cmd.io.stdout(PUBLISH_HELP)
    return EXIT.ok
  }
  const spec = specOf(v)
  const endpoints = spec.endpoints.map((e, i) => endpointBody(e, `endpoints[${i}]`))
  const api = cmd.api()
  const { namespace, service } = await ensureService(cmd, api, spec)
  const published = await publishEndpoints(api, spec, endpoints)
  const exit = v.test ? await testPublished(cmd, api, spec, published) : EXIT.ok
  reportPublication(cmd, spec, namespace, service, published)
  return exit
}

/** The spec from --file, or one endpoint from the flags; --pay-to overrides the file's. */
function specOf(v: PublishFlags): Spec {
  const flagged = [
    'namespace',
    'service',
    'slug',
    'price',
    'upstream-url',
    'handler',
    'method',
    'description',
    'settlement',
    'mime-type',
  ].filter((k) => v[k as keyof typeof v] !== undefined)
  let spec: Spec
  if (v.file !== undefined) {
    if (flagged.length)
      throw new UsageError(`use either --file or the flags (${flagged.map((k) => `--${k}`).join(', ')}), not both`)
    spec = readSpec(v.file)
  } else spec = specOfFlags(v)
  if (v['pay-to'] !== undefined) spec.service.pay_to = v['pay-to']
  return spec
}

function specOfFlags(v: PublishFlags): Spec {
  for (const k of ['namespace', 'service', 'slug', 'price'] as const)
    if (v[k] === undefined) throw new UsageError(`--${k} is needed (or --file)\n\n${PUBLISH_HELP}`)
  if ((v['upstream-url'] === undefined) === (v.handler === undefined))
    throw new UsageError('give --upstream-url (your origin) or --handler (a hosted handler), one of them')
  return {
    namespace: v.namespace!,
    service: { name: v.service! },
    endpoints: [
      {
        slug: v.slug!,
        price: v.price!,
        ...(v['upstream-url'] !== undefined ? { upstream_url: v['upstream-url'] } : { handler: v.handler }),
        ...(v.method ? { methods: v.method.map((m) => m.toUpperCase()) } : {}),
        ...(v.description !== undefined ? { description: v.description } : {}),
        ...(v.settlement !== undefined ? { settlement_mode: v.settlement } : {}),
        ...(v['mime-type'] !== undefined ? { mime_type: v['mime-type'] } : {}),
      },
    ],
  }
}

/** The namespace claimed and the service created or its listing updated. */
async function ensureService(cmd: Command, api: Api, spec: Spec): Promise<{ namespace: Ensured; service: Ensured }> {
  const s = cmd.settings()
  const ns = spec.namespace
  const svc = spec.service.name
  const listing = Object.fromEntries(
    SERVICE_FIELDS.filter((k) => spec.service[k] !== undefined).map((k) => [k, spec.service[k]]),
  )
  const payTo = listing.pay_to ?? s.context.agent
  // a new service needs a receiver: refused before anything is created
  if (!payTo && (await exists(api, `/v1/sellers/${ns}/services/${svc}`)) === false) {
    throw new UsageError(
      'where do payments go? give --pay-to 0x… (or service.pay_to in the file), or run tollgate setup so the context has an agent',
    )
  }
  const namespace = await ensure(api, `/v1/sellers/${ns}`, () =>
    api.user('POST', '/v1/sellers', {
      body: { namespace: ns, ...(spec.display_name ? { display_name: spec.display_name } : {}) },
    }),
  )
  const service = await ensure(
    api,
    `/v1/sellers/${ns}/services/${svc}`,
    () => api.user('POST', `/v1/sellers/${ns}/services`, { body: { name: svc, ...listing, pay_to: payTo } }),
    Object.keys(listing).length
      ? () => api.user('PATCH', `/v1/sellers/${ns}/services/${svc}`, { body: listing })
      : undefined,
  )
  return { namespace, service }
}

/** Each endpoint created, or updated where it exists. */
async function publishEndpoints(
  api: Api,
  spec: Spec,
  endpoints: Array<Record<string, unknown> & { slug: string }>,
): Promise<Published[]> {
  const published: Published[] = []
  const path = `/v1/sellers/${spec.namespace}/services/${spec.service.name}/endpoints`
  for (const { slug, ...body } of endpoints) {
    const r = await ensure(
      api,
      `${path}/${slug}`,
      () => api.user('POST', path, { body: { slug, ...body } }),
      () => api.user('PATCH', `${path}/${slug}`, { body }),
    )
    published.push({ ...r.value, created: r.created })
  }
  return published
}

/** --test: the platform calls each upstream endpoint once; the first failure's exit code. */
async function testPublished(cmd: Command, api: Api, spec: Spec, published: Published[]): Promise<number> {
  let exit: number = EXIT.ok
  for (const e of published) {
    if (!e.upstream_url) continue
    const t = await testEndpoint(api, cmd.out, [spec.namespace, spec.service.name, e.slug])
    e.test = t.test
    if (t.exit !== EXIT.ok && exit === EXIT.ok) exit = t.exit
  }
  return exit
}

function reportPublication(cmd: Command, spec: Spec, namespace: Ensured, service: Ensured, published: Published[]) {
  const ns = spec.namespace
  const svc = spec.service.name
  cmd.out.result(
    {
      object: 'publication',
      namespace: { ...namespace.value, created: namespace.created },
      service: { ...service.value, created: service.created },
      endpoints: published,
    },
    [
      `namespace ${ns}${namespace.created ? ' (claimed)' : ''}, service ${svc}${service.created ? ' (created)' : ''}, payments to ${service.value.pay_to}`,
      ...published.flatMap((e) => [
        `${e.created ? 'published' : 'updated'}  ${e.url}  ${formatUsdc(e.price)} USDC  ${e.methods.join(',')}  ${e.handler ? `handler ${e.handler}` : `→ ${e.upstream_url}`}`,
        ...(e.signing_secret
          ? [`  signing secret ${e.signing_secret} (shown once: your upstream checks X-Tollgate-Signature with it)`]
          : []),
        ...(e.test ? [`  ${testLine(e.test)}`] : []),
      ]),
    ],
  )
}

/** Whether GET `path` finds something (false on 404). */
async function exists(api: Api, path: string): Promise<boolean> {
  try {
    await api.user('GET', path)
    return true
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return false
    throw err
  }
}

/** GET `path`; on 404 `create()`; else `update()` when given. Which happened, and the answer. */
async function ensure(
  api: Api,
  path: string,
  create: () => Promise<any>,
  update?: () => Promise<any>,
): Promise<Ensured> {
  try {
    const found = await api.user('GET', path)
    return { value: update ? await update() : found, created: false }
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 404)) throw err
    return { value: await create(), created: true }
  }
}

/** Reads a publish file (.json, else YAML: YAML is a superset of JSON) into a checked Spec. */
export function readSpec(file: string): Spec {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`)
  }
  let raw: unknown
  try {
    raw = file.endsWith('.json') ? JSON.parse(text) : parseYaml(text)
  } catch (err) {
    throw new UsageError(
      `${file} is not valid ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${(err as Error).message.split('\n')[0]}`,
    )
  }
  const o = raw as Record<string, any>
  const bad = (what: string) => new UsageError(`${file}: ${what} (tollgate publish --help shows the shape)`)
  if (typeof o !== 'object' || o === null || Array.isArray(o))
    throw bad('expected an object with namespace, service and endpoints')
  if (typeof o.namespace !== 'string') throw bad('"namespace" is missing')
  const service = typeof o.service === 'string' ? { name: o.service } : o.service
  if (typeof service !== 'object' || service === null || typeof service.name !== 'string')
    throw bad('"service" needs a name')
  const list = o.endpoints ?? (o.endpoint ? [o.endpoint] : undefined)
  if (!Array.isArray(list) || list.length === 0) throw bad('"endpoints" is missing or empty')
  list.forEach((e, i) => {
    if (typeof e !== 'object' || e === null || typeof e.slug !== 'string') throw bad(`endpoints[${i}] needs a slug`)
  })
  const known = new Set(['namespace', 'display_name', 'service', 'endpoints', 'endpoint'])
  const unknown = Object.keys(o).filter((k) => !known.has(k))
  if (unknown.length) throw bad(`unknown field${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`)
  return {
    namespace: o.namespace,
    display_name: typeof o.display_name === 'string' ? o.display_name : undefined,
    service,
    endpoints: list,
  }
}

/** An endpoint of the spec as the API takes it: the price in atomic units, only known fields. */
function endpointBody(
  e: Record<string, unknown> & { slug: string },
  where: string,
): Record<string, unknown> & { slug: string } {
  const unknown = Object.keys(e).filter(
    (k) => k !== 'slug' && k !== 'price' && k !== 'price_atomic' && !(ENDPOINT_FIELDS as readonly string[]).includes(k),
  )
  if (unknown.length)
    throw new UsageError(`${where}: unknown field${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`)
  if ((e.price === undefined) === (e.price_atomic === undefined))
    throw new UsageError(
      `${where}: give price (USDC, e.g. "0.001") or price_atomic (atomic units, e.g. "1000"), one of them`,
    )
  let price: string
  if (e.price !== undefined) {
    price = parseUsdc(String(e.price), `${where}.price`)
    if (BigInt(price) > PRICE_SANITY_USDC * 1_000_000n)
      throw new UsageError(
        `${where}.price: ${e.price} USDC per call? price is in USDC; for atomic units use price_atomic`,
      )
  } else {
    if (!/^[0-9]+$/.test(String(e.price_atomic)))
      throw new UsageError(`${where}.price_atomic: expected atomic units as digits, e.g. "1000" for 0.001 USDC`)
    price = String(e.price_atomic)
  }
  const { price: _p, price_atomic: _a, ...rest } = e
  return { ...rest, price }
}
