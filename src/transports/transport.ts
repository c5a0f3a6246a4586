/**
 * The transport seam: how a challenge, a payment and a receipt travel between buyer and proxy.
 * The paid call's stages (src/proxy/paid-call/) never see the carrier; a transport turns what it
 * receives into a `CallRequest` and renders the `CallResult`:
 *
 * | | HTTP (`http.ts`) | MCP (`mcp.ts`) |
 * |---|---|---|
 * | challenge | 402 + v1 JSON body + v2 `PAYMENT-REQUIRED` header | tool result, `isError`, PaymentRequired in `structuredContent` |
 * | payment | `PAYMENT-SIGNATURE` (v2) / `X-PAYMENT` (v1) header | `params._meta["x402/payment"]` |
 * | receipt | `PAYMENT-RESPONSE` / `X-PAYMENT-RESPONSE` header | `_meta["x402/payment-response"]` |
 * | sign-in proof | `SIGN-IN-WITH-X` header | `params._meta["sign-in-with-x"]` (Tollgate's binding) |
 *
 * docs/architecture.md ("Schemes and transports") states the contract.
 */
import type { CallRequest, CallResult } from '../proxy/paid-call/call.js'

export interface PaymentTransport<In, Out, Sent = unknown> {
  readonly name: string
  /** the call as the stages see it: endpoint path, input, the payment as carried */
  request(input: In): CallRequest
  /** renders a result: the endpoint's answer with its receipt, a challenge (with a reason), or an error */
  send(out: Out, result: CallResult): Sent
}
