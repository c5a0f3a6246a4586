import type { Kysely } from 'kysely'
import type { Config } from '../../config.js'
import type { Database } from '../../db/database.js'
import { offeredSchemes } from '../../schemes/batch-settlement/offered.js'
import {
  HTTP_METHODS,
  networkOfCaip2,
  type CuratedAgentDTO,
  type CuratedAgentEndpointDTO,
  type CuratedAgentSkillDTO,
  type EndpointMethod,
} from './types.js'

export interface LoadedEntries {
  /** every visible entry with every enabled endpoint, on all networks */
  entries: CuratedAgentDTO[]
  /** response mime type of platform endpoints, for the discovery shape */
  mimeTypes: Map<string, string>
  /** where each platform endpoint lives and what it takes, for the endpoint search */
  platform?: Map<string, PlatformEndpointInfo>
  /**
   * `batch-settlement` as the proxy offers it (where BATCH_SETTLEMENT is on and the platform holds
   * its receiverAuthorizer key): what discovery's requirement of that scheme carries in `extra`
   */
  batch?: { receiverAuthorizer: string; withdrawDelay: number }
}

export interface PlatformEndpointInfo {
  namespace: string
  service: string
  slug: string
  /** the top-level fields of its input schema */
  inputFields: string[]
}

// the foundation tables declare timestamps as Generated<ColumnType<Date>>, which Kysely selects as the ColumnType itself
const ms = (d: unknown): number => (d instanceof Date ? d : new Date(d as string)).getTime()
const methodsOf = (m: string[]): EndpointMethod[] =>
  m.filter((x): x is EndpointMethod => (HTTP_METHODS as readonly string[]).includes(x))

/** What loading reads: the database and the config (not the whole Deps, which imports this folder). */
type LoadDeps = { db: Kysely<Database>; config: Readonly<Config> }
/**
 * Read every listed entry: platform entries derived from sellers/services/endpoints (one per
 * enabled service), and approved, enabled catalog and bazaar entries. Only enabled endpoints.
 */
export async function loadEntries(deps: LoadDeps): Promise<LoadedEntries> {
  const [platform, curated] = await Promise.all([loadPlatform(deps), loadCurated(deps)])
  return {
    entries: [...platform.entries, ...curated],
    mimeTypes: platform.mimeTypes,
    platform: platform.platform,
    ...(platform.batch ? { batch: platform.batch } : {}),
  }
}

/**
 * The marketplace DTO's one `x402Schema` (the product spec's `exact | deferred | null`) of what an
 * endpoint offers: `exact` where it is offered; a scheme settled later (`deferred`,
 * `batch-settlement`) is `deferred` there; null for anything else.
 */
export function dtoSchema(schemes: readonly string[]): 'exact' | 'deferred' | null {
  if (schemes.includes('exact')) return 'exact'
  if (schemes.includes('deferred') || schemes.includes('batch-settlement')) return 'deferred'
  return null
}

/** The receiverAuthorizer of batch-settlement when the proxy offers the scheme (read only: the proxy creates the key). */
async function batchOffer({ db, config }: LoadDeps): Promise<LoadedEntries['batch']> {
  if (!config.batchSettlement.enabled || !config.masterKey) return undefined
  const key = await db
    .selectFrom('platform_keys')
    .select('address')
    .where('purpose', '=', 'batch-receiver-authorizer')
    .executeTakeFirst()
  return key && { receiverAuthorizer: key.address, withdrawDelay: config.batchSettlement.withdrawDelay }
}

/** The enabled services of the platform, with their seller. */
function platformServices(db: Kysely<Database>) {
  return db
    .selectFrom('services as s')
    .innerJoin('sellers as se', 'se.id', 's.seller_id')
    .where('s.enabled', '=', true)
    .select([
      's.id',
      's.name',
      's.display_name',
      's.description',
      's.category',
      's.tags',
      's.pay_to',
      's.website_url',
      's.docs_url',
      's.logo_url',
      's.created_at',
      's.updated_at',
    ])
    .select(['se.namespace', 'se.agent_address', 'se.updated_at as seller_updated_at'])
    .execute()
}

/** The enabled endpoints of enabled services, by service and slug. */
function platformEndpoints(db: Kysely<Database>) {
  return db
    .selectFrom('endpoints as e')
    .innerJoin('services as s', 's.id', 'e.service_id')
    .where('e.enabled', '=', true)
    .where('s.enabled', '=', true)
    .select([
      'e.id',
      'e.service_id',
      'e.slug',
      'e.methods',
      'e.price',
      'e.description',
      'e.mime_type',
      'e.schemes',
      'e.input_schema',
      'e.created_at',
      'e.updated_at',
    ])
    .orderBy('e.service_id')
    .orderBy('e.slug')
    .execute()
}

type ServiceRow = Awaited<ReturnType<typeof platformServices>>[number]
type EndpointRow = Awaited<ReturnType<typeof platformEndpoints>>[number]

async function loadPlatform({ db, config }: LoadDeps): Promise<LoadedEntries> {
  const [batch, services, endpoints] = await Promise.all([
    batchOffer({ db, config }),
    platformServices(db),
    platformEndpoints(db),
  ])
  const byService = new Map<string, EndpointRow[]>()
  for (const e of endpoints) {
    const list = byService.get(e.service_id)
    if (list) list.push(e)
    else byService.set(e.service_id, [e])
  }
  const mimeTypes = new Map<string, string>()
  const platform = new Map<string, PlatformEndpointInfo>()
  const entries = services.map((s): CuratedAgentDTO => {
    let updated = Math.max(ms(s.updated_at), ms(s.seller_updated_at))
    const eps = (byService.get(s.id) ?? []).map((e): CuratedAgentEndpointDTO => {
      updated = Math.max(updated, ms(e.updated_at))
      mimeTypes.set(e.id, e.mime_type)
      const properties = (e.input_schema as { properties?: unknown } | null)?.properties
      platform.set(e.id, {
        namespace: s.namespace,
        service: s.name,
        slug: e.slug,
        inputFields: properties && typeof properties === 'object' ? Object.keys(properties) : [],
      })
      return platformEndpoint(s, e, config, batch)
    })
    return {
      id: s.id,
      name: s.display_name,
      description: s.description,
      source: 'platform',
      enabled: true,
      category: s.category,
      tags: s.tags,
      url: s.website_url,
      logo_url: s.logo_url,
      docs_url: s.docs_url,
      platform_agent_address: s.agent_address,
      endpoints: eps,
      skills: [],
      created_at: ms(s.created_at),
      updated_at: updated,
    }
  })
  return { entries, mimeTypes, platform, ...(batch ? { batch } : {}) }
}

/** One platform endpoint as the marketplace lists it, with the schemes its challenge offers. */
function platformEndpoint(
  s: ServiceRow,
  e: EndpointRow,
  config: Readonly<Config>,
  batch: LoadedEntries['batch'],
): CuratedAgentEndpointDTO {
  // as the proxy's challenge offers them: deferred only where an escrow is configured,
  // batch-settlement where the proxy runs it (on every hosted endpoint of the platform)
  const offered = offeredSchemes(s.namespace, e.schemes)
  const schemes = [
    'exact',
    ...(config.deferredEscrowAddress && offered.includes('deferred') ? ['deferred'] : []),
    ...(batch && offered.includes('batch-settlement') ? ['batch-settlement'] : []),
  ]
  return {
    id: e.id,
    curated_agent_id: s.id,
    url: `${config.proxyUrl}/${s.namespace}/${s.name}/${e.slug}`,
    methods: methodsOf(e.methods),
    x402_enabled: true,
    // the proxy answers v1 (X-PAYMENT) and v2 (PAYMENT-SIGNATURE); v2 is the current protocol
    x402_protocol_version: 2,
    network: config.chain.network,
    description: e.description === '' ? null : e.description,
    enabled: true,
    pricing_config: {
      amount: e.price,
      amountAtomicUnit: e.price,
      currency: 'USDC',
      networkCaip2ID: config.chain.caip2,
      assetAddress: config.chain.usdc.address,
      payTo: s.pay_to,
      x402Schema: dtoSchema(schemes),
    },
    schemes,
    created_at: ms(e.created_at),
    updated_at: ms(e.updated_at),
  }
}

async function loadCurated({ db }: Pick<LoadDeps, 'db'>): Promise<CuratedAgentDTO[]> {
  const visible = db
    .selectFrom('curated_agents')
    .select('id')
    .where('status', '=', 'approved')
    .where('enabled', '=', true)
  const [agents, endpoints, skills] = await Promise.all([
    db.selectFrom('curated_agents').selectAll().where('status', '=', 'approved').where('enabled', '=', true).execute(),
    db
      .selectFrom('curated_agent_endpoints')
      .selectAll()
      .where('enabled', '=', true)
      .where('curated_agent_id', 'in', visible)
      .orderBy('curated_agent_id')
      .orderBy('position')
      .execute(),
    db
      .selectFrom('curated_agent_skills')
      .selectAll()
      .where('curated_agent_id', 'in', visible)
      .orderBy('curated_agent_id')
      .orderBy('position')
      .execute(),
  ])
  const eps = group(
    endpoints.map((e): CuratedAgentEndpointDTO => ({
      id: e.id,
      curated_agent_id: e.curated_agent_id,
      url: e.url,
      methods: methodsOf(e.methods),
      x402_enabled: e.x402_enabled,
      x402_protocol_version: e.x402_protocol_version === 1 ? 1 : 2,
      // rows stored before submissions derived it from the CAIP-2 id would otherwise show on no network
      network: e.network ?? networkOfCaip2(e.network_caip2_id) ?? null,
      description: e.description,
      enabled: e.enabled,
      pricing_config: {
        amount: e.amount,
        amountAtomicUnit: e.amount,
        currency: e.currency,
        networkCaip2ID: e.network_caip2_id,
        assetAddress: e.asset_address,
        payTo: e.pay_to,
        x402Schema: e.x402_schema,
      },
      schemes: [e.x402_schema ?? 'exact'],
      created_at: ms(e.created_at),
      updated_at: ms(e.updated_at),
    })),
  )
  const sks = group(
    skills.map((s): CuratedAgentSkillDTO => ({
      id: s.id,
      curated_agent_id: s.curated_agent_id,
      name: s.name,
      instructions: s.instructions ?? null,
      docs_url: s.docs_url,
      skillmd_url: s.skillmd_url,
      created_at: ms(s.created_at),
      updated_at: ms(s.updated_at),
    })),
  )
  return agents.map((a) => ({
    id: a.id,
    name: a.name,
    description: a.description,
    source: a.source,
    enabled: a.enabled,
    category: a.category,
    tags: a.tags,
    url: a.url,
    logo_url: a.logo_url,
    docs_url: a.docs_url,
    platform_agent_address: a.platform_agent_address,
    endpoints: eps.get(a.id) ?? [],
    skills: sks.get(a.id) ?? [],
    created_at: ms(a.created_at),
    updated_at: ms(a.updated_at),
  }))
}

function group<T extends { curated_agent_id: string }>(rows: T[]): Map<string, T[]> {
  const m = new Map<string, T[]>()
  for (const r of rows) {
    const l = m.get(r.curated_agent_id)
    if (l) l.push(r)
    else m.set(r.curated_agent_id, [r])
  }
  return m
}
