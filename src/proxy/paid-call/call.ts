/**
 * What a paid call is made of as it moves through the stages (see paid-call.ts): the request as
 * the transport hands it over and the result it renders (both part of the seam's contract,
 * src/seam/types.ts), and the endpoint's target (a hosted handler or a seller's upstream).
 */
import type { HandlerContext } from '../../pool/handler-contract.js'
import type { RegisteredHandler } from '../../pool/handler-registry.js'
import type { Challenge } from '../../x402/challenge.js'
import type { EndpointEntry } from '../endpoint-table.js'
import type { UpstreamOptions } from '../upstream.js'

export type { CallRequest, CallResult } from '../../seam/types.js'

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
