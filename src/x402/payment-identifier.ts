/**
 * The x402 v2 `payment-identifier` extension (specs/extensions/payment_identifier.md; the names and
 * rules of `@x402/extensions/payment-identifier`): the server declares it in the 402's
 * `extensions`, a client echoes the declaration in its PaymentPayload's `extensions` and adds
 * `info.id`, an idempotency key of 16–128 characters from `[a-zA-Z0-9_-]`. Same id and same
 * request: the first outcome again; same id, different request: 409 Conflict.
 */

/** The extension's key in `extensions`. */
export const PAYMENT_IDENTIFIER = 'payment-identifier'
export const PAYMENT_ID_MIN_LENGTH = 16
export const PAYMENT_ID_MAX_LENGTH = 128
const PAYMENT_ID_RE = /^[a-zA-Z0-9_-]+$/

/** Where the id travels, as named in a refusal. */
export const PAYMENT_ID_FIELD = `extensions.${PAYMENT_IDENTIFIER}.info.id`

const SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    required: { type: 'boolean' },
    id: {
      type: 'string',
      minLength: PAYMENT_ID_MIN_LENGTH,
      maxLength: PAYMENT_ID_MAX_LENGTH,
      pattern: '^[a-zA-Z0-9_-]+$',
    },
  },
  required: ['required'],
} as const

/** The declaration a 402 carries under `extensions['payment-identifier']` (an id is optional). */
export function paymentIdentifierDeclaration(): { info: { required: boolean }; schema: typeof SCHEMA } {
  return { info: { required: false }, schema: SCHEMA }
}

export function isValidPaymentId(id: unknown): id is string {
  return (
    typeof id === 'string' &&
    id.length >= PAYMENT_ID_MIN_LENGTH &&
    id.length <= PAYMENT_ID_MAX_LENGTH &&
    PAYMENT_ID_RE.test(id)
  )
}

/**
 * The id a PaymentPayload's `extensions` carry: undefined when there is none (no extension, or the
 * declaration echoed without `info.id`), a problem when one is sent that breaks the format.
 *
 * @example
 *   const r = readPaymentIdentifier(envelope.extensions)
 *   if (!r.ok) return badRequest(PAYMENT_ID_FIELD, r.detail)
 */
export function readPaymentIdentifier(
  extensions: Record<string, unknown> | undefined,
): { ok: true; id: string | undefined } | { ok: false; detail: string } {
  const ext = extensions?.[PAYMENT_IDENTIFIER]
  if (ext === undefined || ext === null) return { ok: true, id: undefined }
  if (typeof ext !== 'object' || Array.isArray(ext))
    return { ok: false, detail: `extensions.${PAYMENT_IDENTIFIER} must be an object` }
  const info = (ext as { info?: unknown }).info
  if (info === undefined || info === null) return { ok: true, id: undefined }
  if (typeof info !== 'object' || Array.isArray(info))
    return { ok: false, detail: `extensions.${PAYMENT_IDENTIFIER}.info must be an object` }
  const id = (info as { id?: unknown }).id
  if (id === undefined) return { ok: true, id: undefined }
  if (!isValidPaymentId(id)) {
    return {
      ok: false,
      detail: `expected ${PAYMENT_ID_MIN_LENGTH}-${PAYMENT_ID_MAX_LENGTH} characters of letters, digits, '-' and '_' (e.g. pay_ and a UUID without dashes)`,
    }
  }
  return { ok: true, id }
}
