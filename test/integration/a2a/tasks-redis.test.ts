/**
 * A2A tasks live in Redis, not in one proxy's memory: two proxy apps sharing one Redis (and
 * Postgres and chain); a challenge task made on one is read with tasks/get on the other, paid
 * there, and reads as completed on the first; each task's key expires.
 */
import t, { type Test } from 'tap'
import { x402Client } from '@x402/core/client'
import type { PaymentRequired } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm'
import { privateKeyToAccount } from 'viem/accounts'
import { withDevnet } from '../../helpers/devnet.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { X402_A2A_EXTENSION } from '../../helpers/a2a.js'

const devnet = await withDevnet(t)
const payer = privateKeyToAccount(devnet.accounts.demoPayer.privateKey)
const x402 = new x402Client().register('eip155:84532', new ExactEvmScheme(payer))

type Json = Record<string, any>

t.test('a task made on one proxy is read and paid on another', async (t: Test) => {
  const platform = await startTestPlatform(t, { devnet })
  const other = await platform.startProxy()
  const agentA = `${platform.proxyUrl}/tollgate/toolbox/a2a`
  const agentB = `${other.url}/tollgate/toolbox/a2a`
  const rpc = async (url: string, method: string, params: unknown): Promise<Json> => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-a2a-extensions': X402_A2A_EXTENSION },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    })
    t.equal(res.status, 200)
    return (await res.json()) as Json
  }
  const message = (extra: Json) => ({
    message: { kind: 'message', messageId: crypto.randomUUID(), role: 'user', ...extra },
  })

  const challenge = await rpc(
    agentA,
    'message/send',
    message({
      parts: [{ kind: 'data', data: { text: 'abc', algorithms: ['sha256'] } }],
      metadata: { skill: 'hash-generator' },
    }),
  )
  t.equal(challenge.result.status.state, 'input-required')
  const taskId = challenge.result.id as string

  const ttl = await platform.deps.redis.pttl(platform.deps.key('a2a', 'task', taskId))
  t.ok(ttl > 0 && ttl <= 15 * 60_000, `the task's key expires (${ttl} ms)`)

  const got = await rpc(agentB, 'tasks/get', { id: taskId })
  t.same(got.result, challenge.result, 'the other proxy reads the same task')

  const required = challenge.result.status.message.metadata['x402.payment.required'] as PaymentRequired
  const paid = await rpc(
    agentB,
    'message/send',
    message({
      taskId,
      parts: [{ kind: 'text', text: 'Here is the payment.' }],
      metadata: { 'x402.payment.payload': await x402.createPaymentPayload(required) },
    }),
  )
  t.equal(paid.result.status.state, 'completed', JSON.stringify(paid.result.status.message.metadata))
  t.equal(paid.result.id, taskId)
  t.match(JSON.stringify(paid.result.artifacts), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')

  const after = await rpc(agentA, 'tasks/get', { id: taskId })
  t.equal(after.result.status.state, 'completed', 'the first proxy sees it paid')
  t.equal(after.result.history.length, 2, 'both messages')

  const unknown = await rpc(agentB, 'tasks/get', { id: crypto.randomUUID() })
  t.match(unknown, { error: { code: Number, message: /not found/i } })
})
