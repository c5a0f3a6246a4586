/**
 * Every published service as a paid A2A agent (specs/transports-v2/a2a.md): the official A2A
 * SDK's client, unmodified, reads tollgate/toolbox's Agent Card, asks for a skill, is answered
 * `input-required` with the PaymentRequired, pays it with the official x402 client in the
 * message's `x402.payment.payload`, and gets the result with its receipt in `x402.payment.receipts`.
 */
import t, { type Test } from 'tap'
import { TaskState, type Task } from '@a2a-js/sdk'
import { ClientFactory } from '@a2a-js/sdk/client'
import { x402Client } from '@x402/core/client'
import type { PaymentRequired } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm'
import { privateKeyToAccount } from 'viem/accounts'
import { withDevnet } from '../../helpers/devnet.js'
import { startTestPlatform, type TestPlatform } from '../../helpers/platform.js'
import { send, userMessage } from '../../helpers/a2a.js'

const X402_EXT = 'https://github.com/google-a2a/a2a-x402/v0.1'
const devnet = await withDevnet(t)
const payer = privateKeyToAccount(devnet.accounts.demoPayer.privateKey)
const x402 = new x402Client().register('eip155:84532', new ExactEvmScheme(payer))

const metaOf = (task: Task) => (task.status?.message?.metadata ?? {}) as Record<string, unknown>
const dataOf = (task: Task) => {
  const c = task.artifacts[0]?.parts[0]?.content
  return c?.$case === 'data' ? c.value : undefined
}

const rowsOf = (platform: TestPlatform, slug: string) =>
  platform.deps.db
    .selectFrom('payments as p')
    .innerJoin('endpoints as e', 'e.id', 'p.endpoint_id')
    .select(['p.id', 'p.status'])
    .where('e.slug', '=', slug)
    .where('p.payer', '=', payer.address.toLowerCase())
    .execute()

t.test('tollgate/toolbox as a paid A2A agent', async (t: Test) => {
  const platform = await startTestPlatform(t, { devnet })
  const agentUrl = `${platform.proxyUrl}/tollgate/toolbox/a2a`
  // the card is under the agent's path: the base ends with a slash (or pass the card URL with path "")
  const client = await new ClientFactory().createFromUrl(`${agentUrl}/.well-known/agent-card.json`, '')
  const input = { text: 'abc', algorithms: ['sha256'] }

  t.test('the Agent Card: one skill per endpoint, priced, the x402 extension required', async (t) => {
    const res = await fetch(`${agentUrl}/.well-known/agent-card.json`)
    t.equal(res.status, 200)
    const card = (await res.json()) as {
      skills: Array<{ id: string; description: string }>
      capabilities: {
        extensions: Array<{ uri: string; required: boolean; params: { skills: Record<string, unknown> } }>
      }
      supportedInterfaces: Array<{ url: string; protocolBinding: string; protocolVersion: string }>
    }
    const hash = card.skills.find((s) => s.id === 'hash-generator')!
    t.match(hash.description, /0\.001 USDC per call, paid with x402 \(exact, eip155:84532\)/)
    t.ok(card.skills.length > 50, `${card.skills.length} skills`)
    const ext = card.capabilities.extensions[0]!
    t.equal(ext.uri, X402_EXT)
    t.equal(ext.required, true)
    t.match(ext.params.skills['hash-generator'], { amount: '1000', network: 'eip155:84532', schemes: ['exact'] })
    t.same(
      card.supportedInterfaces.map((i) => [i.url, i.protocolVersion]),
      [
        [agentUrl, '1.0'],
        [agentUrl, '0.3'],
      ],
    )
  })

  let required: PaymentRequired
  let taskId: string
  t.test('an unpaid message: input-required with payment-required and the PaymentRequired', async (t) => {
    const task = await send(client, userMessage({ skill: 'hash-generator', input }))
    t.equal(task.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED)
    const meta = metaOf(task)
    t.equal(meta['x402.payment.status'], 'payment-required')
    required = meta['x402.payment.required'] as PaymentRequired
    t.equal(required.x402Version, 2)
    t.equal(required.resource.url, `${platform.proxyUrl}/tollgate/toolbox/hash-generator`)
    t.match(required.accepts[0], { scheme: 'exact', amount: '1000', network: 'eip155:84532' })
    taskId = task.id
    t.same(await rowsOf(platform, 'hash-generator'), [], 'nothing recorded')
  })

  let payment: Awaited<ReturnType<typeof x402.createPaymentPayload>>
  t.test('the payment in x402.payment.payload with the task id: completed, answer and receipt', async (t) => {
    payment = await x402.createPaymentPayload(required)
    const task = await send(
      client,
      userMessage({
        taskId,
        metadata: { 'x402.payment.status': 'payment-submitted', 'x402.payment.payload': payment },
      }),
    )
    t.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(metaOf(task)))
    t.equal(task.id, taskId, 'the same task')
    t.match(JSON.stringify(dataOf(task)), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    const meta = metaOf(task)
    t.equal(meta['x402.payment.status'], 'payment-completed')
    const receipts = meta['x402.payment.receipts'] as Array<{
      success: boolean
      payer: string
      network: string
      paymentId: string
    }>
    t.equal(receipts.length, 1)
    t.match(receipts[0], { success: true, network: 'eip155:84532' })
    t.equal(receipts[0]!.payer.toLowerCase(), payer.address.toLowerCase())
    const rows = await rowsOf(platform, 'hash-generator')
    t.same(rows, [{ id: receipts[0]!.paymentId, status: 'served' }])
  })

  t.test('a completed task takes no more messages; a replayed payment in a new task fails', async (t) => {
    await t.rejects(
      send(client, userMessage({ taskId, metadata: { 'x402.payment.payload': payment } })),
      /terminal state/,
    )
    const task = await send(
      client,
      userMessage({ skill: 'hash-generator', input, metadata: { 'x402.payment.payload': payment } }),
    )
    t.equal(task.status?.state, TaskState.TASK_STATE_FAILED)
    const meta = metaOf(task)
    t.equal(meta['x402.payment.status'], 'payment-failed')
    t.equal(meta['x402.payment.error'], 'invalid_exact_evm_nonce_already_used')
    t.match(meta['x402.payment.receipts'], [{ success: false, transaction: '', network: 'eip155:84532' }])
    t.ok(meta['x402.payment.required'], 'what to pay in a new task')
    t.equal((await rowsOf(platform, 'hash-generator')).length, 1, 'nothing more recorded')
  })

  t.test('a malformed payload is a failed task, nothing charged', async (t) => {
    const task = await send(
      client,
      userMessage({
        skill: 'hash-generator',
        input,
        metadata: { 'x402.payment.payload': { x402Version: 2, junk: 1 } },
      }),
    )
    t.equal(task.status?.state, TaskState.TASK_STATE_FAILED)
    t.equal(metaOf(task)['x402.payment.status'], 'payment-failed')
    t.match(metaOf(task)['x402.payment.error'], /^invalid_/)
  })

  t.test('an unknown skill and bad input are failed tasks naming what is wrong', async (t) => {
    const unknown = await send(client, userMessage({ skill: 'no-such-skill', input: {} }))
    t.equal(unknown.status?.state, TaskState.TASK_STATE_FAILED)
    t.match(unknown.status?.message?.parts[0]?.content, { value: /no skill "no-such-skill".*hash-generator/ })

    const bad = { text: 'abc', algorithms: ['nope'] }
    const challenge = await send(client, userMessage({ skill: 'hash-generator', input: bad }))
    const p = await x402.createPaymentPayload(metaOf(challenge)['x402.payment.required'] as PaymentRequired)
    const task = await send(client, userMessage({ taskId: challenge.id, metadata: { 'x402.payment.payload': p } }))
    t.equal(task.status?.state, TaskState.TASK_STATE_FAILED)
    t.match(metaOf(task)['tollgate.error'], { code: 'invalid_parameter' })
    t.equal((await rowsOf(platform, 'hash-generator')).length, 1, 'nothing more recorded')
  })

  t.test('the wire: v0.3 message/send as the x402 spec shows it; bad JSON-RPC is never a 5xx', async (t) => {
    const rpc = (body: unknown, headers: Record<string, string> = { 'x-a2a-extensions': X402_EXT }) =>
      fetch(agentUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      })
    const legacy = await rpc({
      jsonrpc: '2.0',
      id: 'req-001',
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          messageId: 'm-1',
          role: 'user',
          parts: [{ kind: 'data', data: input }],
          metadata: { skill: 'hash-generator' },
        },
      },
    })
    t.equal(legacy.status, 200)
    t.equal(legacy.headers.get('x-a2a-extensions'), X402_EXT, 'the extension is activated')
    const body = (await legacy.json()) as {
      result: { kind: string; status: { state: string; message: { metadata: Record<string, unknown> } } }
    }
    t.equal(body.result.kind, 'task')
    t.equal(body.result.status.state, 'input-required')
    t.equal(body.result.status.message.metadata['x402.payment.status'], 'payment-required')
    t.match(body.result.status.message.metadata['x402.payment.required'], {
      x402Version: 2,
      accepts: [{ amount: '1000' }],
    })

    const noExtension = await rpc(
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'message/send',
        params: { message: { kind: 'message', messageId: 'm-2', role: 'user', parts: [] } },
      },
      {},
    )
    t.equal(noExtension.status, 200)
    t.match(await noExtension.json(), { error: { message: /required extensions/ } })

    for (const bad of ['{', '[]', JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'nope' })]) {
      const res = await rpc(bad)
      t.ok(res.status < 500, `${bad} → ${res.status}`)
      t.match(await res.json(), { error: { code: Number } })
    }
    const missing = await fetch(`${platform.proxyUrl}/nobody/nothing/a2a/.well-known/agent-card.json`)
    t.equal(missing.status, 404)
  })
})
