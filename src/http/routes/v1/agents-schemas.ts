/** JSON Schemas of the agent routes (agents.ts): an agent's settings and the bodies that carry them. */
import { atomic, nullableAtomic } from './schemas.js'

export const capsSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'spend caps in atomic USDC units; null removes a cap',
  properties: {
    per_transaction: nullableAtomic,
    daily: nullableAtomic,
    monthly: nullableAtomic,
    channel_deposit: {
      ...nullableAtomic,
      description:
        'batch-settlement: the most the platform deposits from the agent wallet into a channel at a time; null = 100 x the price',
    },
  },
} as const
export const topUpSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'refill from the user funding wallet when the agent USDC balance falls below threshold',
  properties: {
    enabled: { type: 'boolean' },
    threshold: atomic,
    amount: atomic,
    funding_source: { type: 'string', enum: ['funding_wallet'] },
  },
} as const
export const approvalPolicySchema = {
  type: 'object',
  additionalProperties: false,
  description:
    "when a payment waits for the owner's approval (202 with an approval id instead of a signature); null removes a rule",
  properties: {
    above: { ...nullableAtomic, description: 'atomic USDC: a payment above this waits' },
    new_seller_calls_per_minute: {
      type: ['integer', 'null'],
      minimum: 0,
      description: 'more calls a minute than this to a seller first paid less than a day ago wait',
    },
  },
} as const
const agentProps = {
  name: { type: 'string', maxLength: 100 },
  spend_caps: capsSchema,
  top_up: topUpSchema,
  approval_policy: approvalPolicySchema,
} as const
export const createAgentBody = { type: 'object', required: ['name'], properties: agentProps } as const
export const updateAgentBody = { type: 'object', properties: agentProps } as const
