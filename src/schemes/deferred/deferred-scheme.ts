/**
 * The `deferred` scheme on EVM (coinbase/x402 `scheme_deferred_evm.md`): the buyer signs an
 * EIP-712 voucher whose `valueAggregate` grows by the price with each call, against funds it
 * deposited in the escrow (DeferredPaymentEscrow) for the seller. Nothing moves on chain per call:
 * the voucher is stored (voucher-store.ts) and the latest of each voucher id is collected later in
 * one `collectMany` (src/services/deferred-collect/).
 *
 * - requirement: `extra` with `escrow`, `name`, `version`, `voucherStorage: "server"`; for a buyer
 *   named by `PAYER-IDENTIFIER`, also its `account` and its latest `voucher` and `signature`;
 * - verify: the payload's shape, the requirement match (network, seller = payTo, asset, escrow,
 *   chainId) and the voucher's signature (ECDSA, or ERC-1271 through RPC for a contract buyer);
 * - reserve: the aggregation rules and the escrow balance, checked and reserved atomically in one
 *   Redis round trip (voucher-heads.ts); the voucher is written durably with the call's payment row
 *   (the ledger's group commit), and `release()` gives the reservation back.
 *
 * A payload's `deposit` is checked in verify and executed in reserve, before the voucher counts
 * (deposit.ts: the permit, then depositWithAuthorization, from a settlement relayer).
 */
import type { FastifyBaseLogger } from 'fastify'
import { bytesToHex, getAddress, type Address, type Hex } from 'viem'
import { checkContractSignature } from '../../chain/contract-signature.js'
import { SMART_WALLET_SIGNATURE } from '../../chain/recover-signer.js'
import type { SignerRecovery } from '../../chain/signer-recovery.js'
import type { Deps } from '../../deps.js'
import { appError } from '../../errors.js'
import type { SchemeOffer } from '../../proxy/endpoint-table.js'
import { CallRefusal } from '../../proxy/paid-call/refusal.js'
import type { Challenge } from '../../x402/challenge.js'
import type { PaymentEnvelope } from '../../x402/decode-payment.js'
import { refuse } from '../../x402/reasons.js'
import type { NetworkV2, PaymentRequirementsV2 } from '../../x402/types.js'
import type { PaymentScheme, Reservation, VerifiedPayment, VerifyContext } from '../scheme.js'
import { decodeDeferredPayload, type DeferredDeposit } from './decode-payload.js'
import { DepositExecutor } from './deposit.js'
import { EscrowReader, type AccountRead } from './escrow-reader.js'
import { watchEscrowAccounts } from './escrow-watch.js'
import type { DeferredVoucher } from './typed-data.js'
import { voucherDigest, voucherDomainSeparator } from './voucher-digest.js'
import { createVoucherHeads, type HeldVoucher, type VoucherHeads } from './voucher-heads.js'
import { createVoucherStore, type VoucherStore, type VoucherTuple } from './voucher-store.js'

/** A voucher has no expiry; the ledger's `valid_before` of a deferred payment says "never" (9999-12-31). */
export const DEFERRED_NO_EXPIRY = 253_402_300_799

/** A deferred payment after `verify`. */
interface DeferredPayment extends VerifiedPayment {
  readonly voucher: DeferredVoucher
  readonly signature: Hex
  readonly digest: Hex
  readonly digestBytes: Uint8Array
  /** checked in verify, executed in reserve before the voucher is accepted */
  readonly deposit: DeferredDeposit | undefined
}

const retryShortly = (detail: string) =>
  CallRefusal.error(appError('service_unavailable', { detail }, { headers: { 'retry-after': '1' } }))

const same = (a: unknown, b: string) => typeof a === 'string' && a.toLowerCase() === b.toLowerCase()

/** A uint as the spec's examples write it: a JSON number while it is safe, else a decimal string. */
const num = (v: bigint): number | string => (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString())

/** The voucher as the challenge's `extra.voucher` carries it (checksummed addresses, the spec's number forms). */
export function voucherJson(v: DeferredVoucher): Record<string, unknown> {
  return {
    id: v.id,
    buyer: getAddress(v.buyer),
    seller: getAddress(v.seller),
    valueAggregate: v.valueAggregate.toString(),
    asset: getAddress(v.asset),
    timestamp: num(v.timestamp),
    nonce: num(v.nonce),
    escrow: getAddress(v.escrow),
    chainId: num(v.chainId),
  }
}

export interface DeferredScheme extends PaymentScheme {
  readonly escrow: Address
  readonly store: VoucherStore
  readonly heads: VoucherHeads
}

export function createDeferredScheme(
  deps: Deps,
  opts: {
    recovery: SignerRecovery
    escrow: Address
    balanceTtlMs?: number
    /** how long an account older than the ttl is still served while one read refreshes it (default 30 s) */
    maxStaleMs?: number
    /** watch the escrow's events and drop the accounts they change (default true) */
    watch?: boolean
  },
): DeferredScheme {
  const { config } = deps
  const escrow = opts.escrow.toLowerCase() as Address
  const chainId = BigInt(config.chain.chainId)
  const store = createVoucherStore(deps.db)
  const heads = createVoucherHeads(deps)
  const domainSeparator = voucherDomainSeparator(chainId, escrow)
  // a balance older than 2 s is served while one read refreshes it (escrow-reader.ts says why that is safe)
  const reader = new EscrowReader(deps.chain, escrow, {
    ttlMs: opts.balanceTtlMs,
    maxStaleMs: opts.maxStaleMs ?? 30_000,
  })
  const deposits = new DepositExecutor(deps, escrow)
  // a thaw, withdrawal, flush or collection drops the cached account: the next voucher reads it fresh
  const unwatch =
    opts.watch === false
      ? undefined
      : watchEscrowAccounts(deps.chain, escrow, {
          pollMs: config.deferred.watchEveryMs,
          onEvents: (events) => {
            for (const e of events) reader.forget(e.buyer, e.seller, e.asset)
          },
          onError: () => {},
        })

  /** the voucher's fit with the endpoint's requirement; undefined when it fits */
  function mismatch(v: DeferredVoucher, challenge: Challenge): string | undefined {
    const t = challenge.terms
    if (v.seller !== t.payTo) return `voucher.seller must be payTo ${getAddress(t.payTo)}, got ${getAddress(v.seller)}`
    if (v.asset !== t.asset) return `voucher.asset must be ${getAddress(t.asset)}, got ${getAddress(v.asset)}`
    if (v.escrow !== escrow)
      return `voucher.escrow must be extra.escrow ${getAddress(escrow)}, got ${getAddress(v.escrow)}`
    if (v.chainId !== BigInt(t.chainId))
      return `voucher.chainId must be ${t.chainId} (${t.networkV2}), got ${v.chainId}`
    return undefined
  }

  async function checkSignature(p: DeferredPayment, ctx: VerifyContext): Promise<CallRefusal | undefined> {
    // the escrow's ECDSA recovery takes v of 27 or 28 only; a voucher accepted with v 0 or 1 could never be collected
    if (p.signature.length === 132 && !p.signature.endsWith('1b') && !p.signature.endsWith('1c')) {
      return CallRefusal.fromX402(
        refuse(
          'invalid_deferred_evm_payload_signature',
          `the signature's v must be 27 or 28 (0x1b or 0x1c), as the escrow recovers it; got 0x${p.signature.slice(130)}`,
        ),
      )
    }
    const signer = await opts.recovery.recover(p.digestBytes, p.signature)
    if (signer !== SMART_WALLET_SIGNATURE) {
      return signer !== null && signer === p.voucher.buyer
        ? undefined
        : CallRefusal.payment('invalid_deferred_evm_payload_signature')
    }
    try {
      const check = await checkContractSignature(deps.chain, p.voucher.buyer, p.digestBytes, p.signature, {
        counterfactual: false,
      })
      return check === 'valid'
        ? undefined
        : CallRefusal.fromX402(
            refuse(
              'invalid_deferred_evm_payload_signature',
              'the buyer contract did not accept the signature (ERC-1271); is it deployed?',
            ),
          )
    } catch (err) {
      ctx.log.warn({ err: (err as Error).message }, 'contract buyer signature check failed')
      return retryShortly('the contract buyer signature could not be checked on-chain now; retry shortly')
    }
  }

  /**
   * The hold on the voucher. A voucher written to Postgres with its payment (a record-first call,
   * or one whose record came back 'duplicate') is given back there too: removed while it is its
   * id's head, matched by digest, and the tuple reloaded from Postgres.
   */
  function reservation(held: HeldVoucher, log: FastifyBaseLogger): Reservation {
    let recorded = false
    let released = false
    return {
      settleFirst: false,
      recorded: () => {
        recorded = true
      },
      async release() {
        if (released) return
        released = true
        try {
          if (recorded && (await store.giveBack(held))) await heads.invalidate(held.tuple)
          else await heads.release(held)
        } catch (err) {
          log.error({ err: (err as Error).message, voucher: held.voucherId }, 'deferred voucher give-back failed')
        }
      },
    }
  }

  return {
    name: 'deferred',
    escrow,
    store,
    heads,

    async close() {
      unwatch?.()
      await heads.close()
    },

    /** The endpoint's v2 requirement: the spec's static `extra`. */
    requirement(offer: SchemeOffer): PaymentRequirementsV2 {
      return {
        scheme: 'deferred',
        network: config.chain.caip2 as NetworkV2,
        amount: offer.amount.toString(),
        asset: getAddress(config.chain.usdc.address),
        payTo: getAddress(offer.payTo),
        maxTimeoutSeconds: offer.maxTimeoutSeconds,
        extra: {
          escrow: getAddress(escrow),
          name: config.chain.usdc.name,
          version: config.chain.usdc.version,
          voucherStorage: 'server',
        },
      }
    },

    /** The requirement for the buyer a `PAYER-IDENTIFIER` names: its escrow `account`, its latest `voucher` and `signature`. */
    async forPayer(
      requirement: PaymentRequirementsV2,
      payer: Address,
      log: FastifyBaseLogger,
    ): Promise<PaymentRequirementsV2> {
      const tuple: VoucherTuple = {
        escrow,
        buyer: payer,
        seller: requirement.payTo.toLowerCase() as Address,
        asset: requirement.asset.toLowerCase() as Address,
      }
      const extra: PaymentRequirementsV2['extra'] = { ...requirement.extra }
      const [account, latest] = await Promise.allSettled([
        reader.account(tuple.buyer, tuple.seller, tuple.asset),
        store.latest(tuple, chainId),
      ])
      if (account.status === 'fulfilled') {
        const a = account.value
        extra.account = {
          balance: a.balance.toString(),
          assetAllowance: a.assetAllowance.toString(),
          assetPermitNonce: a.assetPermitNonce.toString(),
        }
      } else
        log.warn({ err: (account.reason as Error).message }, 'escrow account read failed; challenge sent without it')
      if (latest.status === 'fulfilled') {
        if (latest.value) {
          extra.voucher = voucherJson(latest.value.voucher)
          extra.signature = latest.value.signature
        }
      } else
        log.warn({ err: (latest.reason as Error).message }, 'latest voucher read failed; challenge sent without it')
      return { ...requirement, extra }
    },

    async verify(envelope: PaymentEnvelope, challenge: Challenge, ctx: VerifyContext) {
      if (envelope.version !== 2)
        return CallRefusal.fromX402(
          refuse('invalid_x402_version', 'the deferred scheme is offered in x402 v2 only: send PAYMENT-SIGNATURE'),
        )
      const decoded = decodeDeferredPayload(envelope.payload)
      if (!decoded.ok) return CallRefusal.fromX402(decoded)
      const { voucher, signature, deposit } = decoded.payload
      const t = challenge.terms
      if (envelope.network !== t.networkV2)
        return CallRefusal.fromX402(refuse('invalid_network', `expected ${t.networkV2}, got ${envelope.network}`))
      const a = envelope.accepted
      if (
        a.amount !== t.amount.toString() ||
        !same(a.payTo, t.payTo) ||
        !same(a.asset, t.asset) ||
        !same(a.extra?.escrow, escrow)
      ) {
        return CallRefusal.fromX402(
          refuse(
            'accepted_requirements_mismatch',
            'accepted must be the deferred requirement of this endpoint (amount, payTo, asset, extra.escrow)',
          ),
        )
      }
      const wrong = mismatch(voucher, challenge)
      if (wrong) return CallRefusal.fromX402(refuse('invalid_deferred_evm_payload_voucher_mismatch', wrong))
      const digestBytes = voucherDigest(domainSeparator, voucher)
      const digest = bytesToHex(digestBytes)
      const p: DeferredPayment = {
        scheme: 'deferred',
        version: 2,
        payer: voucher.buyer,
        asset: voucher.asset,
        value: t.amount,
        nonce: digest,
        validBefore: DEFERRED_NO_EXPIRY,
        settledLater: true,
        voucher,
        signature,
        digest,
        digestBytes,
        deposit,
        ledgerFields: {
          scheme: 'deferred',
          x402_version: 2,
          network: config.chain.caip2,
          asset: voucher.asset,
          payer: voucher.buyer,
          pay_to: voucher.seller,
          value: t.amount,
          valid_after: voucher.timestamp,
          valid_before: DEFERRED_NO_EXPIRY,
          nonce: digest,
          signature,
          voucher: {
            escrow,
            voucher_id: voucher.id,
            nonce: voucher.nonce.toString(),
            value_aggregate: voucher.valueAggregate.toString(),
            timestamp: voucher.timestamp.toString(),
          },
        },
      }
      const refused = await checkSignature(p, ctx)
      if (refused) return refused
      if (deposit) {
        let bad
        try {
          bad = await deposits.check(deposit, voucher, Math.floor(ctx.nowMs / 1000))
        } catch (err) {
          ctx.log.warn({ err: (err as Error).message }, 'deposit check failed')
          return retryShortly('the deposit could not be checked on-chain now; retry shortly')
        }
        if (bad) return CallRefusal.fromX402(bad)
      }
      return p
    },

    async reserve(payment: VerifiedPayment, ctx: VerifyContext) {
      const p = payment as DeferredPayment
      const v = p.voucher
      const reserve = (a: AccountRead) =>
        heads.reserve({
          voucher: v,
          digest: p.digest,
          amount: p.value,
          available: a.available,
          availableAtMs: a.atMs,
          nowMs: ctx.nowMs,
        })
      let r
      try {
        if (p.deposit) {
          // the deposit lands before the voucher counts (the spec's settlement step 1)
          const failed = await deposits.execute(p.deposit)
          if (failed) return CallRefusal.fromX402(failed)
        }
        r = await reserve(await reader.read(v.buyer, v.seller, v.asset, { fresh: p.deposit !== undefined }))
        // deposited since the balance was cached? one fresh read before refusing
        if (!r.ok && r.insufficient) r = await reserve(await reader.read(v.buyer, v.seller, v.asset, { fresh: true }))
      } catch (err) {
        ctx.log.error({ err: (err as Error).message }, 'deferred voucher could not be checked')
        return retryShortly('the escrow or the voucher store could not be read now; retry shortly')
      }
      // the catalogue's message (what to fix) with what was found
      if (!r.ok) return CallRefusal.fromX402(refuse(r.reason, r.message))
      const held = reservation(r.held, ctx.log)
      if (r.held.previousNonce === undefined) {
        // a voucher id new here may have been collected through another store: refuse rather than pay twice
        const collected = await reader.collected(v.buyer, v.seller, v.asset, v.id).catch(() => undefined)
        if (collected === undefined || collected > 0n) {
          await held.release()
          if (collected === undefined) return retryShortly('the escrow could not be read now; retry shortly')
          return CallRefusal.fromX402(
            refuse(
              'invalid_deferred_evm_payload_voucher_stale',
              `voucher ${v.id} was already collected in the escrow (${collected}); start a new voucher id`,
            ),
          )
        }
      }
      return held
    },
  }
}
