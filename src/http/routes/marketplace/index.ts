import { createFixedWindowLimiter } from '../../../limits/fixed-window.js'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Deps } from '../../../deps.js'
import { appError } from '../../../errors.js'
import { createMarketplace, type Marketplace } from '../../../services/marketplace/marketplace.js'
import { syncCatalog } from '../../../services/marketplace/sync-catalog.js'
import { operatorAuth } from './operator-auth.js'
import {
  parseBazaarSearchQuery,
  parseDiscoveryQuery,
  parseEndpointQuery,
  parseListQuery,
  parseNetwork,
} from './query.js'

export interface MarketplaceRoutesOptions {
  /** bazaar submissions allowed per client IP per window */
  submissions?: { max: number; windowSeconds: number }
}

type Query = Record<string, string | string[] | undefined>
const JSON_TYPE = 'application/json; charset=utf-8'
// short: the server drops its cache on every change; revalidation with the ETag is cheap
const CACHE_CONTROL = 'public, max-age=10, stale-while-revalidate=30'
const SUBMISSION_BODY_LIMIT = 64 * 1024

function notModified(request: FastifyRequest, etag: string): boolean {
  const inm = request.headers['if-none-match']
  if (!inm) return false
  return inm.trim() === '*' || inm.split(',').some((t) => t.trim().replace(/^W\//, '') === etag)
}

/** Send a pre-serialized JSON body with validators, or 304 when the client's copy is current. */
function sendCached(
  request: FastifyRequest,
  reply: FastifyReply,
  etag: string,
  body: () => string | Buffer,
): FastifyReply {
  reply.header('etag', etag).header('cache-control', CACHE_CONTROL)
  if (notModified(request, etag)) return reply.code(304).send()
  return reply.type(JSON_TYPE).send(body())
}

async function snapshotOr503(market: Marketplace) {
  try {
    return await market.snapshot()
  } catch {
    throw appError('service_unavailable', { detail: 'the marketplace is temporarily unavailable; retry shortly' })
  }
}

/** The public marketplace reads under /api/v1: the list, endpoint search and one entry. */
function publicRoutes(api: FastifyInstance, market: Marketplace, ownNetwork: Deps['config']['chain']['network']): void {
  api.get('/agents/marketplace', async (request, reply) => {
    const q = request.query as Query
    const network = parseNetwork(q, ownNetwork)
    const list = parseListQuery(q)
    const snap = await snapshotOr503(market)
    const etag = market.etag(snap, 'list', [network, list.source, list.category, list.search, list.limit, list.cursor])
    let page: ReturnType<Marketplace['list']> | undefined
    const render = () => (page ??= market.list(snap, list, network))
    if (!notModified(request, etag)) {
      const p = render()
      reply.header('x-total-count', String(p.total))
      if (p.nextCursor) {
        const next = new URLSearchParams(
          Object.entries(q).filter((e): e is [string, string] => typeof e[1] === 'string' && e[0] !== 'cursor'),
        )
        next.set('cursor', p.nextCursor)
        reply.header('x-next-cursor', p.nextCursor).header('link', `</api/v1/agents/marketplace?${next}>; rel="next"`)
      }
    }
    return sendCached(request, reply, etag, () => render().body)
  })

  // every listed endpoint by what it does: words, filters, cursor pages (the search index)
  api.get('/endpoints', async (request, reply) => {
    const q = request.query as Query
    const network = parseNetwork(q, ownNetwork)
    const query = parseEndpointQuery(q)
    const snap = await snapshotOr503(market)
    const etag = market.etag(snap, 'endpoints', [network, { ...query, maxPrice: query.maxPrice?.toString() }])
    let page: ReturnType<Marketplace['searchEndpoints']> | undefined
    const render = () => (page ??= market.searchEndpoints(snap, query, network))
    if (!notModified(request, etag)) {
      reply.header('x-total-count', String(render().total))
      if (render().nextCursor) reply.header('x-next-cursor', render().nextCursor!)
    }
    return sendCached(request, reply, etag, () => render().body)
  })

  api.get('/agents/marketplace/:id', async (request, reply) => {
    const { id } = request.params as { id: string }
    const network = parseNetwork(request.query as Query, ownNetwork)
    const snap = await snapshotOr503(market)
    const body = market.get(snap, id, network)
    if (body === undefined) throw appError('not_found', { what: 'marketplace entry' })
    return sendCached(request, reply, market.etag(snap, 'get', [network, id]), () => body)
  })
}

/** Operator routes (bearer OPERATOR_TOKEN): curate catalog entries, review bazaar submissions. */
function operatorRoutes(deps: Deps) {
  const admin = deps.services.curatedAdmin
  return async function (op: FastifyInstance): Promise<void> {
    op.addHook('preHandler', operatorAuth(deps.config.operatorToken))
    op.get('/operator/marketplace/entries', async (request) =>
      admin.list(request.query as { source?: string; status?: string }),
    )
    op.post('/operator/marketplace/catalog', async (request, reply) =>
      reply.code(201).send(await admin.createCatalog(request.body)),
    )
    op.put('/operator/marketplace/catalog/:id', async (request) =>
      admin.replaceCatalog((request.params as { id: string }).id, request.body),
    )
    op.post('/operator/marketplace/catalog/sync', async () => syncCatalog(deps))
    op.delete('/operator/marketplace/entries/:id', async (request, reply) => {
      await admin.remove((request.params as { id: string }).id)
      return reply.code(204).send()
    })
    for (const [action, enabled] of [
      ['enable', true],
      ['disable', false],
    ] as const) {
      op.post(`/operator/marketplace/entries/:id/${action}`, async (request) => {
        const { id } = request.params as { id: string }
        await admin.setEnabled(id, enabled)
        return { id, enabled }
      })
    }
    for (const [action, status] of [
      ['approve', 'approved'],
      ['reject', 'rejected'],
    ] as const) {
      op.post(`/operator/marketplace/entries/:id/${action}`, async (request) => {
        const { id } = request.params as { id: string }
        const note = (request.body as { note?: unknown } | undefined)?.note
        await admin.review(id, status, typeof note === 'string' ? note.slice(0, 1000) : null)
        return { id, status }
      })
    }
  }
}

/**
 * The marketplace: public list/get under /api/v1, bazaar submissions, operator routes, and the
 * x402 Bazaar discovery listing and search at /discovery/resources and /discovery/search. Owns its snapshot cache and subscriber.
 */
export function marketplaceRoutes(deps: Deps, opts: MarketplaceRoutesOptions = {}) {
  const limits = opts.submissions ?? { max: 5, windowSeconds: 600 }
  const limiter = createFixedWindowLimiter(deps.redis, deps.key)
  return async function (app: FastifyInstance): Promise<void> {
    // the snapshot's loads only read: a replica's lag delays a change by at most that lag (the
    // fingerprint recheck catches a change an invalidation rebuilt too early from the replica)
    const market = createMarketplace({ ...deps, db: deps.readDb ?? deps.db })
    await market.start()
    app.addHook('onClose', () => market.close())
    const admin = deps.services.curatedAdmin
    const ownNetwork = deps.config.chain.network

    await app.register(
      async (api) => {
        publicRoutes(api, market, ownNetwork)

        api.post('/agents/marketplace/submissions', { bodyLimit: SUBMISSION_BODY_LIMIT }, async (request, reply) => {
          const hit = await limiter.hit('marketplace-submissions', request.ip, limits)
          if (hit.limited)
            throw appError(
              'rate_limited',
              { retryAfter: hit.resetSeconds },
              { headers: { 'retry-after': String(hit.resetSeconds) } },
            )
          const created = await admin.submit(request.body, request.ip)
          return reply
            .code(202)
            .send({ ...created, message: 'received; the listing appears once an operator approves it' })
        })

        await api.register(operatorRoutes(deps))
      },
      { prefix: '/api/v1' },
    )

    app.get('/discovery/resources', async (request, reply) => {
      const q = parseDiscoveryQuery(request.query as Query)
      const snap = await snapshotOr503(market)
      return sendCached(request, reply, market.etag(snap, 'discovery', [q.type, q.limit, q.offset]), () =>
        market.discovery(snap, q),
      )
    })

    // the x402 Bazaar search (`withBazaar(client).extensions.bazaar.search`)
    app.get('/discovery/search', async (request, reply) => {
      const q = parseBazaarSearchQuery(request.query as Query)
      const snap = await snapshotOr503(market)
      return sendCached(request, reply, market.etag(snap, 'discovery-search', [q]), () => market.bazaarSearch(snap, q))
    })
  }
}
