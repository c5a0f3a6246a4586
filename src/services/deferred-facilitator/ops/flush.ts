/**
 * POST /deferred/buyers/:buyer/flush: a buyer's flush (one account) or flush-all authorization,
 * checked against the escrow's own views (expiry, nonce, signature) and sent by a relayer. Every
 * refusal has the spec's settle shape (`success: false`, `errorReason`, `errorMessage`).
 */
import { encodeFunctionData, getAddress, isAddress, type Address, type Hex } from 'viem'
import { relayerCall } from '../../../chain/relayer-call.js'
import { deferredEscrowAbi } from '../../../schemes/deferred/escrow-abi.js'
import {
  address,
  answer,
  BYTES32,
  UINT,
  wrongEscrow,
  type FacilitatorAnswer,
  type FacilitatorContext,
} from '../context.js'

const INVALID = 'invalid_deferred_evm_payload_flush_authorization'

/** a checked flush authorization; no seller and asset: flush all */
interface FlushRequest {
  buyer: Address
  seller: Address | undefined
  asset: Address | undefined
  all: boolean
  nonce: Hex
  expiry: bigint
  signature: Hex
}

type Refuse = (errorReason: string, errorMessage: string, status?: number) => FacilitatorAnswer

/** the spec's refusal, naming the buyer of the path as payer */
const refusal =
  (pathBuyer: string): Refuse =>
  (errorReason, errorMessage, status = 400) =>
    answer(status, {
      success: false,
      errorReason,
      errorMessage,
      transaction: '',
      payer: isAddress(pathBuyer, { strict: false }) ? getAddress(pathBuyer) : pathBuyer,
    })

/** the body's authorization, checked for shape; or the refusal naming what is wrong */
function readFlushRequest(
  ctx: FacilitatorContext,
  pathBuyer: string,
  body: unknown,
  refuse: Refuse,
): FlushRequest | FacilitatorAnswer {
  const buyer = address(pathBuyer)
  if (!buyer) return refuse(INVALID, 'buyer (in the path) must be a 0x address')
  if (!body || typeof body !== 'object') return refuse(INVALID, 'the body must be a JSON object')
  const b = body as Record<string, unknown>
  const wrong = wrongEscrow(ctx, b.escrow, b.chainId)
  if (wrong) return refuse(INVALID, wrong)
  const a = b.flushAuthorization as Record<string, unknown> | undefined
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
    return refuse(INVALID, 'flushAuthorization.seller and .asset must both be 0x addresses (or both absent: flush all)')
  const [nonce, signature] = [a.nonce as Hex, a.signature as Hex]
  return { buyer, seller, asset, all, nonce, expiry: BigInt(String(a.expiry)), signature }
}

/** the escrow's own checks of the authorization (expiry, nonce, signature): the refusal, or undefined */
async function chainRefusal(
  ctx: FacilitatorContext,
  f: FlushRequest,
  refuse: Refuse,
): Promise<FacilitatorAnswer | undefined> {
  const { chain } = ctx.deps
  const { buyer, nonce, expiry, signature } = f
  const { timestamp } = await chain.getBlock({ blockTag: 'latest' })
  if (expiry <= timestamp)
    return refuse(`${INVALID}_expired`, `the authorization expired at ${expiry}; the chain is at ${timestamp}`)
  const escrow = { address: ctx.escrow, abi: deferredEscrowAbi } as const
  if (await chain.readContract({ ...escrow, functionName: 'isNonceUsed', args: [buyer, nonce] }))
    return refuse(`${INVALID}_nonce_used`, `the nonce ${nonce} was already used by this buyer`)
  const valid = f.all
    ? await chain.readContract({
        ...escrow,
        functionName: 'isFlushAllAuthorizationValid',
        args: [{ buyer, nonce, expiry }, signature],
      })
    : await chain.readContract({
        ...escrow,
        functionName: 'isFlushAuthorizationValid',
        args: [{ buyer, seller: f.seller!, asset: f.asset!, nonce, expiry }, signature],
      })
  if (valid) return undefined
  return refuse(
    `${INVALID}_signature`,
    `the signature is not the buyer's over the ${f.all ? 'FlushAllAuthorization' : 'FlushAuthorization'} (escrow ${getAddress(ctx.escrow)}, chain ${ctx.chainId})`,
  )
}

/** the escrow call that carries out the authorization */
function flushCallData(f: FlushRequest): Hex {
  const { buyer, nonce, expiry, signature } = f
  return f.all
    ? encodeFunctionData({
        abi: deferredEscrowAbi,
        functionName: 'flushAllWithAuthorization',
        args: [{ buyer, nonce, expiry }, signature],
      })
    : encodeFunctionData({
        abi: deferredEscrowAbi,
        functionName: 'flushWithAuthorization',
        args: [{ buyer, seller: f.seller!, asset: f.asset!, nonce, expiry }, signature],
      })
}

export async function flush(ctx: FacilitatorContext, pathBuyer: string, body: unknown): Promise<FacilitatorAnswer> {
  const refuse = refusal(pathBuyer)
  const f = readFlushRequest(ctx, pathBuyer, body, refuse)
  if ('status' in f) return f
  const refused = await chainRefusal(ctx, f, refuse)
  if (refused) return refused
  const data = flushCallData(f)
  if (ctx.relayers.length === 0) return refuse('unexpected_settle_error', 'no relayer is configured here', 503)
  const { chain, config } = ctx.deps
  let r
  try {
    r = await relayerCall(
      {
        chain,
        chainId: ctx.chainId,
        maxFeePerGasWei: config.settlement.maxFeePerGasWei,
        lock: ctx.lock,
        relayers: ctx.relayers,
      },
      { to: ctx.escrow, data },
    )
  } catch (err) {
    const why = (err as Error).message.split('\n')[0]
    return refuse(`${INVALID}_reverted`, `the flush would revert (${why}); nothing was sent`)
  }
  if (!r) return refuse('unexpected_settle_error', 'no relayer is free now; retry shortly', 503)
  if (r.status !== 'success') return refuse(`${INVALID}_reverted`, `the flush reverted (${r.hash})`)
  return answer(200, { success: true, transaction: r.hash, payer: getAddress(f.buyer) })
}
