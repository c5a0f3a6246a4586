/**
 * `callPaidTool`: an MCP `tools/call` that pays its x402 challenge (x402 specs/transports-v2/mcp.md).
 * The unpaid call's PaymentRequired (a tool result with `isError`, in `structuredContent` or as
 * JSON in `content[0].text`) is signed by the payer, and the call is made once more with the
 * PaymentPayload in `params._meta["x402/payment"]`. One payment per call at most. The payer decides
 * the scheme: one made with `upto: true` pays a usage-based `upto` requirement where offered
 * (exact elsewhere), and the result's `payment.amount` is the charge the receipt states.
 *
 * Paid access (x402 `sign-in-with-x`, as wrapFetch's `signIn`): where the challenge declares it,
 * bound to the origin of `serverUrl`, and the resource was paid for before in `paidAccess` (or
 * `signIn: 'always'`), the call is made once more with the payer's proof in
 * `params._meta["sign-in-with-x"]` (Tollgate's binding: the JSON object the SIGN-IN-WITH-X header
 * carries as base64) instead of a payment; a refused sign-in is paid as usual.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { ChallengeError, parseChallenge, type OfferedChallenge } from './challenge.js'
import { PaidCallFailedError, PaymentRefusedError } from './errors.js'
import type { Payer, PaymentInfo, SignInInfo, SignInMode, Signed } from './wrap-fetch.js'
import { newPaymentId } from './sign-exact.js'
import { signInOffer } from './sign-in.js'

/** `params._meta` key of the PaymentPayload */
export const PAYMENT_META_KEY = 'x402/payment'
/** result `_meta` key of the settlement response */
export const PAYMENT_RESPONSE_META_KEY = 'x402/payment-response'
/** `params._meta` key of a sign-in-with-x proof (Tollgate's binding; the spec names only the HTTP header) */
export const SIGN_IN_META_KEY = 'sign-in-with-x'

export interface ToolCall {
  name: string
  arguments?: Record<string, unknown>
  _meta?: Record<string, unknown>
}

/** The tool's result and, when it was paid for, the payment (`success`: kept by the seller); `signedIn` when served on a sign-in (nothing paid). */
export interface PaidToolResult {
  result: CallToolResult
  payment?: PaymentInfo
  signedIn?: SignInInfo
}

export interface PaidToolOptions {
  signal?: AbortSignal
  /** the MCP server's URL: a sign-in is signed only for a challenge bound to its origin; absent: never signed in */
  serverUrl?: string
  /** x402 `sign-in-with-x`, as wrapFetch's: `'remembered'` (default: resources in `paidAccess`), `'always'`, `'never'` */
  signIn?: SignInMode
  /** the resources paid for where sign-in was offered, kept across calls (a payment adds, a refused sign-in removes) */
  paidAccess?: Set<string>
}

/**
 * @example
 *   const paidAccess = new Set<string>()
 *   const { result, payment, signedIn } = await callPaidTool(client, platformPayer(fetch, { baseUrl, agentKey }), { name: 'echo', arguments: { msg: 'hi' } }, { serverUrl, paidAccess })
 */
export async function callPaidTool(
  client: Pick<Client, 'callTool'>,
  payer: Payer,
  call: ToolCall,
  opts: PaidToolOptions = {},
): Promise<PaidToolResult> {
  const first = (await client.callTool(call, undefined, { signal: opts.signal })) as CallToolResult
  const required = paymentRequiredOf(first)
  if (!required) return { result: first }
  const resource = (required.resource as { url?: unknown } | undefined)?.url
  if (typeof resource !== 'string' || !URL.canParse(resource))
    throw new PaymentRefusedError(
      'invalid_challenge',
      `tool "${call.name}" asked for a payment without a resource URL`,
      {},
      402,
    )
  const ch = { offered: offeredOf(required), raw: required }
  const request = () => new Request(resource, { method: 'POST', signal: opts.signal })
  const mode = opts.signIn ?? 'remembered'
  const offer = mode === 'never' || !opts.serverUrl ? undefined : signInOffer(ch.offered, opts.serverUrl)
  if (offer && (mode === 'always' || opts.paidAccess?.has(offer.uri))) {
    const proof = await payer.signIn(offer, ch, request())
    if (proof) {
      const proofJson: unknown = JSON.parse(Buffer.from(proof.value, 'base64').toString('utf8'))
      const r = (await client.callTool(
        { ...call, _meta: { ...call._meta, [SIGN_IN_META_KEY]: proofJson } },
        undefined,
        {
          signal: opts.signal,
        },
      )) as CallToolResult
      if (!paymentRequiredOf(r)) return { result: r, signedIn: { payer: proof.payer, uri: offer.uri } }
      // refused (the access ran out, or the wallet never paid here): pay as usual
      opts.paidAccess?.delete(offer.uri)
    }
  }
  const signed = await payer.sign(ch, request(), newPaymentId())
  const payload = payloadOf(signed)
  let second: CallToolResult
  try {
    second = (await client.callTool({ ...call, _meta: { ...call._meta, [PAYMENT_META_KEY]: payload } }, undefined, {
      signal: opts.signal,
    })) as CallToolResult
  } catch (err) {
    // the seller may have received the payment: report it, and name it for a look-up
    await payer.report?.(signed, 'error', undefined)
    throw new PaidCallFailedError(paymentInfo(signed, false, undefined), err)
  }
  const refused = paymentRequiredOf(second)
  if (refused) {
    await payer.report?.(signed, 'rejected', undefined)
    const reason = typeof refused.error === 'string' ? refused.error : 'unknown'
    throw new PaymentRefusedError('payment_rejected', `the seller refused the payment: ${reason}`, { reason }, 402)
  }
  const receipt = second._meta?.[PAYMENT_RESPONSE_META_KEY] as Record<string, unknown> | undefined
  // a tool error without a receipt is the endpoint's own failure: its payment was voided
  const kept = receipt?.success === true
  if (offer && kept) opts.paidAccess?.add(offer.uri)
  await payer.report?.(signed, kept ? 'accepted' : 'error', receipt)
  return { result: second, payment: paymentInfo(signed, kept, receipt) }
}

/** The challenge as the payers read it (the platform's is sent `raw` when it cannot be read here). */
export function offeredOf(required: Record<string, unknown>): OfferedChallenge[] {
  try {
    return [{ parsed: parseChallenge(required), raw: required }]
  } catch (err) {
    if (err instanceof ChallengeError) return []
    throw err
  }
}

/** The PaymentRequired of a tool result: `structuredContent`, else the JSON of `content[0].text`. */
export function paymentRequiredOf(r: CallToolResult): Record<string, unknown> | undefined {
  if (!r.isError) return undefined
  const isRequired = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' &&
    v !== null &&
    (v as { x402Version?: unknown }).x402Version !== undefined &&
    Array.isArray((v as { accepts?: unknown }).accepts)
  if (isRequired(r.structuredContent)) return r.structuredContent
  const first = r.content?.[0]
  if (first?.type !== 'text') return undefined
  try {
    const v: unknown = JSON.parse(first.text)
    return isRequired(v) ? v : undefined
  } catch {
    return undefined
  }
}

/** The signed v2 PaymentPayload as the JSON value MCP carries (the header's base64 undone). */
function payloadOf(s: Signed): unknown {
  if (s.header !== 'PAYMENT-SIGNATURE')
    throw new PaymentRefusedError(
      'unsupported_requirements',
      'the payer signed an x402 v1 payment; MCP carries v2 only',
    )
  return JSON.parse(Buffer.from(s.value, 'base64').toString('utf8'))
}

export function paymentInfo(s: Signed, success: boolean, receipt: Record<string, unknown> | undefined): PaymentInfo {
  const str = (k: string) =>
    typeof receipt?.[k] === 'string' && receipt[k] !== '' ? (receipt[k] as string) : undefined
  return {
    success,
    ...(str('transaction') ? { transaction: str('transaction') } : {}),
    network: str('network') ?? s.network,
    payer: str('payer') ?? s.payer,
    paymentId: str('paymentId'),
    agentPaymentId: s.agentPaymentId,
    nonce: s.nonce,
    // upto: the charge the receipt states (the maximum signed when it states none)
    amount: s.scheme === 'upto' && /^[0-9]{1,40}$/.test(str('amount') ?? '') ? str('amount')! : s.amount,
    ...(s.scheme === 'upto' ? { maxAmount: s.amount } : {}),
    payTo: s.payTo,
    header: s.header,
    scheme: s.scheme,
    ...(s.paymentIdentifier ? { paymentIdentifier: s.paymentIdentifier } : {}),
  }
}
