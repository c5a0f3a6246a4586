/**
 * `callPaidSkill`: an A2A `message/send` to a skill of a paid agent, paying its x402 challenge
 * (x402 specs/transports-v2/a2a.md) with the official A2A SDK's client. The agent answers the
 * first message with a task in `input-required` and the PaymentRequired in its status message's
 * `x402.payment.required`; the payer signs it and the payload goes back in a message on the same
 * task (`x402.payment.payload`); the completed task carries the receipt in `x402.payment.receipts`.
 * One payment per call at most. The skill is named in the message metadata (`skill`) and its
 * input is a data part, as Tollgate's agents read them.
 */
import { Role, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk'
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client'
import { PaidCallFailedError, PaymentRefusedError } from './errors.js'
import { offeredOf, paymentInfo } from './pay-mcp-tool.js'
import { newPaymentId } from './sign-exact.js'
import type { FetchLike, Payer, PaymentInfo, Signed } from './wrap-fetch.js'

/** The x402 A2A extension a paying client activates. */
const X402_A2A_EXTENSION = 'https://github.com/google-a2a/a2a-x402/v0.1'

/** A part of the agent's answer, as plain JSON. */
type SkillPart =
  | { kind: 'text'; text: string }
  | { kind: 'data'; data: unknown }
  | { kind: 'file'; mediaType: string; bytes?: string; url?: string }

export interface PaidSkillResult {
  /** the task's final state: completed, failed, input-required (not paid), … */
  state: string
  /** the status message's text */
  text: string
  /** the answer: the artifacts' parts (or a message's) */
  parts: SkillPart[]
  /** the status message's metadata (the x402.payment.* keys) */
  metadata: Record<string, unknown>
  /** present when a payment was signed; `success`: the agent kept it */
  payment?: PaymentInfo
}

/** A client of the agent whose Agent Card is at `cardUrl` (A2A v1.0, or v0.3 through the SDK's compat layer). */
export async function a2aClient(cardUrl: string, fetchImpl: FetchLike = fetch): Promise<Client> {
  const f = fetchImpl as typeof fetch
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl: f, legacyCompat: { enabled: true } })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: f, legacyCompat: { enabled: true } }),
  })
  return factory.createFromUrl(cardUrl, '')
}

const part = (content: Part['content'], mediaType: string): Part => ({
  content,
  metadata: undefined,
  filename: '',
  mediaType,
})

function message(p: {
  skill?: string
  input?: Record<string, unknown>
  taskId?: string
  meta?: Record<string, unknown>
}): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId: '',
    taskId: p.taskId ?? '',
    role: Role.ROLE_USER,
    parts: p.input
      ? [part({ $case: 'data', value: p.input }, 'application/json')]
      : [part({ $case: 'text', value: 'Here is the payment authorization.' }, 'text/plain')],
    metadata: { ...(p.skill ? { skill: p.skill } : {}), ...p.meta },
    extensions: [X402_A2A_EXTENSION],
    referenceTaskIds: [],
  }
}

async function send(client: Client, m: Message, signal: AbortSignal | undefined): Promise<Task | Message> {
  return client.sendMessage(
    { tenant: '', message: m, configuration: undefined, metadata: undefined },
    { signal, serviceParameters: { 'A2A-Extensions': X402_A2A_EXTENSION } },
  )
}

/**
 * @example
 *   const r = await callPaidSkill(await a2aClient(cardUrl), platformPayer(fetch, { baseUrl, agentKey }), 'hash-generator', { text: 'abc' })
 */
export async function callPaidSkill(
  client: Client,
  payer: Payer,
  skill: string,
  input: Record<string, unknown>,
  opts: { signal?: AbortSignal } = {},
): Promise<PaidSkillResult> {
  const first = await send(client, message({ skill, input }), opts.signal)
  const meta = metadataOf(first)
  const required = meta['x402.payment.required']
  if (!('status' in first) || meta['x402.payment.status'] !== 'payment-required' || !isObject(required))
    return resultOf(first)
  const resource = (required.resource as { url?: unknown } | undefined)?.url
  if (typeof resource !== 'string' || !URL.canParse(resource))
    throw new PaymentRefusedError(
      'invalid_challenge',
      `skill "${skill}" asked for a payment without a resource URL`,
      {},
      402,
    )
  const signed = await payer.sign(
    { offered: offeredOf(required), raw: required },
    new Request(resource, { method: 'POST', signal: opts.signal }),
    newPaymentId(),
  )
  let second: Task | Message
  try {
    second = await send(
      client,
      message({
        taskId: first.id,
        meta: { 'x402.payment.status': 'payment-submitted', 'x402.payment.payload': payloadOf(signed) },
      }),
      opts.signal,
    )
  } catch (err) {
    await payer.report?.(signed, 'error', undefined)
    throw new PaidCallFailedError(paymentInfo(signed, false, undefined), err)
  }
  return settle(second, signed, payer)
}

/** The agent's answer to the payment: kept (a receipt), refused (the payment itself), or the skill failed (voided). */
async function settle(second: Task | Message, signed: Signed, payer: Payer): Promise<PaidSkillResult> {
  const meta = metadataOf(second)
  const receipt = (meta['x402.payment.receipts'] as Array<Record<string, unknown>> | undefined)?.[0]
  const kept = meta['x402.payment.status'] === 'payment-completed' && receipt?.success === true
  const error = meta['x402.payment.error']
  if (!kept && isObject(meta['x402.payment.required'])) {
    await payer.report?.(signed, 'rejected', undefined)
    const reason = typeof error === 'string' ? error : 'unknown'
    throw new PaymentRefusedError('payment_rejected', `the seller refused the payment: ${reason}`, { reason }, 402)
  }
  await payer.report?.(signed, kept ? 'accepted' : 'error', kept ? receipt : undefined)
  return { ...resultOf(second), payment: paymentInfo(signed, kept, kept ? receipt : undefined) }
}

function payloadOf(s: Signed): unknown {
  if (s.header !== 'PAYMENT-SIGNATURE')
    throw new PaymentRefusedError(
      'unsupported_requirements',
      'the payer signed an x402 v1 payment; A2A carries v2 only',
    )
  return JSON.parse(Buffer.from(s.value, 'base64').toString('utf8'))
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

function metadataOf(r: Task | Message): Record<string, unknown> {
  return (('status' in r ? r.status?.message?.metadata : r.metadata) ?? {}) as Record<string, unknown>
}

function plain(p: Part): SkillPart | undefined {
  const c = p.content
  if (!c) return undefined
  if (c.$case === 'text') return { kind: 'text', text: c.value }
  if (c.$case === 'data') return { kind: 'data', data: c.value }
  if (c.$case === 'raw') return { kind: 'file', mediaType: p.mediaType, bytes: Buffer.from(c.value).toString('base64') }
  return { kind: 'file', mediaType: p.mediaType, url: c.value }
}

const plainParts = (parts: readonly Part[]) => parts.map(plain).filter((p): p is SkillPart => p !== undefined)

function resultOf(r: Task | Message): PaidSkillResult {
  if (!('status' in r)) return { state: 'message', text: '', parts: plainParts(r.parts), metadata: metadataOf(r) }
  const said = plainParts(r.status?.message?.parts ?? [])
  return {
    state: (TaskState[r.status?.state ?? 0] ?? 'TASK_STATE_UNSPECIFIED')
      .replace(/^TASK_STATE_/, '')
      .toLowerCase()
      .replace(/_/g, '-'),
    text: said
      .map((p) => (p.kind === 'text' ? p.text : ''))
      .join(' ')
      .trim(),
    parts: plainParts(r.artifacts.flatMap((a) => a.parts)),
    metadata: metadataOf(r),
  }
}
