/**
 * The A2A route's direct path for `message/send` answers as the official SDK's request handler
 * does: the same requests, over the v1.0 and v0.3 JSON-RPC wires, to a proxy with the direct path
 * (the default) and to one answering every message with the SDK's DefaultRequestHandler
 * (`a2aDirect: false`, same Postgres, Redis and chain) give the same answers once ids, timestamps
 * and transaction hashes are taken out; a task a message made reads the same with tasks/get and
 * takes its payment the same way.
 */
import t, { type Test } from 'tap'
import { SendMessageRequest } from '@a2a-js/sdk'
import { x402Client } from '@x402/core/client'
import type { PaymentRequired } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm'
import { privateKeyToAccount } from 'viem/accounts'
import { withDevnet } from '../../helpers/devnet.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { userMessage, X402_A2A_EXTENSION } from '../../helpers/a2a.js'

const devnet = await withDevnet(t)
const payer = privateKeyToAccount(devnet.accounts.demoPayer.privateKey)
const x402 = new x402Client().register('eip155:84532', new ExactEvmScheme(payer))

// what differs between two runs of one request: ids, clocks, chain transactions, signatures
const VARYING = new Set([
  'id',
  'taskId',
  'contextId',
  'messageId',
  'artifactId',
  'timestamp',
  'transaction',
  'paymentId',
  // each proxy is paid with its own signature
  'x402.payment.payload',
])
function shape(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(shape)
  if (v === null || typeof v !== 'object') return v
  return Object.fromEntries(
    Object.entries(v)
      .filter(([k]) => !VARYING.has(k))
      .map(([k, x]) => [k, shape(x)]),
  )
}

type Json = Record<string, any>

t.test('the direct message/send path answers as the SDK handler does', async (t: Test) => {
  const platform = await startTestPlatform(t, { devnet })
  const sdkProxy = await platform.startProxy({ a2aDirect: false })
  const agents = {
    direct: `${platform.proxyUrl}/tollgate/toolbox/a2a`,
    sdk: `${sdkProxy.url}/tollgate/toolbox/a2a`,
  }
  const input = { text: 'abc', algorithms: ['sha256'] }

  const post = async (url: string, body: unknown, headers: Record<string, string>) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    })
    return {
      status: res.status,
      extensions: res.headers.get('a2a-extensions') ?? res.headers.get('x-a2a-extensions'),
      body: (await res.json()) as Json,
    }
  }
  const v1 = { 'a2a-version': '1.0', 'a2a-extensions': X402_A2A_EXTENSION }
  const v03 = { 'x-a2a-extensions': X402_A2A_EXTENSION }
  /** one request (made per agent, so each can carry its own payment) to both; their answers compared */
  const both = async (
    t: Test,
    what: string,
    request: (agent: 'direct' | 'sdk') => Promise<{ body: unknown; headers: Record<string, string> }>,
  ) => {
    const answers = { direct: undefined as unknown as Json, sdk: undefined as unknown as Json }
    for (const agent of ['direct', 'sdk'] as const) {
      const r = await request(agent)
      const a = await post(agents[agent], r.body, r.headers)
      t.equal(a.status, 200, `${what} (${agent}): ${JSON.stringify(a.body).slice(0, 300)}`)
      answers[agent] = a
    }
    t.same(shape(answers.direct), shape(answers.sdk), what)
    return { direct: answers.direct.body, sdk: answers.sdk.body }
  }

  const v1Send = (message: Parameters<typeof userMessage>[0], configuration?: Json) => ({
    body: {
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: {
        ...(SendMessageRequest.toJSON({
          tenant: '',
          message: userMessage(message),
          configuration: undefined,
          metadata: undefined,
        }) as Json),
        ...(configuration ? { configuration } : {}),
      },
    },
    headers: v1,
  })
  const v03Send = (message: Json, configuration?: Json) => ({
    body: {
      jsonrpc: '2.0',
      id: 'r-1',
      method: 'message/send',
      params: {
        message: { kind: 'message', messageId: crypto.randomUUID(), role: 'user', ...message },
        ...(configuration ? { configuration } : {}),
      },
    },
    headers: v03,
  })

  let challenges!: { direct: Json; sdk: Json }
  t.test('a challenge, over v1.0 and v0.3', async (t) => {
    challenges = await both(t, 'v1.0 unpaid', async () => v1Send({ skill: 'hash-generator', input }))
    t.equal(challenges.direct.result.task.status.state, 'TASK_STATE_INPUT_REQUIRED')
    t.equal(challenges.direct.result.task.history.length, 1, "the user's message is the history")
    const legacy = await both(t, 'v0.3 unpaid', async () =>
      v03Send({ parts: [{ kind: 'data', data: input }], metadata: { skill: 'hash-generator' } }),
    )
    t.equal(legacy.direct.result.status.state, 'input-required')
    t.equal(legacy.direct.result.status.message.metadata['x402.payment.status'], 'payment-required')
  })

  const requiredOf = (answer: Json): PaymentRequired =>
    (answer.result.task ?? answer.result).status.message.metadata['x402.payment.required'] as PaymentRequired
  const payments: Record<'direct' | 'sdk', unknown> = { direct: undefined, sdk: undefined }

  t.test('paid in the first message: completed with the receipt, over v1.0 and v0.3', async (t) => {
    const paid = await both(t, 'v1.0 paid', async (agent) => {
      payments[agent] = await x402.createPaymentPayload(requiredOf(challenges[agent]))
      return v1Send({ skill: 'hash-generator', input, metadata: { 'x402.payment.payload': payments[agent] } })
    })
    t.equal(paid.direct.result.task.status.state, 'TASK_STATE_COMPLETED')
    const legacy = await both(t, 'v0.3 paid', async (agent) =>
      v03Send({
        parts: [{ kind: 'text', text: JSON.stringify(input) }],
        metadata: {
          skill: 'hash-generator',
          'x402.payment.payload': await x402.createPaymentPayload(requiredOf(challenges[agent])),
        },
      }),
    )
    t.equal(legacy.direct.result.status.state, 'completed')
    t.match(legacy.direct.result.artifacts[0].parts[0], { kind: 'data' })
  })

  t.test('refusals: a replayed payment, a malformed one, an unknown skill, no skill', async (t) => {
    const replay = await both(t, 'replayed', async (agent) =>
      v1Send({ skill: 'hash-generator', input, metadata: { 'x402.payment.payload': payments[agent] } }),
    )
    t.equal(
      replay.direct.result.task.status.message.metadata['x402.payment.error'],
      'invalid_exact_evm_nonce_already_used',
    )
    await both(t, 'malformed', async () =>
      v03Send({
        parts: [{ kind: 'data', data: input }],
        metadata: { skill: 'hash-generator', 'x402.payment.payload': { x402Version: 2, junk: 1 } },
      }),
    )
    await both(t, 'unknown skill', async () => v1Send({ skill: 'no-such-skill', input: {} }))
    await both(t, 'no skill', async () => v03Send({ parts: [{ kind: 'text', text: 'hello' }] }))
  })

  t.test('configuration: historyLength, blocking, a given contextId', async (t) => {
    await both(t, 'v1.0 historyLength 0', async () =>
      v1Send({ skill: 'hash-generator', input }, { historyLength: 0, returnImmediately: false }),
    )
    await both(t, 'v0.3 blocking, historyLength 1', async () =>
      v03Send(
        { parts: [{ kind: 'data', data: input }], metadata: { skill: 'hash-generator' } },
        { blocking: true, historyLength: 1 },
      ),
    )
    const ctx = await both(t, 'v0.3 with a contextId', async () =>
      v03Send({ contextId: 'ctx-1', parts: [{ kind: 'data', data: input }], metadata: { skill: 'hash-generator' } }),
    )
    t.equal(ctx.direct.result.contextId, 'ctx-1')
  })

  t.test('without the x402 extension: the same error', async (t) => {
    const noExt = await both(t, 'no extension', async () => ({
      ...v1Send({ skill: 'hash-generator', input }),
      headers: { 'a2a-version': '1.0' },
    }))
    t.match(noExt.direct, { error: { message: /required extensions/ } })
  })

  t.test('the task a message made: the same with tasks/get, paid the same way', async (t) => {
    const got = await both(t, 'tasks/get', async (agent) => ({
      body: { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: challenges[agent].result.task.id } },
      headers: v03,
    }))
    t.equal(got.direct.result.status.state, 'input-required')
    const paid = await both(t, 'the task paid', async (agent) =>
      v1Send({
        taskId: challenges[agent].result.task.id,
        metadata: { 'x402.payment.payload': await x402.createPaymentPayload(requiredOf(challenges[agent])) },
      }),
    )
    t.equal(paid.direct.result.task.status.state, 'TASK_STATE_COMPLETED')
    t.equal(paid.direct.result.task.history.length, 2, 'both messages')
  })
})
