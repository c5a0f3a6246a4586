/**
 * What a paid call is made of as it moves through the stages (see paid-call.ts): the request as
 * the transport hands it over, the endpoint's target (a hosted handler or a seller's upstream),
 * and the result the transport renders.
 */
import type { IncomingHttpHeaders } from 'node:http'
import type { Readable } from 'node:stream'
import type { FastifyBaseLogger } from 'fastify'
import type { HandlerContext } from '../../pool/handler-contract.js'
import type { RegisteredHandler } from '../../pool/handler-registry.js'
import type { Challenge } from '../../x402/challenge.js'
import type { PaymentHeaders } from '../../x402/decode-payment.js'
import type { EndpointEntry } from '../endpoint-table.js'
import type { UpstreamOptions } from '../upstream.js'
import type { CallRefusal } from './refusal.js'

/** A paid request, whatever carried it. */
export interface CallRequest {
  /** `/<namespace>/<service>/<slug>` */
  path: string
  /** the method as received (HEAD included) */
  method: string
  /** the payment as the transport carries it; undefined when none was sent */
  payment: PaymentHeaders | undefined
  /** an x402 `sign-in-with-x` proof as the SIGN-IN-WITH-X header carries it (base64 JSON); undefined when none was sent */
  signIn?: string
  /** hosted input already parsed by the transport (MCP tool arguments); else query or body below */
  input?: Record<string, unknown>
  query: Record<string, unknown>
  /** the raw body (hosted handlers parse JSON themselves, upstreams get the bytes as sent) */
  body: Buffer | undefined
  headers: IncomingHttpHeaders
  /** path and query as received (the upstream gets the query) */
  url: string
  log: FastifyBaseLogger
}

/** The endpoint and method the call resolved to. */
export interface ResolvedCall {
  entry: EndpointEntry
  /** HEAD is served as GET */
  method: string
  challenge: Challenge
}

export interface HostedTarget {
  kind: 'hosted'
  /** the handler acts outside (its `effects`): recorded before it runs, as an upstream call is */
  recordFirst: boolean
  handler: RegisteredHandler
  slug: string
  input: Record<string, unknown>
  ctx: HandlerContext
  timeoutMs: number
  rateLimit: { requests: number; perSeconds: number } | undefined
}

export interface UpstreamTarget {
  kind: 'upstream'
  /** always: the seller's origin receives the payment id with the call */
  recordFirst: true
  origin: string
  /** a tool of the seller's MCP server at `origin`, called with `arguments` (an upstream MCP tool) */
  mcp?: { tool: string; arguments: Record<string, unknown> }
  /** a skill of the seller's A2A agent whose Agent Card is at `origin`, sent `input` (an upstream A2A skill) */
  a2a?: { skill: string; input: Record<string, unknown> }
  options: UpstreamOptions
  timeoutMs: number
  rateLimit: { requests: number; perSeconds: number } | undefined
}

export type CallTarget = HostedTarget | UpstreamTarget

/** What the buyer is told about its payment when the call succeeded. */
export interface PaymentReceipt {
  paymentId: string
  payer: string
  /** x402 generation of the payment header: the receipt goes back in the same one */
  version: 1 | 2
  /** the settlement transaction, '' while it is pending (async settlement) */
  transaction: string
  /** `upto`: the actual charge in atomic units (≤ the maximum signed for) */
  amount?: string
  /** `batch-settlement`: the receipt's `extra` (chargedAmount, channelState) */
  extra?: Record<string, unknown>
}

export type CallResult =
  /** refused before the endpoint answered; `challenge` present when the transport should send it again */
  | { kind: 'refused'; refusal: CallRefusal; challenge?: Challenge }
  /** the endpoint's own answer; `receipt` only when the payment was kept (status < 400) */
  | {
      kind: 'answer'
      status: number
      contentType?: string
      headers?: Record<string, string | string[]>
      body: Buffer | string | Readable
      receipt?: PaymentReceipt
    }
