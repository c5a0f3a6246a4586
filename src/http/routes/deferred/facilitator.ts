/**
 * The facilitator endpoints of the `deferred` scheme, as edgeandnode/x402
 * `specs/schemes/deferred/scheme_deferred_evm_facilitator.md` names and shapes them, under
 * `/deferred/`, for this platform's escrow and chain:
 *
 *   GET  /deferred/buyers/:buyer                      escrow account + latest voucher for a seller
 *   POST /deferred/buyers/:buyer/flush                flush (or flush-all) authorization, sent by a relayer
 *   GET  /deferred/vouchers/available/:buyer/:seller  the voucher to aggregate onto
 *   GET  /deferred/vouchers/:id/:nonce                one stored voucher
 *   POST /deferred/vouchers                           store a voucher, verified as the proxy verifies a call's
 *   POST /deferred/vouchers/:id/:nonce/settle         collect a stored voucher on chain now
 *
 * Read endpoints need no authentication (everything they show ends up on chain). Writes carry no
 * credentials either, as the spec says: each is authorized by a signature — a flush by the buyer's
 * flush authorization (the escrow's own view checks it), a stored voucher by the buyer's voucher
 * signature, checked exactly as the proxy's hot path checks a call's. The work is the facilitator
 * service's (deps.services.deferredFacilitator, src/services/deferred-facilitator/); these routes
 * hand it the request's parts and send its answer. Bad input gets 400 with the spec's error shape
 * and a sentence naming the problem.
 */
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Deps } from '../../../deps.js'
import { statusText } from '../../../errors.js'
import type { FacilitatorAnswer } from '../../../services/deferred-facilitator/context.js'
import {
  availableVoucherSchema,
  buyerAccountSchema,
  flushSchema,
  settleSchema,
  storedVoucherSchema,
  storeVoucherSchema,
} from './schemas.js'

/** the platform's code for a refusal that carries no reason of the spec's own */
const CODE_BY_STATUS: Record<number, string> = {
  400: 'invalid_parameter',
  404: 'not_found',
  429: 'rate_limited',
  503: 'service_unavailable',
}

/**
 * A refusal keeps the spec's own fields (`error`; `errorReason` / `errorMessage`; `isValid` /
 * `invalidReason` / `invalidMessage`) and also carries the platform's error shape (`statusCode`,
 * `code`, `error`, `message`), so a spec client and a client of the rest of this API each read it
 * their own way. Where the spec's `error` is present it is kept as it is (the refusal's text).
 */
function withPlatformShape(status: number, body: Record<string, unknown>): Record<string, unknown> {
  const text = (...vs: unknown[]) => vs.find((v): v is string => typeof v === 'string')
  return {
    ...body,
    statusCode: status,
    code: text(body.code, body.invalidReason, body.errorReason) ?? CODE_BY_STATUS[status] ?? 'invalid_parameter',
    error: text(body.error) ?? statusText(status),
    message: text(body.message, body.invalidMessage, body.errorMessage, body.error) ?? statusText(status),
  }
}

const send = (reply: FastifyReply, a: FacilitatorAnswer) =>
  reply
    .code(a.status)
    .headers(a.headers ?? {})
    .send(a.body)

type Params = Record<string, string>

export function deferredFacilitatorRoutes(deps: Deps) {
  return async function routes(app: FastifyInstance): Promise<void> {
    app.addHook('preSerialization', async (_request, reply, payload) =>
      reply.statusCode >= 400 && payload && typeof payload === 'object' && !Array.isArray(payload)
        ? withPlatformShape(reply.statusCode, payload as Record<string, unknown>)
        : payload,
    )
    if (!deps.config.deferredEscrowAddress) return
    // built on first use, with the deps' other services
    const facilitator = () => deps.services.deferredFacilitator

    app.get('/deferred/buyers/:buyer', { schema: buyerAccountSchema }, async (request, reply) =>
      send(reply, await facilitator().account((request.params as Params).buyer, request.query as Params)),
    )
    app.get(
      '/deferred/vouchers/available/:buyer/:seller',
      { schema: availableVoucherSchema },
      async (request, reply) => {
        const p = request.params as Params
        return send(reply, await facilitator().available(p.buyer, p.seller))
      },
    )
    app.get('/deferred/vouchers/:id/:nonce', { schema: storedVoucherSchema }, async (request, reply) => {
      const p = request.params as Params
      return send(reply, await facilitator().voucher(p.id, p.nonce))
    })
    app.post('/deferred/buyers/:buyer/flush', { schema: flushSchema }, async (request, reply) =>
      send(reply, await facilitator().flush((request.params as Params).buyer, request.body)),
    )
    app.post('/deferred/vouchers', { schema: storeVoucherSchema }, async (request, reply) =>
      send(reply, await facilitator().store(request.body, request.log)),
    )
    app.post('/deferred/vouchers/:id/:nonce/settle', { schema: settleSchema }, async (request, reply) => {
      const p = request.params as Params
      return send(reply, await facilitator().settle(p.id, p.nonce))
    })
  }
}
