/**
 * The `upto` scheme on EVM (coinbase/x402 `specs/schemes/upto/scheme_upto_evm.md`, as `@x402/evm`
 * implements it): the buyer signs a Permit2 `PermitWitnessTransferFrom` for the endpoint's maximum
 * price, spender the x402 upto proxy, with a witness naming the recipient (`to` = payTo), the
 * facilitator allowed to settle (one of our relayers, fixed per endpoint: `extra.facilitatorAddress`)
 * and `validAfter`.
 * The call's actual charge (≤ the maximum) is known once it answered (src/proxy/paid-call/charge.ts)
 * and only that is settled, through the proxy, in the exact scheme's Multicall3 batches.
 *
 * - verify: the payload's shape, the requirement match (scheme, network, amount = maximum, payTo,
 *   asset), spender, witness, token, deadline and the signature (EIP-712 digest + native recovery;
 *   a signature longer than 65 bytes is a smart wallet's, checked in reserve);
 * - reserve: the maximum against the payer's cached balance (the exact scheme's credit, one Redis
 *   round trip, with the Permit2 nonce as replay guard) and the payer's Permit2 allowance (cached
 *   per process for UPTO_ALLOWANCE_CACHE_MS), then, for a smart wallet, its ERC-1271 (or ERC-6492) answer through RPC, as exact
 *   asks it (the check Permit2 makes on-chain when the owner has code); `charged(value)` gives the
 *   difference back.
 *
 * The payload is read in payload.ts; the stages are verify.ts and reserve.ts, over context.ts.
 */
import { getAddress, type Address } from 'viem'
import type { SignerRecovery } from '../../chain/signer-recovery.js'
import type { PayerCredit } from '../../ledger/payer-credit.js'
import type { SchemeOffer } from '../../seam/types.js'
import type { NetworkV2, PaymentRequirementsV2 } from '../../x402/types.js'
import { createBalanceReader } from '../exact/balance-reader.js'
import type { PaymentScheme } from '../scheme.js'
import type { SchemeDeps } from '../scheme-deps.js'
import type { SmartWalletCheck } from '../smart-wallet-check.js'
import type { UptoContext, UptoPayment } from './context.js'
import { facilitatorFor } from './facilitator.js'
import { reserveUpto } from './reserve.js'
import { uptoSettlement } from './settlement.js'
import { verifyUpto } from './verify.js'

export { uptoDigest, type UptoAuthorization } from './payload.js'
export { UPTO_WITNESS_TYPES, uptoNonceHex } from './typed-data.js'

export interface UptoScheme extends PaymentScheme {
  /** the relayers that may be named as facilitator, lower case */
  readonly facilitators: readonly Address[]
}

interface UptoSchemeOptions {
  credit: PayerCredit
  recovery: SignerRecovery
  smartWallets: SmartWalletCheck
  /** our relayers (RELAYER_PRIVATE_KEYS): each endpoint names one as its payments' facilitator */
  facilitators: readonly Address[]
}

export function createUptoScheme(deps: Pick<SchemeDeps, 'config' | 'chain'>, opts: UptoSchemeOptions): UptoScheme {
  const { config } = deps
  const { credit } = opts
  if (opts.facilitators.length === 0) throw new Error('upto: at least one relayer is needed as facilitator')
  const facilitators = opts.facilitators.map((f) => f.toLowerCase() as Address)
  const x: UptoContext = {
    config,
    chain: deps.chain,
    credit,
    recovery: opts.recovery,
    smartWallets: opts.smartWallets,
    ours: new Set<string>(facilitators),
    balances: createBalanceReader(deps, credit),
    allowances: new Map(),
  }
  return {
    name: 'upto',
    settlement: uptoSettlement,
    facilitators,

    /** The endpoint's v2 requirement: its price is the maximum; its facilitator one of our relayers (`facilitatorFor`). */
    requirement(offer: SchemeOffer): PaymentRequirementsV2 {
      return {
        scheme: 'upto',
        network: config.chain.caip2 as NetworkV2,
        amount: offer.amount.toString(),
        asset: getAddress(config.chain.usdc.address),
        payTo: getAddress(offer.payTo),
        maxTimeoutSeconds: offer.maxTimeoutSeconds,
        extra: {
          name: config.chain.usdc.name,
          version: config.chain.usdc.version,
          assetTransferMethod: 'permit2',
          facilitatorAddress: getAddress(facilitatorFor(offer.resourceUrl, facilitators)),
        },
      }
    },
    verify: (envelope, challenge, ctx) => verifyUpto(x, envelope, challenge, ctx),
    reserve: (payment, ctx) => reserveUpto(x, payment as UptoPayment, ctx),
  }
}
