/**
 * The error catalogue: every error the platform answers with, as a code, an HTTP status and a
 * message template. One renderer (http/plugins/error-handler.ts) turns them into
 * `{statusCode, code, error, message}`. docs/errors.md is checked against this table by a test.
 *
 * @example
 *   throw appError('not_found', { what: 'agent' })
 */

const catalogue = {
  // generic
  bad_request: { status: 400, message: '{detail}' },
  invalid_parameter: { status: 400, message: 'invalid value for {param}: {detail}' },
  unusable_parameter: { status: 422, message: 'the value of {param} cannot be used: {detail}' },
  payload_too_large: { status: 413, message: 'request body is larger than {limit} bytes' },
  unsupported_media_type: { status: 415, message: 'content type {type} is not supported; send application/json' },
  not_found: { status: 404, message: '{what} not found' },
  route_not_found: { status: 404, message: 'no route {method} {path}' },
  method_not_allowed: { status: 405, message: '{method} is not allowed here; allowed: {allow}' },
  conflict: { status: 409, message: '{detail}' },
  rate_limited: { status: 429, message: 'too many requests; retry after {retryAfter} s' },
  internal_error: { status: 500, message: 'internal error; the request id is {requestId}' },
  service_unavailable: { status: 503, message: '{detail}' },
  invalid_submission: { status: 400, message: 'the listing was refused: {detail}' },
  // auth
  missing_api_key: {
    status: 401,
    message: 'send a key as Authorization: Bearer <key>: an API key, or an agent key on /v1/agent',
  },
  invalid_api_key: { status: 401, message: 'the key is malformed, unknown or revoked' },
  facilitator_key_required: {
    status: 401,
    message:
      "the facilitator API takes a seller's API key: send Authorization: Bearer sk_… (create one on the dashboard or with POST /v1/api-keys)",
  },
  revoked_agent_key: {
    status: 401,
    message: 'this agent key was revoked: create a new one (tollgate keys create --agent <name>) and use that',
  },
  wrong_key_type: {
    status: 401,
    message: 'this is {keyType} ({keyPrefix}…): it authenticates {belongsTo}; {expected}',
  },
  wrong_deployment_key: {
    status: 401,
    message: 'this key belongs to the {keyDeployment} deployment; this is {deployment}',
  },
  operator_only: { status: 401, message: 'operator credentials required' },
  invalid_credentials: { status: 401, message: 'the email or password is wrong' },
  login_throttled: {
    status: 429,
    message:
      'too many login attempts for this email from browsers that have not logged in to it before; retry after {retryAfter} s, or log in from a browser that has',
  },
  cross_origin_request: {
    status: 403,
    message:
      'this request comes from {from}, not from the dashboard ({dashboard}): a request that logs in or changes something with the dashboard session cookie is taken only from the dashboard itself; from a script or another site, send an API key (Authorization: Bearer sk_…) instead',
  },
  // accounts and publishing (issue 7)
  idempotency_key_reused: {
    status: 409,
    message: 'this Idempotency-Key was used with a different request; use a new key',
  },
  idempotency_in_progress: {
    status: 409,
    message: 'a request with this Idempotency-Key is still in progress; retry later',
  },
  idempotency_answer_unreadable: {
    status: 409,
    message:
      'this Idempotency-Key was already used and its stored answer can no longer be read (the encryption key was rotated); the request was carried out: list the resources to find its result, and use a new key for a new request',
  },
  agent_name_taken: {
    status: 409,
    message: 'you already have an agent named "{name}" ({address}): use that one, or give this one another name',
  },
  upstream_not_allowed: { status: 400, message: 'the upstream URL is not allowed: {detail}' },
  faucet_unavailable: {
    status: 403,
    message: 'the faucet exists only on the sandbox deployment with the embedded dev chain',
  },
  signup_closed: {
    status: 403,
    message:
      'sign-up is closed on this deployment: an operator creates accounts (tollgate users create), or sets TOLLGATE_SIGNUP=open',
  },
  // money out
  withdrawal_exceeds_available: {
    status: 409,
    message:
      'the wallet can withdraw {available} now (its balance {balance} minus {unsettled} not settled yet{fee}); {amount} were asked',
  },
  // payments
  payment_not_recorded: { status: 503, message: 'the payment could not be recorded; nothing was charged, retry later' },
  handler_failed: { status: 502, message: 'the endpoint failed: {detail}; nothing was charged' },
  handler_timeout: { status: 504, message: 'the endpoint did not answer within {timeoutMs} ms; nothing was charged' },
  upstream_failed: { status: 502, message: 'the upstream failed: {detail}; nothing was charged' },
  // x402 payment-identifier (safe retries): 409 Conflict, as the extension names it
  payment_identifier_conflict: {
    status: 409,
    message:
      'payment-identifier {id} was first used for a different request or payment (409 Conflict); nothing was charged: use a new id for a new request',
  },
  payment_identifier_in_progress: {
    status: 409,
    message:
      'the call paid under payment-identifier {id} is still running; retry shortly with the same id and request; nothing more is charged',
  },
  payment_identifier_served: {
    status: 409,
    message:
      'the call paid under payment-identifier {id} was already served and charged, and its answer is not kept ({why}); its receipt: payment {paymentId}; nothing more is charged',
  },
  upstream_not_configured: { status: 503, message: '{detail}' },
  answer_too_large: {
    status: 502,
    message:
      "the endpoint's answer is larger than {limit} bytes, the most an MCP tool result carries here; the call was served and paid (see the receipt); call it over HTTP at {url}",
  },
  seller_not_allowed: { status: 403, message: 'the agent may not pay this seller: {detail}' },
  channel_refund_refused: { status: 409, message: 'the channel was not refunded: {detail}' },
  channel_withdraw_needs_gas: {
    status: 409,
    message:
      'the agent wallet holds {balance} ETH and {call} needs up to {needed} ETH of gas, paid from the agent wallet: send it ETH, or take the cooperative refund instead (tollgate channels refund; POST /v1/agent/channels/:id/refund), which returns what was not charged at once and needs no gas',
  },
  channel_withdraw_refused: { status: 409, message: 'the channel withdrawal was not sent: {detail}' },
  spend_cap_exceeded: { status: 403, message: 'the {cap} spend cap would be exceeded: {detail}' },
  insufficient_balance: {
    status: 402,
    message:
      'the agent wallet can spend {balance} USDC now (its balance minus payments signed but not yet settled); {needed} USDC are needed',
  },
  unsupported_requirements: { status: 422, message: 'no payment requirement can be paid: {detail}' },
  requirement_mismatch: {
    status: 409,
    message:
      "the challenge does not match what this platform asks for {resource}: {detail}; fetch the endpoint's 402 challenge again and pass it unchanged",
  },
  // human approval (issue 38)
  approval_pending: {
    status: 409,
    message:
      "approval {id} still waits for the owner's decision: poll GET /v1/agent/approvals/{id} and retry once it is approved",
  },
  approval_denied: { status: 403, message: 'the owner denied approval {id}: this payment is not signed' },
  approval_expired: {
    status: 409,
    message: 'approval {id} expired ({detail}): pay again without approval_id to ask the owner anew',
  },
  approval_mismatch: {
    status: 409,
    message:
      'approval {id} was given for other terms: {detail}; retry with exactly the approved url, payee and amount, or pay without approval_id to ask anew',
  },
  approval_decided: { status: 409, message: 'approval {id} was already {status}; a decision is final' },
  approval_link_invalid: {
    status: 403,
    message:
      'this approval link is not valid (altered, for another approval, or past its expiry): decide in the dashboard or with tollgate approvals',
  },
} as const satisfies Record<string, { status: number; message: string }>

export type ErrorCode = keyof typeof catalogue
export const errorCatalogue: Readonly<Record<ErrorCode, { status: number; message: string }>> = catalogue

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly statusCode: number,
    message: string,
    /** extra machine-readable fields merged into the body (e.g. {param}) */
    readonly details?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message)
    this.name = 'AppError'
  }
}

/** Make a catalogue error; `vars` fill the `{name}` placeholders of its message. */
export function appError(
  code: ErrorCode,
  vars: Record<string, string | number> = {},
  extra?: { details?: Record<string, unknown>; headers?: Record<string, string> },
): AppError {
  const entry = catalogue[code]
  const message = entry.message.replace(/\{(\w+)\}/g, (_, k: string) => (k in vars ? String(vars[k]) : `{${k}}`))
  return new AppError(code, entry.status, message, extra?.details, extra?.headers)
}

/** The standard reason phrase for a status, for the `error` field. */
export function statusText(status: number): string {
  return STATUS_TEXT[status] ?? (status >= 500 ? 'Internal Server Error' : 'Error')
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
}
