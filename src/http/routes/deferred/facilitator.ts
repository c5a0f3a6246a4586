/**
 * The facilitator endpoints of the `deferred` scheme, as edgeandnode/x402
 * `specs/schemes/deferred/scheme_deferred_evm_facilitator.md` names and shapes them, under
 * `/deferred/`, for this platform's escrow and chain:
 *
 *   GET  /deferred/buyers/:buyer                      escrow account + latest voucher for a seller
 *   POST /deferred/buyers/:buyer/flush                flush (or flush-all) authorization, sent by a relayer
 *   GET  /deferred/vouchers/available/:buyer/:seller  the voucher to aggregate onto
 *   GET  /deferred/vouchers/:id/:nonce                one stored voucher
 *
 * Read endpoints need no authentication (everything they show ends up on chain); a flush is
 * authorized by the buyer's signature, checked by the escrow's own view before anything is sent.
 * Not built yet: POST /deferred/vouchers and POST /deferred/vouchers/:id/:nonce/settle (this
 * platform's proxy stores vouchers itself and its collector settles them; see docs/architecture.md).
 * Bad input gets 400 with the spec's error shape and a sentence naming the problem.
 */
import type { FastifyInstance, FastifyReply } from 'fastify'
import { encodeFunctionData, getAddress, isAddress, type Address, type Hex } from 'viem'
import type { Deps } from '../../../deps.js'
import { deferredEscrowAbi } from '../../../schemes/deferred/escrow-abi.js'
import { EscrowReader } from '../../../schemes/deferred/escrow-reader.js'
import { voucherJson } from '../../../schemes/deferred/deferred-scheme.js'
import { createVoucherStore } from '../../../schemes/deferred/voucher-store.js'
import { createRelayerLock, relayersFromKeys } from '../../../services/settlement/relayer.js'
import { relayerCall } from '../../../services/settlement/relayer-call.js'

const BYTES32 = /^0x[0-9a-fA-F]{64}$/
const UINT = /^\d{1,20}$/

type Query = Record<string, string | undefined>

/** the spec's 400 for the read endpoints: `error`, here with what was wrong */
const badParams = (reply: FastifyReply, detail: string) =>
  reply.code(400).send({ error: `Invalid parameters: ${detail}` })

export function deferredFacilitatorRoutes(deps: Deps) {
  return async function routes(app: FastifyInstance): Promise<void> {
    const escrowAddress = deps.config.deferredEscrowAddress
    if (!escrowAddress) return
    const escrow = escrowAddress.toLowerCase() as Address
    const chainId = deps.config.chain.chainId
    const reader = new EscrowReader(deps.chain, escrow, { ttlMs: 0 })
    const store = createVoucherStore(deps.db)
    const relayers = relayersFromKeys(deps.config.relayerKeys)
    const lock = createRelayerLock(deps.redis, deps.key)

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
  }
}
