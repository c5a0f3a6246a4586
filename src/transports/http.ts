import type { FastifyReply, FastifyRequest } from 'fastify'
import { sendAppError } from '../error-render.js'
import type { CallRefusal, CallRequest, CallResult, PaymentReceipt, PaymentTransport } from '../seam/types.js'
import { paymentRequiredHeader, withError, type Challenge } from '../x402/challenge.js'
import { encodePaymentResponse, paymentResponseHeaderName } from '../x402/payment-response.js'
import { settlementResponseOf } from './receipt.js'

/**
 * x402 over HTTP: the payment in `PAYMENT-SIGNATURE` (v2) or `X-PAYMENT` (v1); the challenge as a
 * 402 with the v1 JSON body and the v2 `PAYMENT-REQUIRED` header in one response; the receipt in
 * `PAYMENT-RESPONSE` (v2) or `X-PAYMENT-RESPONSE` (v1).
 */
export function createHttpTransport(chain: {
  network: string
  caip2: string
}): PaymentTransport<FastifyRequest, FastifyReply> {
  const receiptHeader = (r: PaymentReceipt) =>
    encodePaymentResponse(settlementResponseOf(r, r.version === 1 ? chain.network : chain.caip2))

  return {
    name: 'http',

    request(request): CallRequest {
      const { namespace, service, slug } = request.params as Record<string, string>
      const xPayment = request.headers['x-payment']
      const paymentSignature = request.headers['payment-signature']
      const signIn = request.headers['sign-in-with-x']
      return {
        path: `/${namespace}/${service}/${slug}`,
        method: request.method,
        payment:
          xPayment === undefined && paymentSignature === undefined
            ? undefined
            : {
                xPayment: typeof xPayment === 'string' ? xPayment : undefined,
                paymentSignature: typeof paymentSignature === 'string' ? paymentSignature : undefined,
              },
        signIn: typeof signIn === 'string' ? signIn : undefined,
        query: request.query as Record<string, unknown>,
        body: Buffer.isBuffer(request.body) ? request.body : undefined,
        headers: request.headers,
        url: request.url,
        log: request.log,
      }
    },

    send(reply, result: CallResult) {
      if (result.kind === 'refused') {
        const { refusal, challenge } = result
        if (refusal.error || !challenge) return sendAppError(reply, refusal.error!)
        return sendChallenge(reply, challenge, refusal)
      }
      reply.code(result.status)
      if (result.headers) reply.headers(result.headers)
      if (result.contentType) reply.type(result.contentType)
      if (result.receipt) reply.header(paymentResponseHeaderName(result.receipt.version), receiptHeader(result.receipt))
      return reply.send(result.body)
    },
  }
}

/** The 402 challenge, carrying the refusal's reason and message when it has one. */
function sendChallenge(reply: FastifyReply, challenge: Challenge, refusal: CallRefusal) {
  const c = refusal.reason ? withError(challenge, refusal.reason, refusal.message) : undefined
  return reply
    .code(402)
    .header('cache-control', 'no-store')
    .header(
      'payment-required',
      challenge.signIn
        ? paymentRequiredHeader(challenge, refusal.reason)
        : c
          ? c.v2HeaderValue
          : challenge.v2HeaderValue,
    )
    .type('application/json; charset=utf-8')
    .send(c ? c.v1BodyJson : challenge.v1BodyBytes)
}
