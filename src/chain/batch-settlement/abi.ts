/**
 * The x402BatchSettlement contract's ABI: the functions and events Tollgate calls or watches. The
 * official `@x402/evm` package keeps its ABI internal (not exported), so this is written from the
 * contract's interface; the contract tests run it against the official client's signatures.
 */
const channelConfig = [
  { name: 'payer', type: 'address' },
  { name: 'payerAuthorizer', type: 'address' },
  { name: 'receiver', type: 'address' },
  { name: 'receiverAuthorizer', type: 'address' },
  { name: 'token', type: 'address' },
  { name: 'withdrawDelay', type: 'uint40' },
  { name: 'salt', type: 'bytes32' },
] as const

const voucherClaim = [
  {
    name: 'voucher',
    type: 'tuple',
    components: [
      { name: 'channel', type: 'tuple', components: channelConfig },
      { name: 'maxClaimableAmount', type: 'uint128' },
    ],
  },
  { name: 'signature', type: 'bytes' },
  { name: 'totalClaimed', type: 'uint128' },
] as const

const config = { name: 'config', type: 'tuple', components: channelConfig } as const
const claims = { name: 'voucherClaims', type: 'tuple[]', components: voucherClaim } as const

export const batchSettlementAbi = [
  {
    type: 'function',
    name: 'deposit',
    stateMutability: 'nonpayable',
    inputs: [
      config,
      { name: 'amount', type: 'uint128' },
      { name: 'collector', type: 'address' },
      { name: 'collectorData', type: 'bytes' },
    ],
    outputs: [],
  },
  { type: 'function', name: 'claim', stateMutability: 'nonpayable', inputs: [claims], outputs: [] },
  {
    type: 'function',
    name: 'claimWithSignature',
    stateMutability: 'nonpayable',
    inputs: [claims, { name: 'authorizerSignature', type: 'bytes' }],
    outputs: [],
  },
  {
    type: 'function',
    name: 'settle',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'receiver', type: 'address' },
      { name: 'token', type: 'address' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'initiateWithdraw',
    stateMutability: 'nonpayable',
    inputs: [config, { name: 'amount', type: 'uint128' }],
    outputs: [],
  },
  { type: 'function', name: 'finalizeWithdraw', stateMutability: 'nonpayable', inputs: [config], outputs: [] },
  {
    type: 'function',
    name: 'refund',
    stateMutability: 'nonpayable',
    inputs: [config, { name: 'amount', type: 'uint128' }],
    outputs: [],
  },
  {
    type: 'function',
    name: 'refundWithSignature',
    stateMutability: 'nonpayable',
    inputs: [
      config,
      { name: 'amount', type: 'uint128' },
      { name: 'nonce', type: 'uint256' },
      { name: 'receiverAuthorizerSignature', type: 'bytes' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'multicall',
    stateMutability: 'nonpayable',
    inputs: [{ name: 'data', type: 'bytes[]' }],
    outputs: [{ name: 'results', type: 'bytes[]' }],
  },
  {
    type: 'function',
    name: 'getChannelId',
    stateMutability: 'view',
    inputs: [config],
    outputs: [{ name: '', type: 'bytes32' }],
  },
  {
    type: 'function',
    name: 'channels',
    stateMutability: 'view',
    inputs: [{ name: 'channelId', type: 'bytes32' }],
    outputs: [
      { name: 'balance', type: 'uint128' },
      { name: 'totalClaimed', type: 'uint128' },
    ],
  },
  {
    type: 'function',
    name: 'pendingWithdrawals',
    stateMutability: 'view',
    inputs: [{ name: 'channelId', type: 'bytes32' }],
    outputs: [
      { name: 'amount', type: 'uint128' },
      { name: 'initiatedAt', type: 'uint40' },
    ],
  },
  {
    type: 'function',
    name: 'refundNonce',
    stateMutability: 'view',
    inputs: [{ name: 'channelId', type: 'bytes32' }],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'receivers',
    stateMutability: 'view',
    inputs: [
      { name: 'receiver', type: 'address' },
      { name: 'token', type: 'address' },
    ],
    outputs: [
      { name: 'totalClaimed', type: 'uint128' },
      { name: 'totalSettled', type: 'uint128' },
    ],
  },
  {
    type: 'function',
    name: 'getClaimBatchDigest',
    stateMutability: 'view',
    inputs: [claims],
    outputs: [{ name: '', type: 'bytes32' }],
  },
  {
    type: 'event',
    name: 'Claimed',
    anonymous: false,
    inputs: [
      { name: 'channelId', type: 'bytes32', indexed: true },
      { name: 'sender', type: 'address', indexed: true },
      { name: 'claimAmount', type: 'uint128', indexed: false },
      { name: 'newTotalClaimed', type: 'uint128', indexed: false },
    ],
  },
  {
    type: 'event',
    name: 'Settled',
    anonymous: false,
    inputs: [
      { name: 'receiver', type: 'address', indexed: true },
      { name: 'token', type: 'address', indexed: true },
      { name: 'sender', type: 'address', indexed: true },
      { name: 'amount', type: 'uint128', indexed: false },
    ],
  },
  {
    type: 'event',
    name: 'WithdrawInitiated',
    anonymous: false,
    inputs: [
      { name: 'channelId', type: 'bytes32', indexed: true },
      { name: 'amount', type: 'uint128', indexed: false },
      { name: 'finalizeAfter', type: 'uint40', indexed: false },
    ],
  },
  {
    type: 'event',
    name: 'WithdrawFinalized',
    anonymous: false,
    inputs: [
      { name: 'channelId', type: 'bytes32', indexed: true },
      { name: 'sender', type: 'address', indexed: true },
      { name: 'amount', type: 'uint128', indexed: false },
    ],
  },
  {
    type: 'event',
    name: 'Refunded',
    anonymous: false,
    inputs: [
      { name: 'channelId', type: 'bytes32', indexed: true },
      { name: 'sender', type: 'address', indexed: true },
      { name: 'amount', type: 'uint128', indexed: false },
    ],
  },
  { type: 'error', name: 'InvalidChannel', inputs: [] },
  { type: 'error', name: 'InvalidSignature', inputs: [] },
  { type: 'error', name: 'NotReceiverAuthorizer', inputs: [] },
  { type: 'error', name: 'NotAuthorizedToClaim', inputs: [] },
  { type: 'error', name: 'NotAuthorizedToRefund', inputs: [] },
  { type: 'error', name: 'ClaimExceedsCeiling', inputs: [] },
  { type: 'error', name: 'ClaimExceedsBalance', inputs: [] },
  { type: 'error', name: 'WithdrawDelayNotElapsed', inputs: [] },
  { type: 'error', name: 'WithdrawalNotPending', inputs: [] },
  { type: 'error', name: 'WithdrawalAlreadyPending', inputs: [] },
  { type: 'error', name: 'NothingToWithdraw', inputs: [] },
  { type: 'error', name: 'WithdrawAmountExceedsAvailable', inputs: [] },
  { type: 'error', name: 'NotAuthorizedToFinalizeWithdraw', inputs: [] },
  { type: 'error', name: 'EmptyBatch', inputs: [] },
  { type: 'error', name: 'InvalidRefundNonce', inputs: [] },
  { type: 'error', name: 'ZeroRefund', inputs: [] },
  { type: 'error', name: 'DepositCollectionFailed', inputs: [] },
] as const
