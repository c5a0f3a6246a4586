/**
 * The `deferred` scheme's requirements: the endpoint's static one (the spec's `extra`), and the one
 * for a buyer a `PAYER-IDENTIFIER` names, with its escrow `account` and its latest `voucher`.
 */
import type { FastifyBaseLogger } from 'fastify'
import { getAddress, type Address } from 'viem'
import type { SchemeOffer } from '../../seam/types.js'
import type { NetworkV2, PaymentRequirementsV2 } from '../../x402/types.js'
import { voucherJson, type DeferredContext } from './context.js'
import type { VoucherTuple } from './voucher-store.js'

/** The endpoint's v2 requirement: the spec's static `extra`. */
export function deferredRequirement(x: DeferredContext, offer: SchemeOffer): PaymentRequirementsV2 {
  const { config } = x
  return {
    scheme: 'deferred',
    network: config.chain.caip2 as NetworkV2,
    amount: offer.amount.toString(),
    asset: getAddress(config.chain.usdc.address),
    payTo: getAddress(offer.payTo),
    maxTimeoutSeconds: offer.maxTimeoutSeconds,
    extra: {
      escrow: getAddress(x.escrow),
      name: config.chain.usdc.name,
      version: config.chain.usdc.version,
      voucherStorage: 'server',
    },
  }
}

/** The requirement for the buyer a `PAYER-IDENTIFIER` names: its escrow `account`, its latest `voucher` and `signature`. */
export async function deferredForPayer(
  x: DeferredContext,
  requirement: PaymentRequirementsV2,
  payer: Address,
  log: FastifyBaseLogger,
): Promise<PaymentRequirementsV2> {
  const tuple: VoucherTuple = {
    escrow: x.escrow,
    buyer: payer,
    seller: requirement.payTo.toLowerCase() as Address,
    asset: requirement.asset.toLowerCase() as Address,
  }
  const extra: PaymentRequirementsV2['extra'] = { ...requirement.extra }
  const [account, latest] = await Promise.allSettled([
    x.reader.account(tuple.buyer, tuple.seller, tuple.asset),
    x.store.latest(tuple, x.chainId),
  ])
  if (account.status === 'fulfilled') {
    const a = account.value
    extra.account = {
      balance: a.balance.toString(),
      assetAllowance: a.assetAllowance.toString(),
      assetPermitNonce: a.assetPermitNonce.toString(),
    }
  } else log.warn({ err: (account.reason as Error).message }, 'escrow account read failed; challenge sent without it')
  if (latest.status === 'fulfilled') {
    if (latest.value) {
      extra.voucher = voucherJson(latest.value.voucher)
      extra.signature = latest.value.signature
    }
  } else log.warn({ err: (latest.reason as Error).message }, 'latest voucher read failed; challenge sent without it')
  return { ...requirement, extra }
}
