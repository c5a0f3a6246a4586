/**
 * DeferredPaymentEscrow's ABI (src/chain/contracts/DeferredPaymentEscrow.sol), typed for viem.
 * Written from the compiled artifact; test/unit/schemes/deferred/escrow-abi.test.ts fails when
 * the two differ, so rebuild the contract and this list together.
 *
 * @example
 * const [outstanding, collectable] = await client.readContract({
 *   address: escrow, abi: deferredEscrowAbi, functionName: 'getOutstandingAndCollectableAmount', args: [voucher],
 * })
 */
export const deferredEscrowAbi = [
  // ---- functions ----
  {
    inputs: [],
    name: 'DEPOSIT_AUTHORIZATION_TYPEHASH',
    outputs: [{ name: '', type: 'bytes32' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [],
    name: 'DOMAIN_SEPARATOR',
    outputs: [{ name: '', type: 'bytes32' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [],
    name: 'FLUSH_ALL_AUTHORIZATION_TYPEHASH',
    outputs: [{ name: '', type: 'bytes32' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [],
    name: 'FLUSH_AUTHORIZATION_TYPEHASH',
    outputs: [{ name: '', type: 'bytes32' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [],
    name: 'MAX_THAWING_PERIOD',
    outputs: [{ name: '', type: 'uint256' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [],
    name: 'THAWING_PERIOD',
    outputs: [{ name: '', type: 'uint256' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [],
    name: 'VOUCHER_TYPEHASH',
    outputs: [{ name: '', type: 'bytes32' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      { name: 'seller', type: 'address' },
      { name: 'asset', type: 'address' },
    ],
    name: 'cancelThaw',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      {
        components: [
          { name: 'id', type: 'bytes32' },
          { name: 'buyer', type: 'address' },
          { name: 'seller', type: 'address' },
          { name: 'valueAggregate', type: 'uint256' },
          { name: 'asset', type: 'address' },
          { name: 'timestamp', type: 'uint64' },
          { name: 'nonce', type: 'uint256' },
          { name: 'escrow', type: 'address' },
          { name: 'chainId', type: 'uint256' },
        ],
        name: 'voucher',
        type: 'tuple',
      },
      { name: 'signature', type: 'bytes' },
    ],
    name: 'collect',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      {
        components: [
          {
            components: [
              { name: 'id', type: 'bytes32' },
              { name: 'buyer', type: 'address' },
              { name: 'seller', type: 'address' },
              { name: 'valueAggregate', type: 'uint256' },
              { name: 'asset', type: 'address' },
              { name: 'timestamp', type: 'uint64' },
              { name: 'nonce', type: 'uint256' },
              { name: 'escrow', type: 'address' },
              { name: 'chainId', type: 'uint256' },
            ],
            name: 'voucher',
            type: 'tuple',
          },
          { name: 'signature', type: 'bytes' },
        ],
        name: 'vouchers',
        type: 'tuple[]',
      },
    ],
    name: 'collectMany',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      { name: 'seller', type: 'address' },
      { name: 'asset', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    name: 'deposit',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      { name: 'asset', type: 'address' },
      {
        components: [
          { name: 'seller', type: 'address' },
          { name: 'amount', type: 'uint256' },
        ],
        name: 'deposits',
        type: 'tuple[]',
      },
    ],
    name: 'depositMany',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      { name: 'buyer', type: 'address' },
      { name: 'seller', type: 'address' },
      { name: 'asset', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    name: 'depositTo',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      {
        components: [
          { name: 'buyer', type: 'address' },
          { name: 'seller', type: 'address' },
          { name: 'asset', type: 'address' },
          { name: 'amount', type: 'uint256' },
          { name: 'nonce', type: 'bytes32' },
          { name: 'expiry', type: 'uint64' },
        ],
        name: 'auth',
        type: 'tuple',
      },
      { name: 'signature', type: 'bytes' },
    ],
    name: 'depositWithAuthorization',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [],
    name: 'eip712Domain',
    outputs: [
      { name: 'fields', type: 'bytes1' },
      { name: 'name', type: 'string' },
      { name: 'version', type: 'string' },
      { name: 'chainId', type: 'uint256' },
      { name: 'verifyingContract', type: 'address' },
      { name: 'salt', type: 'bytes32' },
      { name: 'extensions', type: 'uint256[]' },
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        components: [
          { name: 'buyer', type: 'address' },
          { name: 'nonce', type: 'bytes32' },
          { name: 'expiry', type: 'uint64' },
        ],
        name: 'auth',
        type: 'tuple',
      },
      { name: 'signature', type: 'bytes' },
    ],
    name: 'flushAllWithAuthorization',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      {
        components: [
          { name: 'buyer', type: 'address' },
          { name: 'seller', type: 'address' },
          { name: 'asset', type: 'address' },
          { name: 'nonce', type: 'bytes32' },
          { name: 'expiry', type: 'uint64' },
        ],
        name: 'auth',
        type: 'tuple',
      },
      { name: 'signature', type: 'bytes' },
    ],
    name: 'flushWithAuthorization',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      { name: 'buyer', type: 'address' },
      { name: 'seller', type: 'address' },
      { name: 'asset', type: 'address' },
    ],
    name: 'getAccount',
    outputs: [
      {
        components: [
          { name: 'balance', type: 'uint256' },
          { name: 'thawingAmount', type: 'uint256' },
          { name: 'thawEndTime', type: 'uint64' },
        ],
        name: '',
        type: 'tuple',
      },
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      { name: 'buyer', type: 'address' },
      { name: 'seller', type: 'address' },
      { name: 'asset', type: 'address' },
      { name: 'voucherIds', type: 'bytes32[]' },
      { name: 'valueAggregates', type: 'uint256[]' },
    ],
    name: 'getAccountDetails',
    outputs: [
      { name: 'balance', type: 'uint256' },
      { name: 'allowance', type: 'uint256' },
      { name: 'nonce', type: 'uint256' },
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        components: [
          { name: 'id', type: 'bytes32' },
          { name: 'buyer', type: 'address' },
          { name: 'seller', type: 'address' },
          { name: 'valueAggregate', type: 'uint256' },
          { name: 'asset', type: 'address' },
          { name: 'timestamp', type: 'uint64' },
          { name: 'nonce', type: 'uint256' },
          { name: 'escrow', type: 'address' },
          { name: 'chainId', type: 'uint256' },
        ],
        name: 'voucher',
        type: 'tuple',
      },
    ],
    name: 'getOutstandingAndCollectableAmount',
    outputs: [
      { name: 'outstanding', type: 'uint256' },
      { name: 'collectable', type: 'uint256' },
    ],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      { name: 'buyer', type: 'address' },
      { name: 'seller', type: 'address' },
      { name: 'asset', type: 'address' },
      { name: 'voucherId', type: 'bytes32' },
    ],
    name: 'getVoucherCollected',
    outputs: [{ name: '', type: 'uint256' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        components: [
          { name: 'buyer', type: 'address' },
          { name: 'seller', type: 'address' },
          { name: 'asset', type: 'address' },
          { name: 'amount', type: 'uint256' },
          { name: 'nonce', type: 'bytes32' },
          { name: 'expiry', type: 'uint64' },
        ],
        name: 'auth',
        type: 'tuple',
      },
      { name: 'signature', type: 'bytes' },
    ],
    name: 'isDepositAuthorizationValid',
    outputs: [{ name: '', type: 'bool' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        components: [
          { name: 'buyer', type: 'address' },
          { name: 'nonce', type: 'bytes32' },
          { name: 'expiry', type: 'uint64' },
        ],
        name: 'auth',
        type: 'tuple',
      },
      { name: 'signature', type: 'bytes' },
    ],
    name: 'isFlushAllAuthorizationValid',
    outputs: [{ name: '', type: 'bool' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        components: [
          { name: 'buyer', type: 'address' },
          { name: 'seller', type: 'address' },
          { name: 'asset', type: 'address' },
          { name: 'nonce', type: 'bytes32' },
          { name: 'expiry', type: 'uint64' },
        ],
        name: 'auth',
        type: 'tuple',
      },
      { name: 'signature', type: 'bytes' },
    ],
    name: 'isFlushAuthorizationValid',
    outputs: [{ name: '', type: 'bool' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      { name: 'buyer', type: 'address' },
      { name: 'nonce', type: 'bytes32' },
    ],
    name: 'isNonceUsed',
    outputs: [{ name: '', type: 'bool' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        components: [
          { name: 'id', type: 'bytes32' },
          { name: 'buyer', type: 'address' },
          { name: 'seller', type: 'address' },
          { name: 'valueAggregate', type: 'uint256' },
          { name: 'asset', type: 'address' },
          { name: 'timestamp', type: 'uint64' },
          { name: 'nonce', type: 'uint256' },
          { name: 'escrow', type: 'address' },
          { name: 'chainId', type: 'uint256' },
        ],
        name: 'voucher',
        type: 'tuple',
      },
      { name: 'signature', type: 'bytes' },
    ],
    name: 'isVoucherSignatureValid',
    outputs: [{ name: '', type: 'bool' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      { name: 'seller', type: 'address' },
      { name: 'asset', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    name: 'thaw',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      { name: 'seller', type: 'address' },
      { name: 'asset', type: 'address' },
    ],
    name: 'withdraw',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  // ---- events ----
  {
    anonymous: false,
    inputs: [
      { indexed: true, name: 'buyer', type: 'address' },
      { indexed: true, name: 'seller', type: 'address' },
      { indexed: true, name: 'asset', type: 'address' },
      { indexed: false, name: 'amount', type: 'uint256' },
      { indexed: false, name: 'nonce', type: 'bytes32' },
    ],
    name: 'DepositAuthorized',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [
      { indexed: true, name: 'buyer', type: 'address' },
      { indexed: true, name: 'seller', type: 'address' },
      { indexed: true, name: 'asset', type: 'address' },
      { indexed: false, name: 'amount', type: 'uint256' },
      { indexed: false, name: 'newBalance', type: 'uint256' },
    ],
    name: 'Deposited',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [
      { indexed: true, name: 'buyer', type: 'address' },
      { indexed: false, name: 'nonce', type: 'bytes32' },
      { indexed: false, name: 'accountsFlushed', type: 'uint256' },
    ],
    name: 'FlushAllAuthorized',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [
      { indexed: true, name: 'buyer', type: 'address' },
      { indexed: true, name: 'seller', type: 'address' },
      { indexed: true, name: 'asset', type: 'address' },
      { indexed: false, name: 'nonce', type: 'bytes32' },
      { indexed: false, name: 'thawing', type: 'bool' },
    ],
    name: 'FlushAuthorized',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [
      { indexed: true, name: 'buyer', type: 'address' },
      { indexed: true, name: 'seller', type: 'address' },
      { indexed: true, name: 'asset', type: 'address' },
      { indexed: false, name: 'amount', type: 'uint256' },
    ],
    name: 'ThawCancelled',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [
      { indexed: true, name: 'buyer', type: 'address' },
      { indexed: true, name: 'seller', type: 'address' },
      { indexed: true, name: 'asset', type: 'address' },
      { indexed: false, name: 'newThawingAmount', type: 'uint256' },
      { indexed: false, name: 'previousThawingAmount', type: 'uint256' },
      { indexed: false, name: 'newThawEndTime', type: 'uint256' },
      { indexed: false, name: 'previousThawEndTime', type: 'uint256' },
    ],
    name: 'ThawInitiated',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [
      { indexed: true, name: 'voucherId', type: 'bytes32' },
      { indexed: true, name: 'buyer', type: 'address' },
      { indexed: true, name: 'seller', type: 'address' },
      { indexed: false, name: 'asset', type: 'address' },
      { indexed: false, name: 'totalCollected', type: 'uint256' },
    ],
    name: 'VoucherAlreadyCollected',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [
      { indexed: true, name: 'voucherId', type: 'bytes32' },
      { indexed: true, name: 'buyer', type: 'address' },
      { indexed: true, name: 'seller', type: 'address' },
      { indexed: false, name: 'asset', type: 'address' },
      { indexed: false, name: 'amount', type: 'uint256' },
      { indexed: false, name: 'totalCollected', type: 'uint256' },
    ],
    name: 'VoucherCollected',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [
      { indexed: true, name: 'voucherId', type: 'bytes32' },
      { indexed: true, name: 'buyer', type: 'address' },
      { indexed: true, name: 'seller', type: 'address' },
      { indexed: false, name: 'asset', type: 'address' },
      { indexed: false, name: 'outstanding', type: 'uint256' },
      { indexed: false, name: 'alreadyCollected', type: 'uint256' },
    ],
    name: 'VoucherNoCollectableBalance',
    type: 'event',
  },
  {
    anonymous: false,
    inputs: [
      { indexed: true, name: 'buyer', type: 'address' },
      { indexed: true, name: 'seller', type: 'address' },
      { indexed: true, name: 'asset', type: 'address' },
      { indexed: false, name: 'amount', type: 'uint256' },
      { indexed: false, name: 'remainingBalance', type: 'uint256' },
    ],
    name: 'Withdrawn',
    type: 'event',
  },
  // ---- errors ----
  {
    inputs: [
      { name: 'expiry', type: 'uint64' },
      { name: 'currentTime', type: 'uint256' },
    ],
    name: 'AuthorizationExpired',
    type: 'error',
  },
  {
    inputs: [
      { name: 'available', type: 'uint256' },
      { name: 'requested', type: 'uint256' },
    ],
    name: 'InsufficientBalance',
    type: 'error',
  },
  { inputs: [{ name: 'provided', type: 'address' }], name: 'InvalidAddress', type: 'error' },
  { inputs: [{ name: 'provided', type: 'uint256' }], name: 'InvalidAmount', type: 'error' },
  { inputs: [{ name: 'provided', type: 'address' }], name: 'InvalidAsset', type: 'error' },
  { inputs: [], name: 'InvalidAuthorization', type: 'error' },
  {
    inputs: [
      { name: 'provided', type: 'uint256' },
      { name: 'expected', type: 'uint256' },
    ],
    name: 'InvalidChainId',
    type: 'error',
  },
  {
    inputs: [
      { name: 'provided', type: 'address' },
      { name: 'expected', type: 'address' },
    ],
    name: 'InvalidEscrow',
    type: 'error',
  },
  {
    inputs: [
      { name: 'voucherId', type: 'bytes32' },
      { name: 'buyer', type: 'address' },
    ],
    name: 'InvalidSignature',
    type: 'error',
  },
  {
    inputs: [
      { name: 'provided', type: 'uint256' },
      { name: 'maximum', type: 'uint256' },
    ],
    name: 'InvalidThawingPeriod',
    type: 'error',
  },
  {
    inputs: [
      { name: 'voucherIds', type: 'uint256' },
      { name: 'valueAggregates', type: 'uint256' },
    ],
    name: 'LengthMismatch',
    type: 'error',
  },
  { inputs: [], name: 'NoDepositsProvided', type: 'error' },
  {
    inputs: [
      { name: 'buyer', type: 'address' },
      { name: 'seller', type: 'address' },
      { name: 'asset', type: 'address' },
    ],
    name: 'NoThawingInProgress',
    type: 'error',
  },
  { inputs: [], name: 'NoVouchersProvided', type: 'error' },
  { inputs: [{ name: 'nonce', type: 'bytes32' }], name: 'NonceAlreadyUsed', type: 'error' },
  { inputs: [], name: 'Reentrancy', type: 'error' },
  {
    inputs: [
      { name: 'currentTime', type: 'uint256' },
      { name: 'thawEndTime', type: 'uint256' },
    ],
    name: 'ThawingPeriodNotCompleted',
    type: 'error',
  },
  { inputs: [{ name: 'asset', type: 'address' }], name: 'TokenTransferFailed', type: 'error' },
  // ---- constructor ----
  { inputs: [{ name: 'thawingPeriod', type: 'uint256' }], stateMutability: 'nonpayable', type: 'constructor' },
] as const
