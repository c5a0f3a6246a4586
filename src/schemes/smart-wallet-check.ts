/**
 * The smart-wallet signature check the payment schemes (`exact`, `upto`) and sign-in share: a signature
 * longer than 65 bytes cannot be recovered locally, so the payer's contract is asked through RPC
 * (ERC-1271, or ERC-6492 where counterfactual wallets are accepted; src/chain/contract-signature.ts).
 * Each check costs a round trip: they run at most 16 at a time per proxy with 256 more queued,
 * beyond that, and when the chain cannot be reached, the call gets 503 with Retry-After (never
 * "invalid"). Each scheme turns the wallet's answer into its own reason code.
 */
import type { FastifyBaseLogger } from 'fastify'
import pLimit from 'p-limit'
import type { Address, Hex } from 'viem'
import { checkContractSignature, type ContractSignatureCheck } from '../chain/contract-signature.js'
import type { SchemeDeps } from './scheme-deps.js'
import { appError } from '../errors.js'
import { CallRefusal } from '../seam/types.js'

// Smart-wallet checks cost an RPC round trip each: bounded concurrency and a bounded queue.
const SMART_WALLET_CONCURRENCY = 16
const SMART_WALLET_QUEUE = 256

const retryShortly = (detail: string) =>
  CallRefusal.error(appError('service_unavailable', { detail }, { headers: { 'retry-after': '1' } }))

/** The wallet's answer, or a 503 refusal when it could not be asked now. */
export type SmartWalletCheck = (
  wallet: Address,
  digest: Uint8Array,
  signature: Hex,
  log: FastifyBaseLogger,
) => Promise<ContractSignatureCheck | CallRefusal>

/**
 * One bounded checker per proxy, handed to every scheme that accepts smart-wallet payers.
 *
 * @example
 *   const check = await smartWallets(p.payer, digest, signature, ctx.log)
 *   if (check instanceof CallRefusal) return check
 */
export function createSmartWalletCheck(deps: Pick<SchemeDeps, 'chain' | 'config'>): SmartWalletCheck {
  const limit = pLimit(SMART_WALLET_CONCURRENCY)
  const counterfactual = deps.config.x402.counterfactualWallets
  return async (wallet, digest, signature, log) => {
    if (limit.pendingCount >= SMART_WALLET_QUEUE)
      return retryShortly('too many smart wallet signatures are being checked; retry shortly')
    try {
      return await limit(() => checkContractSignature(deps.chain, wallet, digest, signature, { counterfactual }))
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'smart wallet signature check failed')
      return retryShortly('the smart wallet signature could not be checked on-chain now; retry shortly')
    }
  }
}
