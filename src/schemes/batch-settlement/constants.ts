/**
 * The x402 `batch-settlement` scheme's fixed terms on EVM (x402-foundation/x402
 * `specs/schemes/batch-settlement/scheme_batch_settlement_evm.md`): the canonical contract
 * addresses (the same on every EVM chain, CREATE2), the EIP-712 domain and type strings the
 * contract hashes channel configs and vouchers under, and the withdrawal-delay bounds.
 */
export const BATCH_SETTLEMENT_ADDRESS = '0x4020074e9df2ce1dee5a9c1b5c3f541d02a10003' as const
export const ERC3009_DEPOSIT_COLLECTOR = '0x4020806089470a89826cb9fb1f4059150b550004' as const

export const BATCH_DOMAIN_NAME = 'x402 Batch Settlement'
export const BATCH_DOMAIN_VERSION = '1'

export const CHANNEL_CONFIG_TYPE =
  'ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)'
export const VOUCHER_TYPE = 'Voucher(bytes32 channelId,uint128 maxClaimableAmount)'

/** 15 minutes to 30 days: the contract refuses a channel outside them */
export const MIN_WITHDRAW_DELAY = 900
export const MAX_WITHDRAW_DELAY = 30 * 86400

export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000' as const
export const U128_MAX = (1n << 128n) - 1n
