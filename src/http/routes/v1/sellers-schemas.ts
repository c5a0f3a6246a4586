/** JSON Schemas of the seller publishing routes (sellers.ts): params, and the bodies they share. */
import { atomic } from './schemas.js'

export const ns = { type: 'object', properties: { namespace: { type: 'string' } } } as const
export const svc = {
  type: 'object',
  properties: { namespace: { type: 'string' }, service: { type: 'string' } },
} as const
export const ep = {
  type: 'object',
  properties: { namespace: { type: 'string' }, service: { type: 'string' }, slug: { type: 'string' } },
} as const
const upstream = {
  type: 'object',
  additionalProperties: false,
  properties: {
    forward_headers: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'added to every forwarded request (e.g. your upstream API key); stored encrypted, never shown again',
    },
    required_headers: { type: 'array', items: { type: 'string' }, description: 'headers a caller must send' },
    timeout_ms: { type: 'integer', minimum: 100, maximum: 60000 },
    rate_limit: {
      anyOf: [
        { type: 'null' },
        { type: 'object', properties: { requests: { type: 'integer' }, per_seconds: { type: 'integer' } } },
      ],
    },
  },
} as const
const accessMinutes = {
  type: ['integer', 'null'],
  minimum: 1,
  maximum: 525600,
  description:
    'x402 sign-in-with-x: a paid call gives its payer this many minutes of access, during which it signs in with the same wallet instead of paying again; null (default): off',
} as const
const endpointProps = {
  methods: { type: 'array', items: { type: 'string' } },
  price: atomic,
  description: { type: 'string' },
  mime_type: { type: 'string' },
  input_schema: { anyOf: [{ type: 'object' }, { type: 'null' }] },
  settlement_mode: { type: 'string', enum: ['async', 'sync'] },
  schemes: {
    type: 'array',
    items: { type: 'string' },
    maxItems: 8,
    description: 'payment schemes offered in the v2 challenge besides exact, which is always offered',
  },
  handler: {
    anyOf: [{ type: 'string' }, { type: 'null' }],
    description: 'a hosted handler name; or give upstream_url',
  },
  upstream_url: {
    anyOf: [{ type: 'string' }, { type: 'null' }],
    description: 'your origin; Tollgate forwards paid calls with an HMAC signature (X-Tollgate-Signature)',
  },
  upstream,
  access_minutes: accessMinutes,
  enabled: { type: 'boolean' },
} as const

// how a service appears in the marketplace (its platform entry)
const listingProps = {
  category: { type: 'string', description: 'marketplace category, e.g. Crypto (default Other)' },
  tags: { type: ['array', 'null'], items: { type: 'string' }, description: 'marketplace search tags (at most 20)' },
  website_url: { type: ['string', 'null'] },
  docs_url: { type: ['string', 'null'] },
  logo_url: { type: ['string', 'null'] },
} as const

export const mcpUpstreamBody = {
  type: 'object',
  required: ['url'],
  additionalProperties: false,
  properties: {
    url: {
      type: 'string',
      description:
        'your MCP server (Streamable HTTP); Tollgate forwards paid tool calls with an HMAC signature (X-Tollgate-Signature) on every request',
    },
    tool_prices: {
      type: 'object',
      additionalProperties: atomic,
      description: 'tool name → price in atomic units',
    },
    default_price: {
      anyOf: [{ type: 'null' }, atomic],
      description: 'the price of a tool not in tool_prices; without it such tools are not published',
    },
    upstream,
  },
} as const

export const a2aUpstreamBody = {
  type: 'object',
  required: ['card_url'],
  additionalProperties: false,
  properties: {
    card_url: {
      type: 'string',
      description:
        "your agent's Agent Card URL (A2A v1.0 or v0.3, JSON-RPC); Tollgate sends paid messages with an HMAC signature (X-Tollgate-Signature) on every request",
    },
    skill_prices: {
      type: 'object',
      additionalProperties: atomic,
      description: 'skill id → price in atomic units',
    },
    default_price: {
      anyOf: [{ type: 'null' }, atomic],
      description: 'the price of a skill not in skill_prices; without it such skills are not published',
    },
    upstream,
  },
} as const

export const createServiceBody = {
  type: 'object',
  required: ['name', 'pay_to'],
  properties: {
    name: { type: 'string' },
    display_name: { type: 'string' },
    description: { type: 'string' },
    pay_to: { type: 'string' },
    access_minutes: accessMinutes,
    ...listingProps,
  },
} as const

export const updateServiceBody = {
  type: 'object',
  properties: {
    display_name: { type: 'string' },
    description: { type: ['string', 'null'] },
    pay_to: { type: 'string' },
    enabled: { type: 'boolean' },
    access_minutes: accessMinutes,
    ...listingProps,
  },
} as const

export const createEndpointBody = {
  type: 'object',
  required: ['slug', 'price'],
  properties: { slug: { type: 'string' }, ...endpointProps },
} as const

export const updateEndpointBody = { type: 'object', properties: endpointProps } as const
