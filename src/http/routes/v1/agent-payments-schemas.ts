/** JSON Schemas of the agent payment routes (agent-payments.ts): an id parameter and the request bodies. */

export const idParam = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', maxLength: 64 } },
} as const

export const payBody = {
  type: 'object',
  required: ['url', 'challenge'],
  additionalProperties: false,
  properties: {
    url: { type: 'string', maxLength: 2048 },
    method: { type: 'string', maxLength: 10 },
    challenge: {
      description: 'the v1 402 body object, or the v2 PAYMENT-REQUIRED header value',
      anyOf: [{ type: 'object' }, { type: 'string', maxLength: 32768 }],
    },
    dry_run: { type: 'boolean' },
    payment_identifier: {
      type: 'string',
      description:
        'an x402 `payment-identifier` (16-128 of a-z A-Z 0-9 - _) for safe retries: put in a v2 payment when the challenge declares the extension, and answered back as `payment_identifier`; retry a lost answer with the same header',
    },
    deposit_amount: {
      description:
        'deferred: what to deposit from the agent wallet into the escrow when its balance for the seller is short; batch-settlement: into the channel when it cannot cover the call (at most spend_caps.channel_deposit). Atomic USDC, at least the price; default 100 x the price',
      type: 'string',
      maxLength: 20,
    },
    upto: {
      type: 'boolean',
      description:
        "usage-based prices: prefer the seller's `upto` requirement (its maximum is reserved against the caps, the actual charge counted once the proxy recorded it); without it upto is paid only where nothing else can be",
    },
    batch_settlement: {
      type: 'boolean',
      description:
        "default true: prefer `batch-settlement` where this platform's own endpoint offers it (never a seller elsewhere): a channel from the agent wallet (one deposit, at most spend_caps.channel_deposit, default 100 x the price), then one cumulative voucher per call, the caps counting each call's price; `false` opts out: batch-settlement is then paid only where nothing else can be",
    },
    approval_id: {
      type: 'string',
      maxLength: 64,
      description:
        'the approval id of a 202 answer, once the owner approved it: the payment is signed once on exactly the approved url, payee and amount (a second retry answers the same signature)',
    },
  },
} as const

export const signInBody = {
  type: 'object',
  required: ['url', 'challenge'],
  additionalProperties: false,
  properties: {
    url: { type: 'string', maxLength: 2048 },
    method: { type: 'string', maxLength: 10 },
    challenge: {
      description: 'the v2 PAYMENT-REQUIRED header value (or its decoded object)',
      anyOf: [{ type: 'object' }, { type: 'string', maxLength: 32768 }],
    },
  },
} as const

export const outcomeBody = {
  type: 'object',
  required: ['status'],
  additionalProperties: false,
  properties: {
    status: { type: 'string', enum: ['accepted', 'rejected', 'error'] },
    payment_response: { type: ['object', 'null'] },
  },
} as const

export const escrowFlushBody = {
  type: 'object',
  required: ['seller'],
  additionalProperties: false,
  properties: { seller: { type: 'string', maxLength: 42 } },
} as const

export const escrowDepositBody = {
  type: 'object',
  required: ['seller', 'amount'],
  additionalProperties: false,
  properties: {
    seller: { type: 'string', maxLength: 42 },
    amount: { type: 'string', maxLength: 20, description: 'atomic USDC' },
  },
} as const
