import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Config } from '../config.js'
import { appError } from '../errors.js'
import type { EndpointTable } from './endpoint-table.js'
import { createOriginDocuments } from './origin-documents.js'

const NAMESPACE_RE = /^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$/
// short: a registry change shows within a minute even through a shared cache
const CACHE_CONTROL = 'public, max-age=60'

function send(reply: FastifyReply, body: string): FastifyReply {
  return reply
    .header('cache-control', CACHE_CONTROL)
    .header('access-control-allow-origin', '*')
    .type('application/json; charset=utf-8')
    .send(body)
}

/**
 * The proxy origin describes itself: `GET /.well-known/x402`, `GET /openapi.json` and
 * `GET /<namespace>/openapi.json`, from the endpoint table (origin-documents.ts).
 */
export function originRoutes(table: Pick<EndpointTable, 'current'>, config: Readonly<Config>) {
  const docs = createOriginDocuments(config)
  return async function (app: FastifyInstance) {
    app.get('/.well-known/x402', async (_request, reply) => send(reply, docs.wellKnown(table.current())))
    app.get('/openapi.json', async (_request, reply) => send(reply, docs.openApi(table.current())))
    app.get<{ Params: { namespace: string } }>('/:namespace/openapi.json', async (request, reply) => {
      const { namespace } = request.params
      const body = NAMESPACE_RE.test(namespace) ? docs.namespaceOpenApi(table.current(), namespace) : null
      if (body === null) throw appError('not_found', { what: `seller ${namespace} with enabled endpoints` })
      return send(reply, body)
    })
  }
}
