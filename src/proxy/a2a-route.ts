import { randomUUID } from 'node:crypto'
import { Extensions, Role, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk'
import {
  AgentEvent,
  DefaultRequestHandler,
  JsonRpcTransportHandler,
  ServerCallContext,
  validateVersion,
  type TaskStore,
} from '@a2a-js/sdk/server'
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server'
import type { AgentCard, SendMessageRequest } from '@a2a-js/sdk'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { X402_A2A_EXTENSION, type A2aOutcome, type A2aPart, type A2aTransport } from '../transports/a2a.js'
import { agentCardJson, serviceAgentCard, skillIdOf } from './a2a-card.js'
import { BoundedTaskStore } from './a2a-task-store.js'
import type { EndpointEntry, EndpointTable } from './endpoint-table.js'
import type { PaidCall } from './paid-call/paid-call.js'

/** Bytes of one A2A JSON-RPC message. */
const A2A_MAX_MESSAGE_BYTES = 1024 * 1024
const REQUEST_KEY = 'tollgate.request'

interface ServiceAgent {
  card: AgentCard
  cardJson: string
  rpc: JsonRpcTransportHandler
  legacy: LegacyJsonRpcTransportHandler
}

interface A2aRouteOptions {
  /** where the agents' tasks are kept; default: this process's memory */
  tasks?: TaskStore
  /** false: every message through the SDK's request handler (the direct path's comparison test); default true */
  direct?: boolean
}

/**
 * Each published service as an A2A agent at /<namespace>/<service>/a2a (JSON-RPC, A2A v1.0 and
 * v0.3), its Agent Card at /<namespace>/<service>/a2a/.well-known/agent-card.json. The official
 * SDK's request handler validates and answers the protocol; its executor turns a `message/send`
 * naming a skill into a paid call through the same stages as HTTP and MCP, and the A2A transport
 * renders the result as the task's state (specs/transports-v2/a2a.md).
 */
export function a2aRoute(
  paidCall: PaidCall,
  a2a: A2aTransport,
  table: Pick<EndpointTable, 'service'>,
  proxyUrl: string,
  opts: A2aRouteOptions = {},
) {
  const agents = new WeakMap<readonly EndpointEntry[], ServiceAgent>()
  const tasks = opts.tasks ?? new BoundedTaskStore()
  const direct = opts.direct ?? true

  const agentOf = (namespace: string, service: string, endpoints: readonly EndpointEntry[]): ServiceAgent => {
    let agent = agents.get(endpoints)
    if (agent) return agent
    const card = serviceAgentCard(`${proxyUrl}/${namespace}/${service}/a2a`, endpoints)
    const run = { paidCall, a2a, endpoints }
    const handler = direct
      ? new DirectRequestHandler(card, tasks, run)
      : new DefaultRequestHandler(card, tasks, {
          execute: async (ctx, bus) => {
            const request = ctx.context.state.get(REQUEST_KEY) as FastifyRequest
            ctx.context.addActivatedExtension(X402_A2A_EXTENSION)
            const ids = { taskId: ctx.taskId, contextId: ctx.contextId }
            bus.publish(AgentEvent.task(await outcomeTask(run, request, ctx.userMessage, ids, ctx.task)))
            bus.finished()
          },
          cancelTask: async () => {},
        })
    agent = {
      card,
      cardJson: JSON.stringify(agentCardJson(card)),
      rpc: new JsonRpcTransportHandler(handler),
      legacy: new LegacyJsonRpcTransportHandler(handler),
    }
    agents.set(endpoints, agent)
    return agent
  }

  const agentFor = (request: FastifyRequest): ServiceAgent | undefined => {
    const { namespace, service } = request.params as Record<string, string>
    const endpoints = table.service(namespace, service)
    return endpoints.length === 0 ? undefined : agentOf(namespace, service, endpoints)
  }

  async function card(request: FastifyRequest, reply: FastifyReply) {
    const agent = agentFor(request)
    if (!agent) return reply.code(404).send({ error: 'not_found', message: 'no published service at this path' })
    return reply.type('application/json').header('cache-control', 'public, max-age=60').send(agent.cardJson)
  }

  return async function (app: FastifyInstance) {
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: A2A_MAX_MESSAGE_BYTES }, (_req, body, done) =>
      done(null, body),
    )
    app.post('/:namespace/:service/a2a', (request, reply) => serve(agentFor, request, reply))
    app.get('/:namespace/:service/a2a/.well-known/agent-card.json', card)
    app.get('/:namespace/:service/a2a/.well-known/agent.json', card)
  }
}

/** One message: the skill it names (or the task's), run as a paid call; the task in the state it came to. */
async function outcomeTask(
  run: AgentRun,
  request: FastifyRequest,
  msg: Message,
  ids: { taskId: string; contextId: string },
  task: Task | undefined,
): Promise<Task> {
  const { endpoints } = run
  const meta = (msg.metadata ?? {}) as Record<string, unknown>
  const saved = (task?.metadata ?? {}) as { skill?: string; input?: Record<string, unknown> }
  const skill =
    (typeof meta.skill === 'string' ? meta.skill : undefined) ??
    saved.skill ??
    (endpoints.length === 1 ? skillIdOf(endpoints[0]!) : undefined)
  const input = inputOf(msg) ?? saved.input ?? {}
  // a seller's agent's skill keeps its id; its endpoint's slug (as the marketplace names it) is taken too
  const entry =
    skill === undefined
      ? undefined
      : (endpoints.find((e) => skillIdOf(e) === skill) ?? endpoints.find((e) => e.slug === skill))
  let outcome: A2aOutcome
  if (!entry) {
    const names = endpoints.map(skillIdOf)
    outcome = {
      state: 'failed',
      text: `${skill === undefined ? 'name a skill in the message metadata "skill"' : `no skill "${skill}"`}; this agent's skills: ${names.slice(0, 50).join(', ')}${names.length > 50 ? ', …' : ''}`,
      metadata: { 'tollgate.error': { code: 'unknown_skill', skill: skill ?? null } },
      parts: [],
    }
  } else {
    const call = {
      path: entry.path,
      methods: entry.methods,
      resourceUrl: entry.resourceUrl,
      input,
      payment: Object.hasOwn(meta, 'x402.payment.payload') ? meta['x402.payment.payload'] : undefined,
      headers: request.headers,
      log: request.log,
    }
    outcome = await run.a2a.send(call, await run.paidCall(run.a2a.request(call)))
  }
  return taskOf(ids, outcome, { skill, input })
}

/** What an agent's messages run with. */
interface AgentRun {
  paidCall: PaidCall
  a2a: A2aTransport
  endpoints: readonly EndpointEntry[]
}

/**
 * The SDK's request handler with a direct path for the common `message/send`: a new task (no
 * `taskId`, no referenced tasks), answered when done (blocking), without push notifications, from a
 * client that declared the x402 extension. It runs the paid call and stores and returns the task
 * exactly as the SDK's handler would (the task as the executor publishes it, the user's message as
 * its history, `historyLength` applied) without the SDK's event bus, result manager and copies of
 * the message. Every other message and method (paying an existing task, tasks/get, tasks/cancel,
 * non-blocking sends) is the SDK's. The SDK's JSON-RPC handlers still read the request and write
 * the answer, so the wire is theirs either way (test/integration/a2a/direct.test.ts compares).
 */
class DirectRequestHandler extends DefaultRequestHandler {
  private readonly exposed: ReadonlySet<string>
  private readonly required: readonly string[]

  constructor(
    card: AgentCard,
    private readonly tasks: TaskStore,
    private readonly run: AgentRun,
  ) {
    super(card, tasks, {
      execute: async (ctx, bus) => {
        const request = ctx.context.state.get(REQUEST_KEY) as FastifyRequest
        ctx.context.addActivatedExtension(X402_A2A_EXTENSION)
        const ids = { taskId: ctx.taskId, contextId: ctx.contextId }
        bus.publish(AgentEvent.task(await outcomeTask(run, request, ctx.userMessage, ids, ctx.task)))
        bus.finished()
      },
      cancelTask: async () => {},
    })
    const extensions = card.capabilities?.extensions ?? []
    this.exposed = new Set(extensions.map((e) => e.uri))
    this.required = extensions.filter((e) => e.required).map((e) => e.uri)
  }

  override async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    const msg = params.message
    const config = params.configuration
    const requested = context.requestedExtensions
    const request = context.state.get(REQUEST_KEY) as FastifyRequest | undefined
    const direct =
      request !== undefined &&
      msg !== undefined &&
      msg.messageId !== '' &&
      !msg.taskId &&
      !msg.referenceTaskIds?.length &&
      (config === undefined ||
        (config.returnImmediately !== true && config.taskPushNotificationConfig === undefined)) &&
      requested !== undefined &&
      this.required.every((uri) => requested.includes(uri))
    if (!direct) return super.sendMessage(params, context)
    context.setRequestedExtensions(requested.filter((uri) => this.exposed.has(uri)))
    const ids = { taskId: randomUUID(), contextId: msg.contextId || randomUUID() }
    let task: Task
    try {
      context.addActivatedExtension(X402_A2A_EXTENSION)
      task = await outcomeTask(this.run, request, msg, ids, undefined)
      task.history = [msg]
    } catch (err) {
      request.log.error({ err }, 'an A2A message failed')
      task = executionErrorTask(msg, ids, err)
    }
    await this.tasks.save(task, context)
    if (config?.historyLength !== undefined)
      task.history = config.historyLength <= 0 ? [] : task.history.slice(-config.historyLength)
    return task
  }
}

/** The task the SDK's handler makes of an executor that threw: failed, the message and the status message as its history. */
function executionErrorTask(msg: Message, ids: { taskId: string; contextId: string }, err: unknown): Task {
  const status = {
    state: TaskState.TASK_STATE_FAILED,
    message: {
      role: Role.ROLE_AGENT,
      messageId: randomUUID(),
      taskId: ids.taskId,
      contextId: ids.contextId,
      parts: [
        {
          content: {
            $case: 'text' as const,
            value: `Agent execution error: ${err instanceof Error ? err.message : String(err)}`,
          },
          mediaType: 'text/plain',
          filename: '',
          metadata: {},
        },
      ],
      metadata: {},
      extensions: [],
      referenceTaskIds: [],
    },
    timestamp: new Date().toISOString(),
  }
  return {
    id: ids.taskId,
    contextId: ids.contextId,
    status,
    artifacts: [],
    history: [{ ...msg, ...ids }, status.message],
    metadata: {},
  }
}

async function serve(
  agentFor: (request: FastifyRequest) => ServiceAgent | undefined,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  const agent = agentFor(request)
  if (!agent) return reply.code(404).send(rpcError(null, -32001, 'no published service at this path'))
  let body: Record<string, unknown>
  try {
    const parsed: unknown = JSON.parse((request.body as Buffer | undefined)?.toString('utf8') ?? '')
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object')
    body = parsed as Record<string, unknown>
  } catch {
    return reply.send(rpcError(null, -32700, 'Parse error: the body must be one JSON-RPC request object'))
  }
  const version = header(request, 'a2a-version')
  const legacy = (version ?? '0.3').startsWith('0.3')
  const context = new ServerCallContext({
    requestedExtensions: Extensions.parseServiceParameter(
      legacy
        ? (header(request, 'x-a2a-extensions') ?? header(request, 'a2a-extensions'))
        : header(request, 'a2a-extensions'),
    ),
    requestedVersion: legacy ? '0.3' : version,
    state: new Map([[REQUEST_KEY, request]]),
  })
  const id = (body.id as string | number | null | undefined) ?? null
  try {
    validateVersion(context.requestedVersion, agent.card, 'JSONRPC')
  } catch (err) {
    return reply.send({ jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) })
  }
  const out = await (legacy ? agent.legacy : agent.rpc).handle(body, context)
  if (out && typeof (out as AsyncGenerator)[Symbol.asyncIterator] === 'function') {
    await (out as AsyncGenerator).return(undefined)
    return reply.send(rpcError(id, -32004, 'streaming is not offered by this agent: use message/send (SendMessage)'))
  }
  if (context.activatedExtensions?.length)
    reply.header(legacy ? 'x-a2a-extensions' : 'a2a-extensions', context.activatedExtensions.join(', '))
  return reply.type('application/json').send(out)
}

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name]
  return Array.isArray(v) ? v.join(', ') : v
}

function rpcError(id: string | number | null, code: number, message: string) {
  return { jsonrpc: '2.0', id, error: { code, message } }
}

/** The skill's input: the first data part that is an object, else a text part holding a JSON object; undefined when none. */
function inputOf(msg: Message): Record<string, unknown> | undefined {
  for (const p of msg.parts) {
    const c = p.content
    if (c?.$case === 'data' && c.value !== null && typeof c.value === 'object' && !Array.isArray(c.value))
      return c.value as Record<string, unknown>
  }
  for (const p of msg.parts) {
    if (p.content?.$case !== 'text') continue
    try {
      const v: unknown = JSON.parse(p.content.value)
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>
    } catch {
      // prose, not input
    }
  }
  return undefined
}

const STATES = {
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
} as const

function partOf(p: A2aPart): Part {
  const base = { metadata: undefined, filename: '', mediaType: '' }
  if (p.kind === 'text') return { ...base, content: { $case: 'text', value: p.text }, mediaType: 'text/plain' }
  if (p.kind === 'data') return { ...base, content: { $case: 'data', value: p.data }, mediaType: 'application/json' }
  return { ...base, content: { $case: 'raw', value: p.bytes }, filename: p.name ?? '', mediaType: p.mediaType }
}

function taskOf(
  ids: { taskId: string; contextId: string },
  o: A2aOutcome,
  saved: { skill?: string; input: Record<string, unknown> },
): Task {
  const message: Message = {
    messageId: randomUUID(),
    contextId: ids.contextId,
    taskId: ids.taskId,
    role: Role.ROLE_AGENT,
    parts: [partOf({ kind: 'text', text: o.text })],
    metadata: o.metadata,
    extensions: [X402_A2A_EXTENSION],
    referenceTaskIds: [],
  }
  return {
    id: ids.taskId,
    contextId: ids.contextId,
    status: { state: STATES[o.state], message, timestamp: new Date().toISOString() },
    artifacts: o.parts.length
      ? [
          {
            artifactId: randomUUID(),
            name: 'answer',
            description: '',
            parts: o.parts.map(partOf),
            metadata: undefined,
            extensions: [],
          },
        ]
      : [],
    history: [],
    // what a payment for this task pays for (an input-required task is answered by a message with only the payment)
    metadata: saved.skill === undefined ? {} : { skill: saved.skill, input: saved.input },
  }
}
