import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import pLimit from 'p-limit'
import { makeDomainSeparator, transferAuthDigest } from '../chain/transfer-auth-digest.js'
import { checkContractSignature, type ContractSignatureCheck } from '../chain/contract-signature.js'
import { SMART_WALLET_SIGNATURE } from '../chain/recover-signer.js'
import type { SignerRecovery } from '../chain/signer-recovery.js'
import type { Deps } from '../deps.js'
import { AppError, appError } from '../errors.js'
import { sendAppError } from '../http/plugins/error-handler.js'
import { missingSettings, rateLimitOf, type HandlerContext, type HandlerRateLimit } from '../pool/handler-contract.js'
import type { HandlerPool } from '../pool/handler-pool.js'
import type { RegisteredHandler } from '../pool/handler-registry.js'
import type { PayerCredit } from '../services/payer-credit.js'
import { withError, type Challenge } from '../x402/challenge.js'
import { decodePaymentHeader } from '../x402/decode-payment.js'
import { encodePaymentResponse, paymentResponseHeaderName } from '../x402/payment-response.js'
import { settlementReasonCode, type ReasonCode } from '../x402/reasons.js'
import { minValidForSeconds, verifyRequirements } from '../x402/verify-requirements.js'
import type { EndpointEntry, EndpointTable } from './endpoint-table.js'
import type { PaymentLedger } from './payment-ledger.js'
import { FORWARD_TIMEOUT_MS, type UpstreamClient, type UpstreamOptions } from './upstream.js'

export interface SyncSettlement {
  /**
   * settles one served payment now; resolves with its transaction hash or a failure reason,
   * `final` when the payment failed (or was voided) and will never settle
   */
  settleNow(paymentId: string): Promise<{ ok: true; txHash: string } | { ok: false; reason: string; final?: boolean }>
}

/** A sync-mode payment that failed on-chain: the buyer gets the challenge again, not the resource. */
class SyncSettlementFailed extends Error {
  constructor(
    readonly reason: ReasonCode,
    message: string,
  ) {
    super(message)
  }
}

export interface PaidRouteDeps {
  deps: Deps
  table: EndpointTable
  ledger: PaymentLedger
  credit: PayerCredit
  pool: HandlerPool
  /** recovers payment signers, on worker threads when configured */
  recovery: SignerRecovery
  handlers: ReadonlyMap<string, RegisteredHandler>
  upstream: UpstreamClient
  /** decrypts upstream_config secrets (seller API keys, signing secret) */
  upstreamOptions(entry: EndpointEntry): UpstreamOptions
  /** present when sync settlement is available */
  sync?: SyncSettlement
  /** tests may let handlers reach loopback addresses */
  allowPrivateNetwork?: boolean
  providers?: Record<string, string | undefined>
}

const NO_PROVIDERS: Record<string, string | undefined> = Object.freeze({})

const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const

/** Reply with the 402 challenge, optionally carrying a reason code and message. */
function sendChallenge(reply: FastifyReply, challenge: Challenge, reason?: ReasonCode, message?: string) {
  const c = reason ? withError(challenge, reason, message) : challenge
  return reply
    .code(402)
    .header('cache-control', 'no-store')
    .header('payment-required', c.v2HeaderValue)
    .type('application/json; charset=utf-8')
    .send(reason ? c.v1BodyJson : challenge.v1BodyBytes)
}

/**
 * The paid hot path at /<namespace>/<service>/<slug>: challenge, local verification, one Redis
 * round trip (replay guard + credit), durable record, dispatch, outcome record, response headers.
 * No RPC call happens here except the first sight of a payer (its balance is then cached).
 */
export function paidRoute(p: PaidRouteDeps) {
  const { deps, table, ledger, credit } = p
  const { config } = deps
  const domainSeparator = makeDomainSeparator({
    name: config.chain.usdc.name,
    version: config.chain.usdc.version,
    chainId: config.chain.chainId,
    verifyingContract: config.chain.usdc.address,
  })
  const asset = config.chain.usdc.address.toLowerCase()
  const refreshing = new Set<string>()

  /** balanceOf for one payer (the list `credit.readBalances` hands over holds just it) */
  async function readBalance([payer]: string[]): Promise<bigint[]> {
    const balance = await deps.chain.readContract({
      address: config.chain.usdc.address,
      abi: [{ type: 'function', name: 'balanceOf', stateMutability: 'view', inputs: [{ name: 'a', type: 'address' }], outputs: [{ type: 'uint256' }] }] as const,
      functionName: 'balanceOf',
      args: [payer as `0x${string}`],
    })
    return [balance]
  }

  function refreshInBackground(payer: `0x${string}`, log: FastifyRequest['log']) {
    if (refreshing.has(payer)) return
    refreshing.add(payer)
    credit
      .readBalances(asset, [payer], readBalance)
      .catch((err) => log.warn({ err: (err as Error).message, payer }, 'balance refresh failed'))
      .finally(() => refreshing.delete(payer))
  }

  // Smart-wallet checks cost an RPC round trip each: bounded concurrency and a bounded queue.
  const SMART_WALLET_CONCURRENCY = 16
  const SMART_WALLET_QUEUE = 256
  const smartWalletLimit = pLimit(SMART_WALLET_CONCURRENCY)
  async function smartWalletCheck(wallet: `0x${string}`, digest: Uint8Array, signature: `0x${string}`): Promise<ContractSignatureCheck | 'busy'> {
    if (smartWalletLimit.pendingCount >= SMART_WALLET_QUEUE) return 'busy'
    return smartWalletLimit(() => checkContractSignature(deps.chain, wallet, digest, signature, { counterfactual: config.x402.counterfactualWallets }))
  }

  // what each handler lacks and its own rate limit depend only on the provider settings, fixed for the process
  const providerSettings = p.providers ?? {}
  const handlerTerms = new Map<RegisteredHandler, { missing: string[]; rateLimit: HandlerRateLimit | undefined }>(
    [...p.handlers.values()].map((h) => [h, { missing: missingSettings(h.module, providerSettings), rateLimit: rateLimitOf(h.module, providerSettings) }]),
  )

  /** Checks a smart wallet's signature through RPC; undefined when valid, else how to refuse. */
  async function checkSmartWallet(wallet: `0x${string}`, digest: Uint8Array, signature: `0x${string}`, request: FastifyRequest): Promise<undefined | { kind: 'challenge'; reason: ReasonCode; message?: string } | { kind: 'error'; error: AppError }> {
    let check: ContractSignatureCheck | 'busy'
    try {
      check = await smartWalletCheck(wallet, digest, signature)
    } catch (err) {
      request.log.warn({ err: (err as Error).message }, 'smart wallet signature check failed')
      return { kind: 'error', error: appError('service_unavailable', { detail: 'the smart wallet signature could not be checked on-chain now; retry shortly' }, { headers: { 'retry-after': '1' } }) }
    }
    if (check === 'valid') return undefined
    if (check === 'busy') return { kind: 'error', error: appError('service_unavailable', { detail: 'too many smart wallet payments are being checked; retry shortly' }, { headers: { 'retry-after': '1' } }) }
    if (check === 'undeployed') return { kind: 'challenge', reason: 'invalid_exact_evm_payload_undeployed_smart_wallet' }
    if (check === 'counterfactual') return { kind: 'challenge', reason: 'invalid_exact_evm_payload_undeployed_smart_wallet', message: 'this platform does not accept ERC-6492 signatures of wallets not deployed yet; deploy the wallet first' }
    return { kind: 'challenge', reason: 'invalid_exact_evm_payload_signature' }
  }

  /** Fixed-window count per endpoint in Redis; returns seconds to wait when over the limit. */
  async function overRateLimit(endpointId: string, limit: { requests: number; perSeconds: number }, nowMs: number): Promise<number | undefined> {
    const windowMs = limit.perSeconds * 1000
    const window = Math.floor(nowMs / windowMs)
    const key = deps.key('ratelimit', 'endpoint', endpointId, String(window))
    const [[, count]] = (await deps.redis.multi().incr(key).pexpire(key, windowMs + 1000).exec()) as [[unknown, number], unknown]
    if (count <= limit.requests) return undefined
    return Math.max(1, Math.ceil(((window + 1) * windowMs - nowMs) / 1000))
  }

  return async function (app: FastifyInstance) {
    // Bodies are kept raw: hosted handlers parse JSON themselves, upstreams get the bytes as sent.
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1024 * 1024 }, (_req, body, done) => done(null, body))

    app.route({
      method: [...ALL_METHODS],
      url: '/:namespace/:service/:slug',
      handler: async (request, reply) => {
        const { namespace, service, slug } = request.params as Record<string, string>
        const entry = table.get(`/${namespace}/${service}/${slug}`)
        if (!entry) return sendAppError(reply, appError('not_found', { what: `endpoint /${namespace}/${service}/${slug}` }))
        const method = request.method === 'HEAD' ? 'GET' : request.method
        if (!entry.methods.has(method)) {
          return sendAppError(reply, appError('method_not_allowed', { method: request.method, allow: entry.allow }, { headers: { allow: entry.allow } }))
        }
        const challenge = entry.challenges.get(method)!
        const xPayment = request.headers['x-payment']
        const paymentSignature = request.headers['payment-signature']
        if (xPayment === undefined && paymentSignature === undefined) return sendChallenge(reply, challenge)

        // Input is checked before any payment work: bad input costs the buyer nothing, not even a record.
        let input: unknown
        let registered: RegisteredHandler | undefined
        if (entry.handler) {
          registered = p.handlers.get(entry.handler)
          if (!registered) return sendAppError(reply, appError('service_unavailable', { detail: `the handler of ${entry.path} is not available in this process` }))
          // an endpoint whose provider settings are unset could only fail: refused before any payment work
          const { missing } = handlerTerms.get(registered)!
          if (missing.length) return sendAppError(reply, appError('upstream_not_configured', { detail: `${entry.handler} needs ${missing.join(', ')}, which this deployment has not set; nothing was charged` }))
          const parsed = parseInput(request, method)
          if (!parsed.ok) return sendAppError(reply, parsed.error)
          const problem = registered.validate(parsed.input, method === 'GET' ? 'query' : 'body')
          if (problem) return sendAppError(reply, appError('invalid_parameter', { param: problem.field, detail: problem.message }, { details: { param: problem.field } }))
          input = parsed.input
        } else {
          const options = p.upstreamOptions(entry)
          // forwarding without the seller's stored settings would skip its headers, limit and signature
          if (options.unreadable) return sendAppError(reply, appError('service_unavailable', { detail: "this proxy cannot read the endpoint's settings (TOLLGATE_MASTER_KEY is not set); nothing was charged" }))
          const missing = (options.requiredHeaders ?? []).find((h) => request.headers[h] === undefined)
          if (missing) return sendAppError(reply, appError('invalid_parameter', { param: missing, detail: `the ${missing} header is required by this endpoint` }, { details: { param: missing } }))
        }

        const decoded = decodePaymentHeader(
          { xPayment: typeof xPayment === 'string' ? xPayment : undefined, paymentSignature: typeof paymentSignature === 'string' ? paymentSignature : undefined },
          Math.max(config.x402.maxHeaderBytes, challenge.paymentHeaderBudget),
        )
        if (!decoded.ok) return sendChallenge(reply, challenge, decoded.reason, decoded.message)
        const nowMs = Date.now()
        // long enough to be settled after the call: a payment that expires first would be served for nothing
        const callMs = registered ? (registered.module.timeoutMs ?? config.handlers.timeoutMs) : (p.upstreamOptions(entry).timeoutMs ?? FORWARD_TIMEOUT_MS)
        const checked = verifyRequirements(decoded, challenge, Math.floor(nowMs / 1000), { maxValidForSeconds: config.x402.maxValidForSeconds, minValidForSeconds: minValidForSeconds(callMs / 1000) })
        if (!checked.ok) return sendChallenge(reply, challenge, checked.reason, checked.message)
        const auth = checked.authorization
        const digest = transferAuthDigest(domainSeparator, auth)
        const signer = await p.recovery.recover(digest, checked.signature)
        // a smart wallet's signature needs RPC: checked after the guard below, so that a payment
        // without funds (or replayed) costs no chain call
        const smartWallet = signer === SMART_WALLET_SIGNATURE
        if (!smartWallet && (signer === null || signer !== auth.from.toLowerCase())) return sendChallenge(reply, challenge, 'invalid_exact_evm_payload_signature')
        const payer = auth.from.toLowerCase() as `0x${string}`
        const nonce = auth.nonce.toLowerCase()

        // One Redis round trip: nonce unused, credit covers the value, and whether the payer is blocked.
        const reserveArgs = { payer, asset, nonce, value: auth.value, validBefore: Number(auth.validBefore), nowMs }
        let guard
        try {
          guard = await credit.reserve(reserveArgs)
          if (guard.result === 'unknown_balance') {
            await credit.warm(asset, payer, readBalance)
            guard = await credit.reserve(reserveArgs)
          } else if (guard.result === 'insufficient' && guard.stale) {
            // funded since the balance was cached (a top-up)? one read, at most every 30 s per payer
            await credit.readBalances(asset, [payer], readBalance)
            guard = await credit.reserve(reserveArgs)
          }
        } catch (err) {
          request.log.error({ err: (err as Error).message }, 'payment guard unavailable')
          return sendAppError(reply, appError('payment_not_recorded'))
        }
        // gives the reservation back, nonce included, for a payment that will not be recorded (it may be retried)
        const unreserve = () => Promise.allSettled([credit.release({ payer, asset, value: auth.value }), credit.forgetNonce(payer, nonce)])
        // a blocked payer gets no more unsettled credit: its payment is settled before it is served,
        // and that success lifts the block ("blocked until it pays")
        let settleFirst = entry.settlementMode === 'sync'
        switch (guard.result) {
          case 'nonce_used':
            return sendChallenge(reply, challenge, 'invalid_exact_evm_nonce_already_used')
          case 'blocked':
            if (!p.sync) {
              await unreserve()
              return sendChallenge(reply, challenge, 'payer_blocked')
            }
            settleFirst = true
            break
          case 'insufficient':
          case 'unknown_balance':
            return sendChallenge(reply, challenge, 'invalid_exact_evm_insufficient_balance')
        }
        if (guard.stale) refreshInBackground(payer, request.log)

        if (smartWallet) {
          // the slow path: the wallet answers through RPC (ERC-1271; ERC-6492 if not deployed yet)
          const refused = await checkSmartWallet(payer, digest, checked.signature, request)
          if (refused) {
            await unreserve()
            if (refused.kind === 'challenge') return sendChallenge(reply, challenge, refused.reason, refused.message)
            return sendAppError(reply, refused.error)
          }
        }

        // The seller's per-endpoint rate limit (or a hosted handler's own), shared by every proxy
        // process. Only payments that passed every check count, so unfunded or forged calls cannot
        // use up a seller's budget. Over the limit: nothing is recorded and the nonce is freed, so
        // the same payment can retry.
        const rateLimit = entry.upstream ? p.upstreamOptions(entry).rateLimit : registered && handlerTerms.get(registered)!.rateLimit
        if (rateLimit) {
          let retryAfter: number | undefined
          try {
            retryAfter = await overRateLimit(entry.id, rateLimit, nowMs)
          } catch (err) {
            request.log.error({ err: (err as Error).message }, 'rate limiter unavailable')
            await unreserve()
            return sendAppError(reply, appError('payment_not_recorded'))
          }
          if (retryAfter !== undefined) {
            await unreserve()
            return sendAppError(reply, appError('rate_limited', { retryAfter }, { headers: { 'retry-after': String(retryAfter), 'ratelimit-policy': `${rateLimit.requests};w=${rateLimit.perSeconds}` } }))
          }
        }

        // Durable record before anything runs; fail closed.
        const id = randomUUID()
        let recorded
        try {
          recorded = await ledger.record({
            id,
            endpoint_id: entry.id,
            resource: entry.resourceUrl,
            method,
            x402_version: decoded.version,
            network: config.chain.caip2,
            asset,
            payer,
            pay_to: auth.to.toLowerCase(),
            value: auth.value,
            valid_after: auth.validAfter,
            valid_before: auth.validBefore,
            nonce,
            signature: checked.signature,
            settlement_mode: settleFirst ? 'sync' : entry.settlementMode,
          })
        } catch (err) {
          request.log.error({ err: (err as Error).message }, 'payment record failed')
          await unreserve()
          return sendAppError(reply, appError('payment_not_recorded'))
        }
        if (recorded === 'duplicate') {
          await credit.release({ payer, asset, value: auth.value }).catch(() => {})
          return sendChallenge(reply, challenge, 'invalid_exact_evm_nonce_already_used')
        }

        const voidPayment = async (reason: string) => {
          await ledger.finish(id, 'voided', reason).catch((err) => request.log.error({ err: (err as Error).message, id }, 'void failed'))
          await credit.release({ payer, asset, value: auth.value }).catch(() => {})
        }
        const responseHeader = paymentResponseHeaderName(decoded.version)
        const settled = (transaction: string) =>
          encodePaymentResponse({ success: true, transaction, network: decoded.version === 1 ? config.chain.network : config.chain.caip2, payer, paymentId: id })

        if (registered) {
          const ctx: HandlerContext = {
            method: method as 'GET' | 'POST',
            accept: String(request.headers.accept ?? '*/*').toLowerCase(),
            // only handlers that reach outside read settings; the others are spared copying all of them per call
            providers: registered.io ? (p.providers ?? NO_PROVIDERS) : NO_PROVIDERS,
            allowPrivateNetwork: p.allowPrivateNetwork ?? false,
          }
          const out = await p.pool.run({ file: registered.file, slug: entry.handler!, io: registered.io }, input, ctx, registered.module.timeoutMs ?? config.handlers.timeoutMs)
          if (out.kind !== 'ok' || out.status >= 400) {
            const e = handlerError(out)
            await voidPayment(e.code)
            if (out.kind === 'ok') return reply.code(out.status).type(out.contentType).send(out.body)
            // under `err`, so the log's serializer cuts any URL in the message to its host (a provider URL may hold a key)
            if (out.kind === 'error' || out.kind === 'crashed') request.log.warn({ slug: entry.handler, err: out.message }, 'handler failed')
            return sendAppError(reply, e)
          }
          const tx = await markServed(id, settleFirst, request)
          if (tx instanceof SyncSettlementFailed) return sendChallenge(reply, challenge, tx.reason, tx.message)
          if (tx instanceof Error) return sendAppError(reply, appError('payment_not_recorded'))
          reply.header(responseHeader, settled(tx))
          return reply.code(out.status).type(out.contentType).send(typeof out.body === 'string' ? out.body : Buffer.from(out.body.buffer, out.body.byteOffset, out.body.byteLength))
        }

        // Seller's upstream.
        const subPath = request.url.slice(request.url.indexOf('?') >= 0 ? request.url.indexOf('?') : request.url.length)
        let res
        try {
          res = await p.upstream.forward({
            origin: entry.upstream!.url,
            subPath,
            method: request.method,
            headers: request.headers,
            body: Buffer.isBuffer(request.body) ? request.body : undefined,
            options: p.upstreamOptions(entry),
            paymentId: id,
          })
        } catch (err) {
          await voidPayment('upstream_failed')
          const timedOut = /timeout/i.test((err as Error).name + (err as Error).message)
          if ((err as { code?: string }).code !== 'ESSRF') request.log.warn({ err: (err as Error).message, endpoint: entry.path }, 'upstream failed')
          return sendAppError(reply, timedOut ? appError('handler_timeout', { timeoutMs: p.upstreamOptions(entry).timeoutMs ?? FORWARD_TIMEOUT_MS }) : appError('upstream_failed', { detail: 'the seller origin could not be reached' }))
        }
        if (res.status >= 400) {
          await voidPayment(`upstream_status_${res.status}`)
          reply.code(res.status).headers(res.headers)
          return reply.send(res.body)
        }
        const tx = await markServed(id, settleFirst, request)
        if (tx instanceof Error) {
          // destroying emits 'error' on the body; without a listener that would crash the process
          res.body.on('error', () => {})
          res.body.destroy()
          if (tx instanceof SyncSettlementFailed) return sendChallenge(reply, challenge, tx.reason, tx.message)
          return sendAppError(reply, appError('payment_not_recorded'))
        }
        reply.code(res.status).headers(res.headers).header(responseHeader, settled(tx))
        return reply.send(res.body)
      },
    })

    /**
     * Records `served` (and settles now for sync endpoints and blocked payers); returns the tx hash known so far.
     * A sync payment that failed on-chain returns SyncSettlementFailed: as with the reference
     * middleware, the response is then withheld (402), since nothing was charged. One that is
     * still pending or waits for a relayer will settle through the batch worker, so it is served.
     */
    async function markServed(id: string, settleFirst: boolean, request: FastifyRequest): Promise<string | Error> {
      try {
        // false: the payment is no longer `verified` (the sweep voided it as a call that never
        // ended): it will never be settled, so the response must not leave as a paid one
        if (!(await ledger.finish(id, 'served'))) {
          request.log.warn({ id }, 'served record found the payment already voided')
          return new Error('the payment was voided before the call ended')
        }
      } catch (err) {
        // The payment stays `verified`; the recovery sweep voids verified payments that never got an outcome.
        request.log.error({ err: (err as Error).message, id }, 'served record failed')
        return err as Error
      }
      if (settleFirst && p.sync) {
        let r: Awaited<ReturnType<SyncSettlement['settleNow']>>
        try {
          r = await p.sync.settleNow(id)
        } catch (err) {
          // the chain or its RPC failed mid-way: the payment is served and the batch worker settles it
          request.log.warn({ id, err: (err as Error).message }, 'sync settlement interrupted; left to the batch')
          return ''
        }
        if (r.ok) return r.txHash
        request.log.warn({ id, reason: r.reason }, 'sync settlement failed')
        if (r.final) return new SyncSettlementFailed(settlementReasonCode(r.reason), `the payment could not be settled (${r.reason}), so the response was withheld; nothing was charged`)
      }
      return ''
    }

    app.get('/_tollgate/payments/:id', async (request, reply) => {
      const { id } = request.params as { id: string }
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) {
        return sendAppError(reply, appError('invalid_parameter', { param: 'id', detail: 'expected a payment id (UUID)' }, { details: { param: 'id' } }))
      }
      const row = await deps.db
        .selectFrom('payments')
        .select(['id', 'status', 'tx_hash', 'network', 'payer', 'pay_to', 'value', 'resource', 'failure_reason', 'created_at', 'settled_at'])
        .where('id', '=', id)
        .executeTakeFirst()
      if (!row) return sendAppError(reply, appError('not_found', { what: 'payment' }))
      reply.header('cache-control', row.status === 'settled' || row.status === 'voided' || row.status === 'failed' ? 'public, max-age=3600' : 'no-store')
      return {
        id: row.id,
        status: row.status,
        transaction: row.tx_hash,
        network: row.network,
        payer: row.payer,
        payTo: row.pay_to,
        amount: row.value,
        resource: row.resource,
        failureReason: row.failure_reason,
        createdAt: row.created_at.getTime(),
        settledAt: row.settled_at ? row.settled_at.getTime() : null,
      }
    })
  }
}

function parseInput(request: FastifyRequest, method: string): { ok: true; input: Record<string, unknown> } | { ok: false; error: AppError } {
  if (method === 'GET') return { ok: true, input: { ...(request.query as Record<string, unknown>) } }
  const body = request.body
  if (!Buffer.isBuffer(body) || body.length === 0) return { ok: true, input: {} }
  const type = String(request.headers['content-type'] ?? '')
  if (type && !type.includes('json')) return { ok: false, error: appError('unsupported_media_type', { type }) }
  try {
    const parsed = JSON.parse(body.toString('utf8'))
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return { ok: false, error: appError('invalid_parameter', { param: 'body', detail: 'expected a JSON object' }, { details: { param: 'body' } }) }
    }
    return { ok: true, input: parsed }
  } catch {
    return { ok: false, error: appError('invalid_parameter', { param: 'body', detail: 'the body is not valid JSON' }, { details: { param: 'body' } }) }
  }
}

function handlerError(out: Awaited<ReturnType<HandlerPool['run']>>): AppError {
  switch (out.kind) {
    case 'input': {
      if (out.status === 413) return new AppError('payload_too_large', 413, out.message, { param: out.field })
      // handlers often start their message with the field's name, which the template already says
      const detail = out.message.startsWith(`${out.field}: `) ? out.message.slice(out.field.length + 2) : out.message
      return appError(out.status === 422 ? 'unusable_parameter' : 'invalid_parameter', { param: out.field, detail }, { details: { param: out.field } })
    }
    case 'upstream':
      return appError(out.code, { detail: out.message })
    case 'timeout':
      return appError('handler_timeout', { timeoutMs: out.timeoutMs })
    case 'busy':
      return appError('service_unavailable', { detail: 'every worker of this endpoint is busy; retry shortly; nothing was charged' }, { headers: { 'retry-after': '1' } })
    case 'ok':
      return appError('handler_failed', { detail: `status ${out.status}` })
    default:
      return appError('handler_failed', { detail: (out.kind === 'crashed' && out.detail) || 'the handler crashed' })
  }
}

