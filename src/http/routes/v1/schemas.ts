/** JSON Schemas shared by the /v1 routes, for validation and the OpenAPI document. */

/**
 * An amount in atomic units (USDC has 6 decimals: "1000000" = 1 USDC) as a string of digits. No
 * `pattern` here: Ajv's "must match pattern" would be the whole message, so the services check it and
 * say what to send instead (a USDC amount such as "0.002" is answered with its "2000" atomic units).
 */
export const atomic = {
  type: 'string',
  description: 'atomic units as a string of digits (USDC has 6 decimals: "1000000" = 1 USDC, "2000" = 0.002 USDC)',
  examples: ['1000000'],
} as const
// null first: Fastify's Ajv coerces types, and a null tried against the string schema first would
// become "" (the pattern that used to refuse "" is gone, see above)
export const nullableAtomic = { anyOf: [{ type: 'null' }, atomic] } as const
export const addressParam = {
  type: 'object',
  required: ['address'],
  properties: { address: { type: 'string', description: 'the agent wallet address (0x…)' } },
} as const
export const idempotencyHeader = {
  type: 'object',
  properties: {
    'idempotency-key': {
      type: 'string',
      maxLength: 255,
      description: 'retry-safe creation: the same key and body return the first answer for 24 h',
    },
  },
} as const

/** A response documented by description only: the body passes through unchanged (no serializer filtering). */
export function ok(description: string, example?: Record<string, unknown>) {
  return {
    type: 'object',
    additionalProperties: true,
    description,
    ...(example ? { examples: [example] } : {}),
  } as const
}
export const noContent = { type: 'null', description: 'done; no body' } as const
export const errorResponse = {
  type: 'object',
  additionalProperties: true,
  description: 'error: {statusCode, code, error, message}',
  properties: {
    statusCode: { type: 'integer' },
    code: { type: 'string' },
    error: { type: 'string' },
    message: { type: 'string' },
  },
} as const
export const authErrors = { 401: errorResponse, 404: errorResponse, 429: errorResponse } as const
export const list = (description: string) => ok(`{object: "list", data: [...]}: ${description}`)
