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
 * signature, checked exactly as the proxy's hot path checks a call's (the deferred scheme's verify
 * and reserve: signature, continuity onto the stored head, escrow balance, deposit executed first).
 * Because this facilitator is the platform's, a voucher is stored only for a seller that offers
 * `deferred` on one of its enabled endpoints here, and a settle, which spends a relayer's gas,
 * sends a transaction only when the escrow can pay something for the voucher and at most once per
 * voucher id per SETTLE_INTERVAL_MS (a repeat is answered without a transaction: idempotent).
 * Bad input gets 400 with the spec's error shape and a sentence naming the problem.
 */
import type { FastifyInstance, FastifyReply } from 'fastify'
import { sql } from 'kysely'
import { encodeFunctionData, getAddress, isAddress, type Address, type Hex } from 'viem'
import type { Deps } from '../../../deps.js'
import { statusText } from '../../../errors.js'
import { deferredEscrowAbi } from '../../../schemes/deferred/escrow-abi.js'
import { EscrowReader } from '../../../schemes/deferred/escrow-reader.js'
import { voucherJson } from '../../../schemes/deferred/deferred-scheme.js'
import { createVoucherStore } from '../../../schemes/deferred/voucher-store.js'
import { createDeferredScheme } from '../../../schemes/deferred/deferred-scheme.js'
import { createSignerRecovery } from '../../../chain/signer-recovery.js'
import { isRefusal } from '../../../proxy/paid-call/refusal.js'
import { DeferredCollector } from '../../../services/deferred-collect/collector.js'
import type { Challenge } from '../../../x402/challenge.js'
import type { PaymentEnvelope } from '../../../x402/decode-payment.js'
import type { DeferredVoucher } from '../../../schemes/deferred/typed-data.js'
import type { NetworkV2 } from '../../../x402/types.js'
import { createRelayerLock, relayersFromKeys } from '../../../services/settlement/relayer.js'
import { relayerCall } from '../../../services/settlement/relayer-call.js'

const BYTES32 = /^0x[0-9a-fA-F]{64}$/
const UINT = /^\d{1,20}$/
/** a voucher id is collected by `settle` at most once in this long (the rest of a repeat is answered from the chain) */
export const SETTLE_INTERVAL_MS = 60_000

type Query = Record<string, string | undefined>

/** the spec's 400 for the read endpoints: `error`, here with what was wrong */
const badParams = (reply: FastifyReply, detail: string) =>
  reply.code(400).send({ error: `Invalid parameters: ${detail}` })

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

export function deferredFacilitatorRoutes(deps: Deps) {
  return async function routes(app: FastifyInstance): Promise<void> {
    app.addHook('preSerialization', async (_request, reply, payload) =>
      reply.statusCode >= 400 && payload && typeof payload === 'object' && !Array.isArray(payload)
        ? withPlatformShape(reply.statusCode, payload as Record<string, unknown>)
        : payload,
    )
    const escrowAddress = deps.config.deferredEscrowAddress
    if (!escrowAddress) return
    const escrow = escrowAddress.toLowerCase() as Address
    const chainId = deps.config.chain.chainId
    const reader = new EscrowReader(deps.chain, escrow, { ttlMs: 0 })
    const store = createVoucherStore(deps.db)
    const relayers = relayersFromKeys(deps.config.relayerKeys)
    const lock = createRelayerLock(deps.redis, deps.key)
    // the proxy's own verify and reserve, in this process
    const recovery = createSignerRecovery({ threads: 0 })
    // every read fresh (a route, not the hot path): no cache, so nothing to watch
    const scheme = createDeferredScheme(deps, { recovery, escrow, balanceTtlMs: 0, maxStaleMs: 0, watch: false })
    const collector = new DeferredCollector(deps, { escrow, log: app.log })

    /** escrow and chainId must be this platform's; the problem, or undefined */
    const wrongEscrow = (e: unknown, c: unknown): string | undefined => {
      if (typeof e !== 'string' || !isAddress(e, { strict: false })) return 'escrow must be a 0x address'
      if (e.toLowerCase() !== escrow) return `escrow must be ${getAddress(escrow)} (this facilitator's escrow)`
      if (String(c) !== String(chainId)) return `chainId must be ${chainId}`
      return undefined
    }
    const address = (v: unknown) =>
      typeof v === 'string' && isAddress(v, { strict: false }) ? (v.toLowerCase() as Address) : undefined

    app.get('/deferred/buyers/:buyer', async (request, reply) => {
      const q = request.query as Query
      const buyer = address((request.params as { buyer: string }).buyer)
      if (!buyer) return badParams(reply, 'buyer (in the path) must be a 0x address')
      for (const p of ['seller', 'asset', 'escrow', 'chainId'])
        if (q[p] === undefined || q[p] === '') return badParams(reply, `${p} is required`)
      const seller = address(q.seller)
      const asset = address(q.asset)
      if (!seller) return badParams(reply, 'seller must be a 0x address')
      if (!asset) return badParams(reply, 'asset must be a 0x address')
      if (!UINT.test(q.chainId!)) return badParams(reply, 'chainId must be an integer')
      const wrong = wrongEscrow(q.escrow, q.chainId)
      if (wrong) return badParams(reply, wrong)
      const [account, latest] = await Promise.all([
        reader.account(buyer, seller, asset),
        store.latest({ escrow, buyer, seller, asset }, BigInt(chainId)),
      ])
      return {
        balance: account.balance.toString(),
        assetAllowance: account.assetAllowance.toString(),
        assetPermitNonce: account.assetPermitNonce.toString(),
        ...(latest ? { voucher: { ...voucherJson(latest.voucher), signature: latest.signature } } : {}),
      }
    })

    app.get('/deferred/vouchers/available/:buyer/:seller', async (request, reply) => {
      const p = request.params as { buyer: string; seller: string }
      const buyer = address(p.buyer)
      const seller = address(p.seller)
      if (!buyer) return badParams(reply, 'buyer (in the path) must be a 0x address')
      if (!seller) return badParams(reply, 'seller (in the path) must be a 0x address')
      const latest = await store.latest(
        { escrow, buyer, seller, asset: deps.config.chain.usdc.address.toLowerCase() as Address },
        BigInt(chainId),
      )
      if (!latest) return reply.code(404).send({ error: 'No vouchers exist for this buyer and seller' })
      return { voucher: voucherJson(latest.voucher), signature: latest.signature }
    })

    app.get('/deferred/vouchers/:id/:nonce', async (request, reply) => {
      const p = request.params as { id: string; nonce: string }
      if (!BYTES32.test(p.id)) return badParams(reply, 'id must be 32 bytes of 0x hex')
      if (!/^\d{1,78}$/.test(p.nonce)) return badParams(reply, 'nonce must be a non-negative integer')
      const r = await deps.db
        .selectFrom('deferred_vouchers')
        .selectAll()
        .where('escrow', '=', escrow)
        .where('voucher_id', '=', p.id.toLowerCase())
        .where('nonce', '=', p.nonce)
        .executeTakeFirst()
      if (!r) return reply.code(404).send({ error: 'Voucher not found' })
      return {
        voucher: voucherJson({
          id: r.voucher_id as Hex,
          buyer: r.buyer as Address,
          seller: r.seller as Address,
          valueAggregate: BigInt(r.value_aggregate),
          asset: r.asset as Address,
          timestamp: BigInt(r.timestamp),
          nonce: BigInt(r.nonce),
          escrow: r.escrow as Address,
          chainId: BigInt(chainId),
        }),
        signature: r.signature,
      }
    })

    app.post('/deferred/buyers/:buyer/flush', async (request, reply) => {
      const pathBuyer = (request.params as { buyer: string }).buyer
      const refuse = (errorReason: string, errorMessage: string, status = 400) =>
        reply.code(status).send({
          success: false,
          errorReason,
          errorMessage,
          transaction: '',
          payer: isAddress(pathBuyer, { strict: false }) ? getAddress(pathBuyer) : pathBuyer,
        })
      const INVALID = 'invalid_deferred_evm_payload_flush_authorization'
      const buyer = address(pathBuyer)
      if (!buyer) return refuse(INVALID, 'buyer (in the path) must be a 0x address')
      const body = request.body as Record<string, unknown> | null
      if (!body || typeof body !== 'object') return refuse(INVALID, 'the body must be a JSON object')
      const wrong = wrongEscrow(body.escrow, body.chainId)
      if (wrong) return refuse(INVALID, wrong)
      const a = body.flushAuthorization as Record<string, unknown> | undefined
      if (!a || typeof a !== 'object') return refuse(INVALID, 'flushAuthorization is required')
      if (address(a.buyer) !== buyer) return refuse(INVALID, 'flushAuthorization.buyer must be the buyer in the path')
      if (typeof a.nonce !== 'string' || !BYTES32.test(a.nonce))
        return refuse(INVALID, 'flushAuthorization.nonce must be 32 bytes of 0x hex')
      if (!UINT.test(String(a.expiry))) return refuse(INVALID, 'flushAuthorization.expiry must be unix seconds')
      if (typeof a.signature !== 'string' || !/^0x([0-9a-fA-F]{2})+$/.test(a.signature))
        return refuse(INVALID, 'flushAuthorization.signature must be 0x hex')
      // seller and asset both given: one account; both absent: every account (flush all)
      const all = a.seller === undefined && a.asset === undefined
      const seller = address(a.seller)
      const asset = address(a.asset)
      if (!all && (!seller || !asset))
        return refuse(
          INVALID,
          'flushAuthorization.seller and .asset must both be 0x addresses (or both absent: flush all)',
        )
      const expiry = BigInt(String(a.expiry))
      const nonce = a.nonce as Hex
      const signature = a.signature as Hex
      const { timestamp } = await deps.chain.getBlock({ blockTag: 'latest' })
      if (expiry <= timestamp)
        return refuse(`${INVALID}_expired`, `the authorization expired at ${expiry}; the chain is at ${timestamp}`)
      if (
        await deps.chain.readContract({
          address: escrow,
          abi: deferredEscrowAbi,
          functionName: 'isNonceUsed',
          args: [buyer, nonce],
        })
      )
        return refuse(`${INVALID}_nonce_used`, `the nonce ${nonce} was already used by this buyer`)
      const valid = all
        ? await deps.chain.readContract({
            address: escrow,
            abi: deferredEscrowAbi,
            functionName: 'isFlushAllAuthorizationValid',
            args: [{ buyer, nonce, expiry }, signature],
          })
        : await deps.chain.readContract({
            address: escrow,
            abi: deferredEscrowAbi,
            functionName: 'isFlushAuthorizationValid',
            args: [{ buyer, seller: seller!, asset: asset!, nonce, expiry }, signature],
          })
      if (!valid)
        return refuse(
          `${INVALID}_signature`,
          `the signature is not the buyer's over the ${all ? 'FlushAllAuthorization' : 'FlushAuthorization'} (escrow ${getAddress(escrow)}, chain ${chainId})`,
        )
      const data = all
        ? encodeFunctionData({
            abi: deferredEscrowAbi,
            functionName: 'flushAllWithAuthorization',
            args: [{ buyer, nonce, expiry }, signature],
          })
        : encodeFunctionData({
            abi: deferredEscrowAbi,
            functionName: 'flushWithAuthorization',
            args: [{ buyer, seller: seller!, asset: asset!, nonce, expiry }, signature],
          })
      if (relayers.length === 0) return refuse('unexpected_settle_error', 'no relayer is configured here', 503)
      let r
      try {
        r = await relayerCall(
          {
            chain: deps.chain,
            chainId,
            maxFeePerGasWei: deps.config.settlement.maxFeePerGasWei,
            lock,
            relayers,
          },
          { to: escrow, data },
        )
      } catch (err) {
        return refuse(
          `${INVALID}_reverted`,
          `the flush would revert (${(err as Error).message.split('\n')[0]}); nothing was sent`,
        )
      }
      if (!r) return refuse('unexpected_settle_error', 'no relayer is free now; retry shortly', 503)
      if (r.status !== 'success') return refuse(`${INVALID}_reverted`, `the flush reverted (${r.hash})`)
      return { success: true, transaction: r.hash, payer: getAddress(buyer) }
    })

    /** the spec's 400 for POST /vouchers: a verify response */
    const invalid = (reply: FastifyReply, invalidReason: string, invalidMessage: string, payer?: unknown) =>
      reply.code(400).send({
        isValid: false,
        invalidReason,
        invalidMessage,
        ...(address(payer) ? { payer: getAddress(address(payer)!) } : {}),
      })
    const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
    const networkOk = (n: unknown) => n === deps.config.chain.network || n === deps.config.chain.caip2

    app.post('/deferred/vouchers', async (request, reply) => {
      const body = request.body
      if (!isObj(body)) return invalid(reply, 'invalid_payload', 'the body must be a JSON object')
      const pp = body.paymentPayload
      const pr = body.paymentRequirements
      if (!isObj(pp)) return invalid(reply, 'invalid_payload', 'paymentPayload is required (an object)')
      if (!isObj(pr))
        return invalid(reply, 'invalid_payment_requirements', 'paymentRequirements is required (an object)')
      const payload = pp.payload
      const buyer = isObj(payload) && isObj(payload.voucher) ? payload.voucher.buyer : undefined
      if (pp.scheme !== 'deferred' || pr.scheme !== 'deferred')
        return invalid(
          reply,
          'unsupported_scheme',
          'paymentPayload.scheme and paymentRequirements.scheme must be "deferred"',
          buyer,
        )
      if (!networkOk(pp.network) || !networkOk(pr.network))
        return invalid(
          reply,
          'invalid_network',
          `network must be ${deps.config.chain.network} or ${deps.config.chain.caip2} (this facilitator's chain)`,
          buyer,
        )
      if (!isObj(payload))
        return invalid(reply, 'invalid_payload', 'paymentPayload.payload is required (an object)', buyer)
      // the requirement: v2 `payTo` or the spec's `recipient`; v2 `amount` or v1 `maxAmountRequired`
      const payTo = address(pr.payTo ?? pr.recipient)
      const amountText = pr.amount ?? pr.maxAmountRequired
      if (!payTo)
        return invalid(
          reply,
          'invalid_payment_requirements',
          'paymentRequirements.recipient (or payTo) must be a 0x address',
          buyer,
        )
      if (typeof amountText !== 'string' || !/^[1-9]\d{0,76}$/.test(amountText))
        return invalid(
          reply,
          'invalid_payment_requirements',
          'paymentRequirements.amount must be a positive integer string (atomic units)',
          buyer,
        )
      const usdc = deps.config.chain.usdc.address.toLowerCase() as Address
      if (address(pr.asset) !== usdc)
        return invalid(
          reply,
          'invalid_payment_requirements',
          `paymentRequirements.asset must be ${getAddress(usdc)} (this facilitator's asset)`,
          buyer,
        )
      const offered = await deps.db
        .selectFrom('endpoints')
        .innerJoin('services', 'services.id', 'endpoints.service_id')
        .select('endpoints.id')
        .where(sql<boolean>`lower(services.pay_to) = ${payTo}`)
        .where(sql<boolean>`'deferred' = any(endpoints.schemes)`)
        .where('endpoints.enabled', '=', true)
        .limit(1)
        .executeTakeFirst()
      if (!offered)
        return invalid(
          reply,
          'invalid_payment_requirements',
          `${getAddress(payTo)} offers no deferred endpoint on this platform: this facilitator stores vouchers for its own sellers only`,
          buyer,
        )
      // the spec's facilitator text names the deposit `depositAuthorization {permit?, depositAuthorization}`;
      // the scheme's (and our decoder's) `deposit {authorization, permit?}`: both are read
      let wire: Record<string, unknown> = payload
      if (isObj(payload.depositAuthorization) && payload.deposit === undefined) {
        const { depositAuthorization: d, ...rest } = payload
        const da = d as Record<string, unknown>
        wire = {
          ...rest,
          deposit: { authorization: da.depositAuthorization, ...(da.permit ? { permit: da.permit } : {}) },
        }
      }
      const amount = BigInt(amountText)
      const t = {
        amount,
        payTo,
        asset: usdc,
        networkV1: deps.config.chain.network,
        networkV2: deps.config.chain.caip2 as NetworkV2,
        chainId,
        token: { name: deps.config.chain.usdc.name, version: deps.config.chain.usdc.version },
        maxTimeoutSeconds: deps.config.x402.maxTimeoutSeconds,
      }
      // the requirement as the proxy's challenge would carry it: verify compares `accepted` with it
      const envelope: PaymentEnvelope = {
        ok: true,
        version: 2,
        scheme: 'deferred',
        network: t.networkV2,
        accepted: {
          scheme: 'deferred',
          network: t.networkV2,
          amount: amountText,
          asset: getAddress(usdc),
          payTo: getAddress(payTo),
          maxTimeoutSeconds: t.maxTimeoutSeconds,
          extra: { escrow: isObj(pr.extra) && typeof pr.extra.escrow === 'string' ? pr.extra.escrow : escrow },
        },
        payload: wire,
      }
      const ctx = { nowMs: Date.now(), callMs: 0, log: request.log }
      const refusal = (r: { reason?: string; message?: string; error?: { message: string; statusCode: number } }) =>
        r.error
          ? reply.code(r.error.statusCode >= 500 ? 503 : r.error.statusCode).send({
              isValid: false,
              invalidReason: 'unexpected_verify_error',
              invalidMessage: r.error.message,
              ...(address(buyer) ? { payer: getAddress(address(buyer)!) } : {}),
            })
          : invalid(reply, r.reason ?? 'invalid_payload', r.message ?? r.reason ?? 'refused', buyer)
      const verified = await scheme.verify(envelope, { terms: t } as unknown as Challenge, ctx)
      if (isRefusal(verified)) return refusal(verified)
      const held = await scheme.reserve(verified, ctx)
      if (isRefusal(held)) return refusal(held)
      const p = verified as typeof verified & {
        voucher: DeferredVoucher
        signature: Hex
        digest: Hex
      }
      let stored = false
      try {
        stored = await store.storeAlone(p.voucher, p.signature, p.digest)
      } catch (err) {
        await held.release()
        request.log.error({ err: (err as Error).message }, 'deferred voucher could not be stored')
        return reply
          .code(503)
          .header('retry-after', '1')
          .send({
            isValid: false,
            invalidReason: 'unexpected_verify_error',
            invalidMessage: 'the voucher store could not be written now; retry shortly',
            payer: getAddress(p.voucher.buyer),
          })
      }
      if (!stored) {
        await held.release()
        return invalid(
          reply,
          'invalid_deferred_evm_payload_voucher_stale',
          `voucher ${p.voucher.id} nonce ${p.voucher.nonce} is stored already, or a later nonce of its id is`,
          buyer,
        )
      }
      return reply.code(201).send({ ...voucherJson(p.voucher), signature: p.signature })
    })

    app.post('/deferred/vouchers/:id/:nonce/settle', async (request, reply) => {
      const p = request.params as { id: string; nonce: string }
      const fail = (status: number, error: string) => reply.code(status).send({ success: false, error })
      if (!BYTES32.test(p.id)) return fail(400, 'Invalid parameters: id must be 32 bytes of 0x hex')
      if (!/^\d{1,78}$/.test(p.nonce)) return fail(400, 'Invalid parameters: nonce must be a non-negative integer')
      // the spec's optional gasPrice / gasLimit are not taken: the relayers price their own transactions
      if (relayers.length === 0) return fail(503, 'no relayer is configured here')
      const r = await collector.collectVoucher(p.id as Hex, BigInt(p.nonce), async (row) => {
        const ok = await deps.redis.set(
          deps.key('deferred', 'settle', row.escrow, row.buyer, row.seller, row.asset, row.voucher_id),
          '1',
          'PX',
          SETTLE_INTERVAL_MS,
          'NX',
        )
        return ok === 'OK'
      })
      if (r.outcome === 'not_found') return fail(400, 'Voucher not found')
      if (r.outcome === 'refused')
        return reply
          .code(429)
          .header('retry-after', String(Math.ceil(SETTLE_INTERVAL_MS / 1000)))
          .send({
            success: false,
            error: `voucher ${p.id} was collected less than ${SETTLE_INTERVAL_MS / 1000} s ago; retry later (the platform also collects it on its own)`,
          })
      if (r.outcome === 'no_relayer') return fail(503, 'no relayer is free now; retry shortly')
      if (r.outcome !== 'collected')
        return fail(400, `the collect of voucher ${p.id} reverted or would revert; nothing was collected`)
      return {
        success: true,
        transactionHash: r.txHash,
        collectedAmount: r.collectedAmount.toString(),
        network: deps.config.chain.network,
        // not in the spec: what the escrow paid for this voucher id in all (a repeat shows it, with no transaction)
        totalCollected: r.totalCollected.toString(),
      }
    })
  }
}
