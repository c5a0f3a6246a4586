/**
 * A seller's own A2A agent (a local server built with the official A2A SDK) published with a price
 * per skill: the official A2A client pays Tollgate's agent for the service, and the message is
 * forwarded to the seller's agent signed, with the payment id; a task the seller's agent fails is
 * voided, nothing charged.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http'
import t, { type Test } from 'tap'
import { AgentCard, Role, TaskState, type Part } from '@a2a-js/sdk'
import {
  AgentEvent,
  DefaultRequestHandler,
  JsonRpcTransportHandler,
  ServerCallContext,
  type AgentExecutor,
} from '@a2a-js/sdk/server'
import { ClientFactory } from '@a2a-js/sdk/client'
import { x402Client } from '@x402/core/client'
import type { PaymentRequired } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm'
import { privateKeyToAccount } from 'viem/accounts'
import { BoundedTaskStore } from '../../../src/proxy/a2a-task-store.js'
import { withDevnet } from '../../helpers/devnet.js'
import { startSellerPlatform, upstreamSignatureValid } from '../../helpers/seller.js'
import { until } from '../../helpers/until.js'
import { send, userMessage } from '../../helpers/a2a.js'

const devnet = await withDevnet(t)
const payer = privateKeyToAccount(devnet.accounts.demoPayer.privateKey)
const x402 = new x402Client().register('eip155:84532', new ExactEvmScheme(payer))

const textPart = (value: string): Part => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
})

/** The seller's agent: `shout` upper-cases the input's text; `fail` fails its task. Records what reached it. */
async function sellerAgent(t: Test) {
  const seen: Array<{ headers: IncomingHttpHeaders; path: string; body: string }> = []
  let base = ''
  const skill = (id: string) => ({
    id,
    name: id,
    description: `the ${id} skill`,
    tags: [],
    examples: [],
    inputModes: [],
    outputModes: [],
    securityRequirements: [],
  })
  const card = (): AgentCard => ({
    name: 'shouter',
    description: 'a seller agent',
    supportedInterfaces: [{ url: `${base}/rpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: false, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['text/plain'],
    skills: [skill('shout'), skill('fail')],
    signatures: [],
  })
  const executor: AgentExecutor = {
    async execute(ctx, bus) {
      const m = ctx.userMessage
      const data = m.parts.find((p) => p.content?.$case === 'data')?.content?.value as { text?: string }
      const ok = m.metadata?.skill === 'shout'
      bus.publish(
        AgentEvent.task({
          id: ctx.taskId,
          contextId: ctx.contextId,
          status: {
            state: ok ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_FAILED,
            message: {
              messageId: 'r',
              contextId: ctx.contextId,
              taskId: ctx.taskId,
              role: Role.ROLE_AGENT,
              parts: [textPart(ok ? 'done' : 'the shouting feed is down')],
              metadata: undefined,
              extensions: [],
              referenceTaskIds: [],
            },
            timestamp: undefined,
          },
          artifacts: ok
            ? [
                {
                  artifactId: 'a',
                  name: 'shout',
                  description: '',
                  parts: [textPart(String(data?.text).toUpperCase())],
                  metadata: undefined,
                  extensions: [],
                },
              ]
            : [],
          history: [],
          metadata: undefined,
        }),
      )
      bus.finished()
    },
    cancelTask: async () => {},
  }
  const http = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c.toString()))
    req.on('end', async () => {
      seen.push({ headers: req.headers, path: req.url ?? '', body })
      if (req.url === '/.well-known/agent-card.json') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(AgentCard.toJSON(card())))
        return
      }
      const rpc = new JsonRpcTransportHandler(new DefaultRequestHandler(card(), new BoundedTaskStore(), executor))
      const out = await rpc.handle(body, new ServerCallContext({ requestedVersion: '1.0' }))
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out))
    })
  })
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => http.close(r)))
  base = `http://127.0.0.1:${(http.address() as { port: number }).port}`
  return { cardUrl: `${base}/.well-known/agent-card.json`, seen }
}

t.test("a seller's A2A agent, published per skill, paid through Tollgate and forwarded", async (t) => {
  const { platform, pub, who } = await startSellerPlatform(t, { devnet, namespace: 'a2aseller', service: 'shouter' })
  const { deps } = platform
  const agent = await sellerAgent(t)

  await t.rejects(
    pub.putA2aUpstream(who, 'a2aseller', 'shouter', { card_url: agent.cardUrl, skill_prices: { nope: '1000' } }),
    /has no skill "nope"/,
  )
  const published = await pub.putA2aUpstream(who, 'a2aseller', 'shouter', {
    card_url: agent.cardUrl,
    skill_prices: { shout: '2000' },
    default_price: '1000',
  })
  t.match(published, {
    object: 'a2a_upstream',
    a2a_url: `${platform.proxyUrl}/a2aseller/shouter/a2a`,
    skills: [
      { id: 'shout', price: '2000' },
      { id: 'fail', price: '1000' },
    ],
  })
  const secret = published.signing_secret!
  t.match(secret, /^tgs_/)

  const cardUrl = `${platform.proxyUrl}/a2aseller/shouter/a2a/.well-known/agent-card.json`
  await until('the proxy serves the agent', async () => (await fetch(cardUrl)).ok)
  const client = await new ClientFactory().createFromUrl(cardUrl, '')
  t.same(
    client['agentCard'].skills.map((s: { id: string }) => s.id).sort(),
    ['fail', 'shout'],
    'the skills keep their ids',
  )

  t.test('paid: the seller agent answers, signed and with the payment id; the receipt comes back', async (t) => {
    const challenge = await send(client, userMessage({ skill: 'shout', input: { text: 'hello' } }))
    t.equal(challenge.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED)
    const required = challenge.status?.message?.metadata?.['x402.payment.required'] as PaymentRequired
    t.equal(required.accepts[0]!.amount, '2000')
    const before = agent.seen.filter((s) => s.path === '/rpc').length
    t.equal(before, 0, 'nothing forwarded before payment')
    const payment = await x402.createPaymentPayload(required)
    const task = await send(
      client,
      userMessage({ taskId: challenge.id, metadata: { 'x402.payment.payload': payment } }),
    )
    t.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(task.status?.message?.metadata))
    t.same(task.artifacts[0]?.parts[0]?.content, { $case: 'text', value: 'HELLO' })
    const receipt = (task.status?.message?.metadata?.['x402.payment.receipts'] as Array<{ paymentId: string }>)[0]!
    const rpc = agent.seen.filter((s) => s.path === '/rpc')
    t.equal(rpc.length, 1)
    t.equal(rpc[0]!.headers['x-tollgate-payment-id'], receipt.paymentId)
    t.ok(
      upstreamSignatureValid(secret, rpc[0]!.headers['x-tollgate-signature'] as string, 'POST', '/rpc', rpc[0]!.body),
      'signed',
    )
    const row = await deps.db
      .selectFrom('payments')
      .select('status')
      .where('id', '=', receipt.paymentId)
      .executeTakeFirst()
    t.equal(row?.status, 'served')
  })

  t.test("the seller agent's failed task: failed, the payment voided", async (t) => {
    const challenge = await send(client, userMessage({ skill: 'fail', input: {} }))
    const required = challenge.status?.message?.metadata?.['x402.payment.required'] as PaymentRequired
    const task = await send(
      client,
      userMessage({
        taskId: challenge.id,
        metadata: { 'x402.payment.payload': await x402.createPaymentPayload(required) },
      }),
    )
    t.equal(task.status?.state, TaskState.TASK_STATE_FAILED)
    const meta = task.status?.message?.metadata ?? {}
    t.equal(meta['x402.payment.status'], 'payment-failed')
    t.match(meta['x402.payment.receipts'], [{ success: false }])
    t.match(JSON.stringify(task.artifacts), /the shouting feed is down/)
    const rows = await deps.db
      .selectFrom('payments as p')
      .innerJoin('endpoints as e', 'e.id', 'p.endpoint_id')
      .select(['p.status', 'p.failure_reason'])
      .where('e.a2a_skill', '=', 'fail')
      .execute()
    t.match(rows, [{ status: 'voided' }], 'voided, nothing charged')
  })
})
