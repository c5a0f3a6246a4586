import { sql } from 'kysely'
import type { CoreDeps as Deps } from '../core-deps.js'
import { missingSettings } from '../pool/handler-contract.js'
import type { RegisteredHandler } from '../pool/handler-registry.js'
import { announceRegistryChange } from './registry-events.js'

/** The platform's own hosted services (spec 4.3): namespace, service, methods and price. */
export const HOSTED_SERVICES = [
  {
    name: 'toolbox',
    displayName: 'Tollgate Toolbox',
    description:
      'Utilities, documents, media and validators; network, domain and e-mail checks; chain, market and DeFi data; web search, scraping and language models; each paid per call.',
    category: 'Utilities',
    tags: ['utilities', 'text', 'documents', 'media', 'validators', 'network', 'crypto', 'market-data', 'search', 'ai'],
    methods: ['GET', 'POST'],
    price: 1000n, // 0.001 USDC
    slugs: (slug: string) => !slug.startsWith('wallet-behavior-score'),
  },
  {
    name: 'wallet-score',
    displayName: 'Wallet Behavior Score',
    description: 'Lending-protocol risk scores for wallets.',
    category: 'Crypto',
    tags: ['defi', 'aave', 'risk', 'wallet'],
    methods: ['GET'],
    price: 10000n, // 0.01 USDC
    slugs: (slug: string) => slug.startsWith('wallet-behavior-score'),
  },
] as const

export const HOSTED_NAMESPACE = 'tollgate'

/** One line for logs: the endpoints waiting for settings, each with what it needs. */
export function describeWaiting(waiting: WaitingEndpoint[]): string {
  return waiting.map((w) => `${w.slug} (${w.missing.join(', ')})`).join(', ')
}

/** A hosted endpoint that answers 503 upstream_not_configured until the deployment sets the provider settings it needs. */
export interface WaitingEndpoint {
  slug: string
  missing: string[]
}

/**
 * Publishes every hosted handler of this build under tollgate/<service>/<slug>, idempotently; a
 * slug whose handler is not in this build is disabled, never served as a stub. One whose provider
 * settings (its module's `providers`) this deployment has not set is published all the same, as
 * spec 4.3 answers every unpaid call with a challenge, and listed in `waiting`: the proxy answers
 * its paid calls 503 upstream_not_configured before any payment is recorded (nothing charged).
 */
export async function seedHostedServices(
  deps: Pick<Deps, 'config' | 'db' | 'key' | 'redis'>,
  handlers: ReadonlyMap<string, RegisteredHandler>,
): Promise<{ published: number; waiting: WaitingEndpoint[] }> {
  const payTo = deps.config.receiverAddress
  if (!payTo) throw new Error('TOLLGATE_RECEIVER_ADDRESS is needed to publish the hosted services')
  let published = 0
  const waiting: WaitingEndpoint[] = []
  // the marketplace entries link to the OpenAPI document of these endpoints (input schemas, prices)
  const docsUrl = `${deps.config.baseUrl}/docs/endpoints/${HOSTED_NAMESPACE}.json`
  await deps.db.transaction().execute(async (trx) => {
    const seller = await trx
      .insertInto('sellers')
      .values({ namespace: HOSTED_NAMESPACE, display_name: 'Tollgate', owner_user_id: null, agent_address: null })
      .onConflict((oc) => oc.column('namespace').doUpdateSet({ updated_at: sql`now()` }))
      .returning('id')
      .executeTakeFirstOrThrow()
    for (const svc of HOSTED_SERVICES) {
      const service = await trx
        .insertInto('services')
        .values({
          seller_id: seller.id,
          name: svc.name,
          display_name: svc.displayName,
          description: svc.description,
          category: svc.category,
          tags: [...svc.tags],
          pay_to: payTo.toLowerCase(),
          website_url: null,
          docs_url: docsUrl,
          logo_url: null,
        })
        .onConflict((oc) =>
          oc.columns(['seller_id', 'name']).doUpdateSet({
            pay_to: payTo.toLowerCase(),
            description: svc.description,
            display_name: svc.displayName,
            category: svc.category,
            tags: [...svc.tags],
            docs_url: docsUrl,
            updated_at: sql`now()`,
          }),
        )
        .returning('id')
        .executeTakeFirstOrThrow()
      const slugs = [...handlers.keys()].filter(svc.slugs)
      for (const slug of slugs) {
        const mod = handlers.get(slug)!.module
        const methods = svc.methods.filter((m) => !mod.methods || mod.methods.includes(m))
        const missing = missingSettings(mod, deps.config.handlerProviders)
        const enabled = true
        await trx
          .insertInto('endpoints')
          .values({
            service_id: service.id,
            slug,
            methods,
            price: svc.price,
            description: mod.description,
            mime_type: mod.output.contentType,
            input_schema: JSON.stringify(mod.inputSchema),
            handler: slug,
            upstream_url: null,
            upstream_config: null,
            enabled,
          })
          .onConflict((oc) =>
            oc.columns(['service_id', 'slug']).doUpdateSet({
              methods,
              price: svc.price,
              description: mod.description,
              mime_type: mod.output.contentType,
              input_schema: JSON.stringify(mod.inputSchema),
              handler: slug,
              upstream_url: null,
              enabled,
              updated_at: sql`now()`,
            }),
          )
          .execute()
        published++
        if (missing.length) waiting.push({ slug, missing })
      }
      // handlers removed from this build stop being served
      let stale = trx
        .updateTable('endpoints')
        .set({ enabled: false, updated_at: sql`now()` })
        .where('service_id', '=', service.id)
        .where('enabled', '=', true)
      if (slugs.length > 0) stale = stale.where('slug', 'not in', slugs)
      await stale.execute()
    }
  })
  await announceRegistryChange(deps, { seller: HOSTED_NAMESPACE })
  return { published, waiting }
}
