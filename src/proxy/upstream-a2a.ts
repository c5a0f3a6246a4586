/**
 * A seller's upstream A2A agent, as the proxy and publishing reach it: the official A2A SDK's
 * client (v1.0, and v0.3 agents through its compat layer) over the same SSRF-guarded connections
 * as HTTP upstreams, every request carrying the seller's forwarded headers and an
 * `X-Tollgate-Signature` over its method, path and body (as upstream.ts signs a forwarded HTTP
 * request), and on a paid call `X-Tollgate-Payment-Id`. The Agent Card is read once a minute at
 * most per card URL; each call is one `message/send`.
 */
import { Role, TaskState, type AgentCard, type Message, type Part, type Task } from '@a2a-js/sdk'
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client'
import { Agent } from 'undici'
import { guardedLookup } from '../net/ssrf-guard.js'
import { FORWARD_TIMEOUT_MS, sellerFetch, type UpstreamOptions } from './upstream.js'

const CARD_TTL_MS = 60_000

/** A part of the seller's answer as it travels as JSON (files as base64). */
type WirePart =
  { kind: 'text'; text: string } | { kind: 'data'; data: unknown } | { kind: 'file'; bytes: string; mediaType: string }

/** The seller's agent's answer: its parts when the task completed (or it answered with a message); else why not. */
export type AgentAnswer = { ok: true; parts: WirePart[] } | { ok: false; state: string; text: string }

export function createUpstreamA2aClient(opts: { allowPrivate?: boolean; connections?: number } = {}) {
  const allowPrivate = opts.allowPrivate ?? false
  const agent = new Agent({
    connections: opts.connections ?? 64,
    keepAliveTimeout: 10_000,
    connect: { lookup: guardedLookup(allowPrivate) },
  })
  const conn: Connection = { agent, allowPrivate }
  const cards = new Map<string, { card: AgentCard; expires: number }>()

  /** The agent's card (its interfaces and skills), fresh: publishing reads it through here. */
  async function readCard(cardUrl: string, options: UpstreamOptions): Promise<AgentCard> {
    const resolver = new DefaultAgentCardResolver({
      fetchImpl: signedFetch(conn, options, undefined),
      legacyCompat: { enabled: true },
    })
    const card = await resolver.resolve(cardUrl, '')
    cards.set(cardUrl, { card, expires: Date.now() + CARD_TTL_MS })
    return card
  }

  async function cardOf(cardUrl: string, options: UpstreamOptions): Promise<AgentCard> {
    const c = cards.get(cardUrl)
    if (c && c.expires > Date.now()) return c.card
    if (cards.size > 1000) cards.clear()
    return readCard(cardUrl, options)
  }

  /** One paid `message/send` naming the skill; throws when the agent cannot be reached or answers a JSON-RPC error. */
  async function sendMessage(p: {
    cardUrl: string
    skill: string
    input: Record<string, unknown>
    options: UpstreamOptions
    paymentId: string
  }): Promise<AgentAnswer> {
    const card = await cardOf(p.cardUrl, p.options)
    const client = await factoryFor(conn, p.options, p.paymentId).createFromAgentCard(card)
    const result = await client.sendMessage(
      { tenant: '', message: messageFor(p.skill, p.input), configuration: undefined, metadata: undefined },
      { signal: AbortSignal.timeout(p.options.timeoutMs ?? FORWARD_TIMEOUT_MS) },
    )
    return answerOf(result)
  }

  return { readCard, sendMessage, close: () => agent.close() }
}

export type UpstreamA2aClient = ReturnType<typeof createUpstreamA2aClient>

interface Connection {
  agent: Agent
  allowPrivate: boolean
}

/** fetch for one call: guarded, signed, with the seller's headers */
const signedFetch =
  (conn: Connection, options: UpstreamOptions, paymentId: string | undefined): typeof fetch =>
  (input, init) =>
    sellerFetch(conn.agent, conn.allowPrivate, options, paymentId, input, init, {
      signal: init?.signal ?? AbortSignal.timeout(options.timeoutMs ?? FORWARD_TIMEOUT_MS),
    })

/** The SDK's client factory for one call (JSON-RPC, v0.3 agents through the compat layer). */
function factoryFor(conn: Connection, options: UpstreamOptions, paymentId: string | undefined) {
  const fetchImpl = signedFetch(conn, options, paymentId)
  return new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
  })
}

const sdkPart = (content: Part['content'], mediaType = ''): Part => ({
  content,
  metadata: undefined,
  filename: '',
  mediaType,
})

/** The message to the seller's agent: the skill in metadata, the input as a data part (and its `text`, if any, as text). */
function messageFor(skill: string, input: Record<string, unknown>): Message {
  const parts: Part[] = []
  if (typeof input.text === 'string') parts.push(sdkPart({ $case: 'text', value: input.text }, 'text/plain'))
  parts.push(sdkPart({ $case: 'data', value: input }, 'application/json'))
  return {
    messageId: crypto.randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts,
    metadata: { skill },
    extensions: [],
    referenceTaskIds: [],
  }
}

function wirePart(p: Part): WirePart | undefined {
  const c = p.content
  if (!c) return undefined
  if (c.$case === 'text') return { kind: 'text', text: c.value }
  if (c.$case === 'data') return { kind: 'data', data: c.value }
  if (c.$case === 'raw')
    return {
      kind: 'file',
      bytes: Buffer.from(c.value).toString('base64'),
      mediaType: p.mediaType || 'application/octet-stream',
    }
  return { kind: 'text', text: c.value }
}

const wireParts = (parts: readonly Part[]) => parts.map(wirePart).filter((p): p is WirePart => p !== undefined)

function answerOf(r: Message | Task): AgentAnswer {
  if (!('status' in r)) return { ok: true, parts: wireParts(r.parts) }
  const state = r.status?.state
  const said = wireParts(r.status?.message?.parts ?? [])
  if (state === TaskState.TASK_STATE_COMPLETED) {
    const parts = r.artifacts.flatMap((a) => wireParts(a.parts))
    return { ok: true, parts: parts.length ? parts : said }
  }
  const text = said
    .filter((p): p is { kind: 'text'; text: string } => p.kind === 'text')
    .map((p) => p.text)
    .join(' ')
  return { ok: false, state: TaskState[state ?? 0] ?? 'unknown', text: text.slice(0, 500) }
}
