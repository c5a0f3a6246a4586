/**
 * The x402 reason-code catalogue: every reason a payment can be refused for, with the HTTP
 * status we answer with and a human message.
 *
 * Official codes are copied unchanged. The x402 sources use two generations of names for the
 * exact-EVM checks: the v2 spec (§9), the legacy `x402` package's `ErrorReasons` (which the v1
 * client validates a 402 `error` against) and the Go facilitator use
 * `invalid_exact_evm_payload_*`; the newer TypeScript facilitator (`mechanisms/evm/src/exact/
 * facilitator/errors.ts`) shortened some. We answer with the `_payload_` names because both
 * client generations accept them; `SDK_ALIASES` maps the newer spellings for callers that get a
 * reason from an external facilitator.
 *
 * Status: every refusal is answered 402 with the challenge again, a malformed header included, as
 * the official middleware does: the client can always sign a new payment from the same response.
 */
import { BATCH_SETTLEMENT_REASONS } from './batch-settlement-reasons.js'

const catalogue = {
  // --- the batch-settlement scheme (the spec's codes, src/x402/batch-settlement-reasons.ts) ---
  ...BATCH_SETTLEMENT_REASONS,
  // --- official x402 ---------------------------------------------------------------------
  insufficient_funds: { status: 402, message: 'the payer does not have enough funds for this payment' },
  invalid_exact_evm_payload_authorization_valid_after: {
    status: 402,
    message: 'the authorization is not valid yet (validAfter is in the future)',
  },
  invalid_exact_evm_payload_authorization_valid_before: {
    status: 402,
    message: 'the authorization has expired or expires too soon to be settled',
  },
  invalid_exact_evm_payload_authorization_value: {
    status: 402,
    message: 'the authorized value does not match the price',
  },
  invalid_exact_evm_payload_signature: {
    status: 402,
    message: 'the authorization signature is invalid or was not made by the payer',
  },
  invalid_exact_evm_payload_recipient_mismatch: {
    status: 402,
    message: 'the authorization pays a different recipient than this endpoint',
  },
  invalid_exact_evm_payload_undeployed_smart_wallet: {
    status: 402,
    message:
      'the payer is a smart wallet that is not deployed and the signature carries no ERC-6492 factory call to deploy it; deploy the wallet or sign with ERC-6492',
  },
  invalid_exact_evm_nonce_already_used: {
    status: 402,
    message: 'this authorization nonce was already used; sign a new payment',
  },
  invalid_exact_evm_insufficient_balance: {
    status: 402,
    message: 'the payer balance is too low for this payment',
  },
  invalid_network: { status: 402, message: 'the payment is for a network this endpoint does not accept' },
  invalid_payload: { status: 402, message: 'the payment header is malformed' },
  invalid_payment_requirements: { status: 402, message: 'the payment requirements are invalid' },
  invalid_scheme: { status: 402, message: 'the payment scheme is invalid' },
  unsupported_scheme: {
    status: 402,
    message:
      'this endpoint does not offer that payment scheme; pay with one its challenge lists in accepts ("exact" always)',
  },
  unsupported_payload_type: {
    status: 402,
    message:
      'the exact scheme accepts only EIP-3009 transferWithAuthorization payloads (a Permit2 payment goes under "upto" where the endpoint offers it)',
  },
  invalid_x402_version: {
    status: 402,
    message: 'unsupported x402 version: send x402Version 1 in X-PAYMENT or 2 in PAYMENT-SIGNATURE',
  },
  invalid_transaction_state: { status: 402, message: 'the settlement transaction failed' },
  payment_expired: { status: 402, message: 'the payment expired before it could be settled' },
  unexpected_verify_error: { status: 402, message: 'the payment could not be verified' },
  unexpected_settle_error: { status: 402, message: 'the payment could not be settled' },

  // --- the deferred scheme (ours; the deferred spec names no reason codes) ----------------
  invalid_deferred_evm_payload_signature: {
    status: 402,
    message:
      'the voucher signature is invalid or was not made by the voucher buyer; sign the voucher with the buyer key (EIP-712, domain DeferredPaymentEscrow / 1 / chainId / escrow)',
  },
  invalid_deferred_evm_payload_voucher_mismatch: {
    status: 402,
    message:
      'the voucher does not fit this endpoint requirement; its seller must be payTo, its asset the asset, its escrow extra.escrow and its chainId the network chain',
  },
  invalid_deferred_evm_payload_voucher_stale: {
    status: 402,
    message:
      'the voucher does not continue the latest stored voucher of its id (already used, replayed or out of order); aggregate onto the voucher in extra.voucher (send PAYER-IDENTIFIER to get it): nonce + 1',
  },
  invalid_deferred_evm_payload_voucher_value: {
    status: 402,
    message:
      'the voucher valueAggregate is wrong; a new voucher carries exactly the price, an aggregated one the previous valueAggregate plus the price',
  },
  invalid_deferred_evm_payload_voucher_timestamp: {
    status: 402,
    message: 'the voucher timestamp must be later than the previous voucher timestamp',
  },
  invalid_deferred_evm_insufficient_escrow_balance: {
    status: 402,
    message:
      'the buyer escrow balance for this seller and asset does not cover the vouchers not yet collected; deposit into the escrow (deposit or depositTo) and retry',
  },
  invalid_deferred_evm_payload_deposit: {
    status: 402,
    message:
      'the deposit is invalid (authorization or permit); fix the field named, or deposit into the escrow yourself and send the voucher without deposit',
  },
  invalid_deferred_evm_payload_deposit_unsupported: {
    status: 402,
    message:
      'the deposit authorization cannot be executed here; deposit into the escrow yourself (deposit or depositTo) and send the voucher without deposit',
  },

  // --- the sign-in-with-x extension (@x402/extensions SIWxValidationCode / SIWxVerifyCode) ---
  invalid_siwx_domain_mismatch: {
    status: 402,
    message: 'the sign-in message names another domain than this proxy; sign the challenge of this 402',
  },
  invalid_siwx_uri_mismatch: {
    status: 402,
    message: 'the sign-in message names another resource than this endpoint; sign the challenge of this 402',
  },
  invalid_siwx_issued_at: { status: 402, message: 'the sign-in message issuedAt is not a date' },
  invalid_siwx_issued_at_too_old: {
    status: 402,
    message: 'the sign-in message was issued more than 5 minutes ago; sign the challenge of this 402',
  },
  invalid_siwx_issued_at_in_future: { status: 402, message: 'the sign-in message issuedAt is in the future' },
  invalid_siwx_expiration_time: { status: 402, message: 'the sign-in message expirationTime is not a date' },
  invalid_siwx_expired: {
    status: 402,
    message: 'the sign-in message has expired; sign the challenge of this 402',
  },
  invalid_siwx_not_before: { status: 402, message: 'the sign-in message notBefore is not a date' },
  invalid_siwx_not_yet_valid: { status: 402, message: 'the sign-in message is not valid yet (notBefore)' },
  invalid_siwx_nonce: {
    status: 402,
    message: 'the sign-in nonce was already used; sign the challenge of this 402 (a new nonce)',
  },
  invalid_siwx_signature: {
    status: 402,
    message: 'the sign-in signature is invalid or was not made by the address it names',
  },
  invalid_siwx_malformed_signature: {
    status: 402,
    message: 'the sign-in signature is not a 0x-prefixed hex signature',
  },
  invalid_siwx_chain_id: { status: 402, message: 'the sign-in chainId is not a CAIP-2 eip155:<number> id' },
  invalid_siwx_unsupported_chain: {
    status: 402,
    message: 'the sign-in chain is not one this endpoint accepts (supportedChains)',
  },
  // ours: the extension leaves these to the server
  invalid_siwx_header: {
    status: 402,
    message: 'the SIGN-IN-WITH-X header is malformed (base64 of the signed payload as JSON)',
  },
  siwx_no_paid_access: {
    status: 402,
    message:
      'this wallet holds no paid access to this endpoint (it never paid, or its access ran out); pay to get access again',
  },

  // --- the upto scheme (the official @x402/evm upto facilitator's codes) -------------------
  invalid_permit2_spender: {
    status: 402,
    message: 'the Permit2 spender must be the x402 upto proxy (0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002)',
  },
  invalid_permit2_recipient_mismatch: {
    status: 402,
    message: "the Permit2 witness pays a different recipient (witness.to) than this endpoint's payTo",
  },
  upto_facilitator_mismatch: {
    status: 402,
    message: "the Permit2 witness names another facilitator than the challenge's extra.facilitatorAddress",
  },
  permit2_deadline_expired: {
    status: 402,
    message: 'the Permit2 deadline has passed or comes too soon for the call to be settled',
  },
  permit2_not_yet_valid: { status: 402, message: 'the Permit2 witness validAfter is in the future' },
  permit2_amount_mismatch: {
    status: 402,
    message: "the permitted amount must equal the challenge's maximum (amount)",
  },
  permit2_token_mismatch: { status: 402, message: "the permitted token is not this endpoint's asset" },
  invalid_permit2_signature: {
    status: 402,
    message: 'the Permit2 signature is invalid or was not made by permit2Authorization.from',
  },
  permit2_allowance_required: {
    status: 402,
    message: 'the payer has not approved Permit2 for this token (or for less than the maximum); approve it and retry',
  },
  permit2_insufficient_balance: { status: 402, message: 'the payer balance is too low for the maximum' },
  permit2_invalid_nonce: { status: 402, message: 'this Permit2 nonce was already used; sign a new payment' },

  // --- ours ------------------------------------------------------------------------------
  payment_required: {
    status: 402,
    message: 'payment required: send X-PAYMENT (x402 v1) or PAYMENT-SIGNATURE (x402 v2)',
  },
  payment_header_too_large: { status: 402, message: 'the payment header is larger than allowed' },
  accepted_requirements_mismatch: {
    status: 402,
    message: 'the accepted requirements are not one of the requirements this endpoint issued',
  },
  asset_mismatch: { status: 402, message: 'the payment is in a different asset than this endpoint accepts' },
  facilitator_channel_not_yours: {
    status: 402,
    message:
      "this channel's deposit was not settled through the facilitator with this API key: its claims, settles and refunds are its seller's",
  },
  authorization_window_too_long: {
    status: 402,
    message: 'the authorization stays valid for longer than this endpoint allows; sign a shorter validBefore',
  },
  payer_blocked: {
    status: 402,
    message: 'the payer has an unsettled failed payment and is blocked until it pays',
  },
} as const satisfies Record<string, { status: 402; message: string }>

export type ReasonCode = keyof typeof catalogue

export interface ReasonEntry {
  readonly status: 402
  readonly message: string
}

export const reasons: Readonly<Record<ReasonCode, ReasonEntry>> = Object.freeze(catalogue)

/** Newer x402 SDK spellings of the same reasons, mapped to the codes we answer with. */
export const SDK_ALIASES: Readonly<Record<string, ReasonCode>> = Object.freeze({
  invalid_exact_evm_signature: 'invalid_exact_evm_payload_signature',
  invalid_exact_evm_recipient_mismatch: 'invalid_exact_evm_payload_recipient_mismatch',
  invalid_exact_evm_authorization_value: 'invalid_exact_evm_payload_authorization_value',
  invalid_exact_evm_payload_authorization_value_mismatch: 'invalid_exact_evm_payload_authorization_value',
  invalid_exact_evm_scheme: 'unsupported_scheme',
  invalid_exact_evm_network_mismatch: 'invalid_network',
})

/** The reason code for a settlement failure (src/services/settlement/chain-ops.ts FailureReason). */
const SETTLEMENT_FAILURES: Readonly<Record<string, ReasonCode>> = Object.freeze({
  insufficient_funds: 'insufficient_funds',
  expired: 'payment_expired',
  authorization_canceled: 'invalid_exact_evm_nonce_already_used',
  authorization_already_used: 'invalid_exact_evm_nonce_already_used',
  invalid_signature: 'invalid_exact_evm_payload_signature',
  transfer_failed: 'invalid_transaction_state',
})
export function settlementReasonCode(failure: string): ReasonCode {
  return Object.hasOwn(SETTLEMENT_FAILURES, failure) ? SETTLEMENT_FAILURES[failure]! : 'unexpected_settle_error'
}

/** True when `code` is one of ours or an official code in the catalogue. */
export function isReasonCode(code: string): code is ReasonCode {
  return Object.hasOwn(catalogue, code)
}

/** Map any reason string (ours, official, or a newer SDK alias) to a catalogue code. */
export function toReasonCode(code: string): ReasonCode {
  if (isReasonCode(code)) return code
  return Object.hasOwn(SDK_ALIASES, code) ? SDK_ALIASES[code] : 'unexpected_verify_error'
}

/** A refusal as the x402 modules return it. */
export interface Refusal {
  ok: false
  reason: ReasonCode
  message: string
  status: 402
}

/** Build a refusal; `detail` is appended to the catalogue message. */
export function refuse(reason: ReasonCode, detail?: string): Refusal {
  const entry = catalogue[reason]
  return {
    ok: false,
    reason,
    message: detail === undefined ? entry.message : `${entry.message}: ${detail}`,
    status: entry.status,
  }
}
