/**
 * How `tollgate mcp` answers a tool call: what a paid result cost (a text item a model reads, and
 * `_meta["tollgate/cost"]` for a program), and every failure as a tool error (`isError`) that
 * says what happened and what to do, so a host's model can act on it and the server never stops.
 */
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { PaidCallFailedError, PaymentRefusedError } from '../../client/errors.js'
import type { PaymentInfo, SignInInfo } from '../../client/wrap-fetch.js'
import { formatUsdc } from '../../x402/usdc-amount.js'
import { ApiError, redactSecrets, UnreachableError, UsageError } from '../errors.js'
import { nextStep } from '../next-step.js'
import { refusalText } from '../refusal-text.js'

/** What a call cost, in words: paid (how much, to whom, which payment), not charged, signed in, or free. */
export function costLine(p: PaymentInfo | undefined, signedIn?: SignInInfo): string {
  if (signedIn)
    return `cost: nothing (signed in as ${signedIn.payer} with the paid access to ${signedIn.uri}: x402 sign-in-with-x)`
  if (!p) return 'cost: nothing (the endpoint asked for no payment)'
  const id = p.agentPaymentId ?? '-'
  const upTo = p.maxAmount === undefined ? '' : ` (usage-based: up to ${formatUsdc(p.maxAmount)} USDC)`
  // batch-settlement: a voucher on the agent's channel, claimed later in batches (no transaction per call)
  const settles =
    p.scheme === 'batch-settlement'
      ? `a voucher on a batch-settlement channel, claimed later in batches${p.deposit !== undefined ? `; ${formatUsdc(p.deposit)} USDC deposited into the channel first` : ''}`
      : `transaction ${p.transaction ?? 'pending, it settles asynchronously'}`
  if (p.success)
    return `cost: ${formatUsdc(p.amount)} USDC${upTo}, paid to ${p.payTo} from the agent wallet ${p.payer} (payment ${id}; ${settles})`
  return `cost: nothing charged: the call failed, so the signed payment of ${formatUsdc(p.amount)} USDC to ${p.payTo} is not settled (payment ${id})`
}

/** The same for a program: `_meta["tollgate/cost"]`. */
export function costMeta(p: PaymentInfo | undefined, signedIn?: SignInInfo): Record<string, unknown> {
  if (signedIn)
    return { charged: false, amount: '0', amount_usdc: '0', signed_in: { payer: signedIn.payer, uri: signedIn.uri } }
  if (!p) return { charged: false, amount: '0', amount_usdc: '0' }
  return {
    charged: p.success,
    amount: p.success ? p.amount : '0',
    amount_usdc: p.success ? formatUsdc(p.amount) : '0',
    signed_amount: p.maxAmount ?? p.amount,
    scheme: p.scheme,
    pay_to: p.payTo,
    payer: p.payer,
    network: p.network,
    payment_id: p.agentPaymentId ?? null,
    transaction: p.transaction ?? null,
  }
}

/** `result` with what it cost appended to its content and in its `_meta`. */
export function withCost(result: CallToolResult, p: PaymentInfo | undefined, signedIn?: SignInInfo): CallToolResult {
  return {
    ...result,
    content: [...(result.content ?? []), { type: 'text', text: costLine(p, signedIn) }],
    _meta: { ...result._meta, 'tollgate/cost': costMeta(p, signedIn) },
  }
}

/** A tool error with `text` for the model and `error` (code, message, to_fix, details) for a program. */
export function toolError(
  code: string,
  message: string,
  opts: { toFix?: string; details?: Record<string, unknown> } = {},
): CallToolResult {
  const text = redactSecrets(`${message}${opts.toFix ? `\nto fix: ${opts.toFix}` : ''}`)
  const error = {
    code,
    message: redactSecrets(message),
    ...(opts.toFix ? { to_fix: redactSecrets(opts.toFix) } : {}),
    ...(opts.details && Object.keys(opts.details).length ? { details: opts.details } : {}),
  }
  return { isError: true, content: [{ type: 'text', text }], structuredContent: { error } }
}

/** Where the agent key came from, for the "to fix" of a refusal. */
export interface KeySource {
  agentKeySource: string
  apiUrl: string
  apiUrlSource: string
}

/** Anything a tool threw, as a tool error; refusals (caps, allowlist, balance) say that nothing was paid. */
export function errorResult(err: unknown, s: KeySource): CallToolResult {
  if (err instanceof PaymentRefusedError) {
    const { headroom: _h, ...details } = err.details
    if (err.status !== undefined && err.status >= 500 && err.response === undefined)
      return toolError(
        err.code,
        `the platform could not make the payment (${err.code}, HTTP ${err.status}): ${err.message}. Nothing was paid.`,
      )
    const wrongApi = err.code === 'not_found' || err.code === 'platform_error'
    const toFix = wrongApi
      ? `check that ${s.apiUrl} is the Tollgate API (${s.apiUrlSource}): it has no agent payment route`
      : nextStep(err.code, 'agent_key', s.agentKeySource, err.details)
    return toolError(
      err.code,
      `payment refused (${err.code}): ${refusalText(err.code, err.message, err.details)}. Nothing was paid.`,
      { toFix, details },
    )
  }
  if (err instanceof PaidCallFailedError) {
    const p = err.payment
    const why = err.cause instanceof Error ? err.cause.message : String(err.cause)
    return toolError(
      'paid_call_failed',
      `${why}, after a payment of ${formatUsdc(p.amount)} USDC to ${p.payTo} was signed: the seller may have received it and may still settle it`,
      {
        toFix: `look it up with tollgate payments status ${p.agentPaymentId ?? '<id>'} before calling again`,
        details: { payment_id: p.agentPaymentId ?? null, amount: p.amount, pay_to: p.payTo },
      },
    )
  }
  if (err instanceof ApiError)
    return toolError(err.code, `${err.request}: HTTP ${err.status} ${err.code}: ${err.message}`, {
      toFix: nextStep(err.code, err.credential, err.source, err.details),
      details: err.details,
    })
  if (err instanceof UsageError) return toolError('usage', err.message, { toFix: err.toFix })
  if (err instanceof UnreachableError) return toolError('unreachable', err.message)
  if (err instanceof McpError)
    return toolError('mcp_error', `the MCP server answered with an error (${err.code}): ${err.message}`)
  return toolError('error', `error: ${err instanceof Error ? err.message : String(err)}`)
}
