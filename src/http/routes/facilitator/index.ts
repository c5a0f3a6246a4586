/**
 * Facilitator mode: the standard x402 facilitator API under `{base_url}/facilitator`, for sellers
 * who run their own server with the official middleware and use Tollgate only to verify and settle
 * (`new HTTPFacilitatorClient({ url: '{base_url}/facilitator', createAuthHeaders })`):
 *
 *   GET  /facilitator/supported   the kinds (x402Version, scheme, network) and the signers;
 *                                 batch-settlement's with `extra.receiverAuthorizer`
 *   POST /facilitator/verify      VerifyResponse (exact; batch-settlement deposit, voucher, refund)
 *   POST /facilitator/settle      SettleResponse, once the transaction is mined (exact; batch-settlement
 *                                 deposit and the seller's server's claim, settle and refund)
 *
 * verify and settle take a seller's API key (`Authorization: Bearer sk_…`): the relayer gas of a
 * settle is accounted to its user (`facilitator_settlements`); without one, 401
 * `facilitator_key_required`. `/supported` is public (it says only what the platform settles).
 * A body that is not the spec's shape is 400 with the spec's fields (`isValid: false` +
 * `invalidReason`, or `success: false` + `errorReason`) and the platform's (`code`, `message`); a
 * payment that is well formed but not good is 200 with `isValid: false` / `success: false`, as
 * the official facilitators answer.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Deps } from '../../../deps.js'
import { appError, statusText } from '../../../errors.js'
import { createFacilitator } from '../../../services/facilitator/facilitator.js'
import { readExactCall, type ExactCall } from '../../../services/facilitator/exact.js'
import { SettleRefusal } from '../../../services/facilitator/exact-settle.js'
import { readFacilitatorCall, type FacilitatorCall } from '../../../services/facilitator/request.js'

const BEARER = /^Bearer[ ]+(\S+)\s*$/i

/** The spec's failure body with the platform's error shape beside it. */
function withPlatformShape(status: number, body: Record<string, unknown>, code: string, message: string) {
  return { ...body, statusCode: status, code, error: statusText(status), message }
}

export function facilitatorRoutes(deps: Deps) {
  return async function routes(app: FastifyInstance): Promise<void> {
    const facilitator = createFacilitator(deps, app.log)

    /** the user whose API key is on the request */
    async function caller(request: FastifyRequest): Promise<string> {
      const header = request.headers.authorization
      const m = header === undefined ? null : BEARER.exec(header)
      if (!m) throw appError('facilitator_key_required', {}, { headers: { 'www-authenticate': 'Bearer' } })
      const p = await deps.services.apiKeys.authenticate(m[1]!).catch((err) => {
        throw Object.assign(err, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } })
      })
      return p.userId
    }

    app.get('/supported', async () => facilitator.supported())

    /**
     * The body as an exact or batch-settlement call; a malformed one is answered 400 (`fail` builds
     * the spec's body of the route), a scheme this facilitator does not take 200 `unsupported_scheme`.
     */
    async function readCall(
      request: FastifyRequest,
      reply: FastifyReply,
      fail: (reason: string, message: string, network: string) => Record<string, unknown>,
    ): Promise<{ exact: ExactCall } | { batch: FacilitatorCall } | undefined> {
      const call = readFacilitatorCall(request.body)
      if ('ok' in call) {
        const network = (request.body as { paymentRequirements?: { network?: unknown } } | null)?.paymentRequirements
          ?.network
        const body = fail(call.reason, call.message, typeof network === 'string' ? network.slice(0, 64) : '')
        await reply.code(400).send(withPlatformShape(400, body, call.reason, call.message))
        return undefined
      }
      const scheme = call.requirements.scheme
      if (facilitator.batch && scheme === 'batch-settlement' && call.envelope.scheme === scheme) return { batch: call }
      if (scheme !== 'exact' || call.envelope.scheme !== 'exact') {
        const schemes = (await facilitator.supported()).kinds.map((k) => k.scheme)
        const message = `this facilitator takes ${schemes.join(', ') || 'no scheme (no relayer is configured)'}`
        await reply.code(200).send(fail('unsupported_scheme', message, call.requirements.network))
        return undefined
      }
      const exact = readExactCall(call)
      if ('ok' in exact) {
        const body = fail(exact.reason, exact.message, call.requirements.network)
        await reply.code(400).send(withPlatformShape(400, body, exact.reason, exact.message))
        return undefined
      }
      return { exact }
    }

    const verifyFailure = (reason: string, message: string) => ({
      isValid: false,
      invalidReason: reason,
      invalidMessage: message,
    })
    const settleFailure = (reason: string, message: string, network: string) => ({
      success: false,
      errorReason: reason,
      errorMessage: message,
      transaction: '',
      network,
    })

    app.post('/verify', async (request, reply) => {
      await caller(request)
      const call = await readCall(request, reply, verifyFailure)
      if (!call) return reply
      return 'exact' in call ? facilitator.exact.verify(call.exact) : facilitator.batch!.verify(call.batch)
    })

    app.post('/settle', async (request, reply) => {
      const userId = await caller(request)
      const call = await readCall(request, reply, settleFailure)
      if (!call) return reply
      const answer =
        'exact' in call
          ? await facilitator.exact.settle(call.exact, userId)
          : await facilitator.batch!.settle(call.batch, userId)
      if (!(answer instanceof SettleRefusal)) return answer
      if (answer.status === 200) return answer.answer
      const a = answer.answer
      return reply
        .code(answer.status)
        .send(
          withPlatformShape(answer.status, { ...a }, a.errorReason ?? 'unexpected_settle_error', a.errorMessage ?? ''),
        )
    })
  }
}
