import type { FastifyInstance } from 'fastify'
import type { PaymentTransport } from '../seam/types.js'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { PaidCall } from './paid-call/paid-call.js'

const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const

/**
 * The paid hot path at /<namespace>/<service>/<slug> over HTTP: the paid call's stages
 * (paid-call/paid-call.ts) between the HTTP transport's reading of the request and its rendering
 * of the result. No RPC call happens here except the first sight of a payer (its balance is then cached).
 */
export function paidRoute(paidCall: PaidCall, http: PaymentTransport<FastifyRequest, FastifyReply>) {
  return async function (app: FastifyInstance) {
    // Bodies are kept raw: hosted handlers parse JSON themselves, upstreams get the bytes as sent.
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1024 * 1024 }, (_req, body, done) => done(null, body))
    app.route({
      method: [...ALL_METHODS],
      url: '/:namespace/:service/:slug',
      handler: async (request, reply) => http.send(reply, await paidCall(http.request(request))),
    })
  }
}
