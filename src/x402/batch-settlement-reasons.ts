/**
 * The `batch-settlement` scheme's refusal codes, word for word from the spec's "Error Codes"
 * table (the official `@x402/evm` client matches `cumulative_amount_mismatch` and
 * `cumulative_below_claimed` to recover by itself), with what the buyer should do. Merged into the
 * catalogue of src/x402/reasons.ts; it lives in the x402 layer so that catalogue need not import a
 * scheme (src/schemes/batch-settlement/reasons.ts re-exports it for the scheme).
 */
export const BATCH_SETTLEMENT_REASONS = {
  invalid_batch_settlement_evm_scheme: { status: 402, message: 'the scheme is not batch-settlement' },
  invalid_batch_settlement_evm_network_mismatch: {
    status: 402,
    message: "accepted.network is not this endpoint's network",
  },
  invalid_batch_settlement_evm_payload_type: {
    status: 402,
    message: 'payload.type must be deposit, voucher or refund',
  },
  invalid_batch_settlement_evm_voucher_payload: {
    status: 402,
    message: 'the voucher payload is malformed',
  },
  invalid_batch_settlement_evm_deposit_payload: { status: 402, message: 'the deposit payload is malformed' },
  invalid_batch_settlement_evm_refund_payload: { status: 402, message: 'the refund payload is malformed' },
  invalid_batch_settlement_evm_refund_amount_invalid: {
    status: 402,
    message: 'the refund amount must be a positive integer string, at most what is refundable',
  },
  invalid_batch_settlement_evm_refund_no_balance: {
    status: 402,
    message: 'no refundable balance remains in this channel',
  },
  invalid_batch_settlement_evm_refund_simulation_failed: {
    status: 402,
    message: 'the refund would revert on chain now; retry shortly',
  },
  invalid_batch_settlement_evm_refund_transaction_failed: {
    status: 402,
    message: 'the refund could not be executed on chain; retry later or withdraw',
  },
  invalid_batch_settlement_evm_channel_id_mismatch: {
    status: 402,
    message: 'channelConfig does not hash to voucher.channelId (EIP-712, x402 Batch Settlement domain)',
  },
  invalid_batch_settlement_evm_token_mismatch: {
    status: 402,
    message: "channelConfig.token is not the requirement's asset",
  },
  invalid_batch_settlement_evm_receiver_mismatch: {
    status: 402,
    message: "channelConfig.receiver is not the requirement's payTo",
  },
  invalid_batch_settlement_evm_receiver_authorizer_mismatch: {
    status: 402,
    message: "channelConfig.receiverAuthorizer is not the requirement's extra.receiverAuthorizer",
  },
  invalid_batch_settlement_evm_withdraw_delay_mismatch: {
    status: 402,
    message: "channelConfig.withdrawDelay is not the requirement's extra.withdrawDelay",
  },
  invalid_batch_settlement_evm_withdraw_delay_out_of_range: {
    status: 402,
    message: 'channelConfig.withdrawDelay must be between 900 s (15 min) and 2592000 s (30 days)',
  },
  invalid_batch_settlement_evm_voucher_signature: {
    status: 402,
    message: 'the voucher signature does not recover to the channel payerAuthorizer (or the payer wallet refused it)',
  },
  invalid_batch_settlement_evm_channel_not_found: {
    status: 402,
    message: 'no channel with a positive balance has this id; send a deposit payload first',
  },
  invalid_batch_settlement_evm_insufficient_balance: {
    status: 402,
    message: 'the payer token balance is too low for the deposit',
  },
  invalid_batch_settlement_evm_cumulative_exceeds_balance: {
    status: 402,
    message: 'voucher.maxClaimableAmount exceeds the channel balance; top up with a deposit payload',
  },
  invalid_batch_settlement_evm_cumulative_below_claimed: {
    status: 402,
    message: 'voucher.maxClaimableAmount is not above what was already claimed on chain (totalClaimed)',
  },
  invalid_batch_settlement_evm_cumulative_amount_mismatch: {
    status: 402,
    message:
      "voucher.maxClaimableAmount must be the channel's chargedCumulativeAmount plus this call's amount; resync from accepts[].extra.channelState and voucherState",
  },
  invalid_batch_settlement_evm_channel_busy: {
    status: 402,
    message: 'another request on this channel is being served; retry shortly',
  },
  invalid_batch_settlement_evm_charge_exceeds_signed_cumulative: {
    status: 402,
    message: "the charge would exceed the voucher's signed maxClaimableAmount",
  },
  invalid_batch_settlement_evm_channel_state_read_failed: {
    status: 402,
    message: 'the channel could not be read on chain now; retry shortly',
  },
  invalid_batch_settlement_evm_erc3009_authorization_required: {
    status: 402,
    message: 'the deposit must carry deposit.authorization.erc3009Authorization (this server offers eip3009 deposits)',
  },
  invalid_batch_settlement_evm_payload_authorization_valid_after: {
    status: 402,
    message: 'the ERC-3009 authorization validAfter is still in the future',
  },
  invalid_batch_settlement_evm_payload_authorization_valid_before: {
    status: 402,
    message: 'the ERC-3009 authorization validBefore has passed or comes too soon',
  },
  invalid_batch_settlement_evm_receive_authorization_signature: {
    status: 402,
    message: 'the ERC-3009 receiveWithAuthorization signature is not the payer’s',
  },
  invalid_batch_settlement_evm_deposit_transaction_failed: {
    status: 402,
    message: 'the deposit transaction failed on chain; nothing was served or charged',
  },
  invalid_batch_settlement_evm_missing_eip712_domain: {
    status: 402,
    message: 'the requirement must carry the token EIP-712 domain (extra.name, extra.version)',
  },
  // --- the facilitator's actions (a seller's own server sends claim, settle, refund to /facilitator/settle) ---
  invalid_batch_settlement_evm_deposit_simulation_failed: {
    status: 402,
    message: 'the deposit would revert on chain (its authorization used or expired)',
  },
  invalid_batch_settlement_evm_claim_simulation_failed: {
    status: 402,
    message: 'the claim would revert on chain (a voucher, its signature or a totalClaimed is not claimable)',
  },
  invalid_batch_settlement_evm_claim_transaction_failed: {
    status: 402,
    message: 'the claim transaction failed on chain',
  },
  invalid_batch_settlement_evm_settle_simulation_failed: { status: 402, message: 'the settle would revert on chain' },
  invalid_batch_settlement_evm_settle_transaction_failed: {
    status: 402,
    message: 'the settle transaction failed on chain',
  },
  invalid_batch_settlement_evm_nothing_to_settle: {
    status: 402,
    message: 'nothing is claimed and unsettled for this receiver and token',
  },
  invalid_batch_settlement_evm_authorizer_address_mismatch: {
    status: 402,
    message:
      "channelConfig.receiverAuthorizer is not this facilitator's receiverAuthorizer: send the authorizer signature",
  },
  invalid_batch_settlement_evm_authorizer_not_configured: {
    status: 402,
    message: 'this facilitator holds no receiverAuthorizer key: send the authorizer signature',
  },
  invalid_batch_settlement_evm_rpc_read_failed: {
    status: 402,
    message: 'the chain could not be read now; retry shortly',
  },
  // ours: the spec names no code for a voucher on a channel whose timed withdrawal is pending (an
  // earlier draft of its EVM binding had `batch_settlement_evm_withdrawal_pending`, spelled here with
  // the current prefix)
  invalid_batch_settlement_evm_withdrawal_pending: {
    status: 402,
    message:
      'a timed withdrawal is pending on this channel, which takes no more calls; pay from a new channel (another salt) with a deposit',
  },
} as const satisfies Record<string, { status: 402; message: string }>
