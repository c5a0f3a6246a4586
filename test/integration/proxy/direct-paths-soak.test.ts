import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t from 'tap'
import { x402Client } from '@x402/core/client'
import type { PaymentRequired } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm'
import { privateKeyToAccount } from 'viem/accounts'
import { X402_A2A_EXTENSION } from '../../helpers/a2a.js'
import { withDevnet } from '../../helpers/devnet.js'
import { startTestPlatform } from '../../helpers/platform.js'

// The MCP and A2A direct paths (proxy/mcp-direct.ts, the A2A DirectRequestHandler) answer paid calls
// without the SDKs' per-message machinery; this calls each many times in one proxy process: every
// call paid once and served, a ledger row for each, no call left behind, and (TOLLGATE_SOAK=1, 1,000
// calls a path) the proxy's heap flat between the middle and the end of the run. CI runs 60 a path.

const SOAK = process.env.TOLLGATE_SOAK === '1'
const CALLS = SOAK ? 1000 : 60
const CONCURRENCY = 4

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
const heapMb = () => {
  gc()
  return process.memoryUsage().heapUsed / 2 ** 20
}

const devnet = await withDevnet(t)
const payer = privateKeyToAccount(devnet.accounts.demoPayer.privateKey)
const x402 = new x402Client().register('eip155:84532', new ExactEvmScheme(payer))
const platform = await startTestPlatform(t, { devnet, env: { TOLLGATE_MASTER_KEY: '42'.repeat(32) } })

const HASH_INPUT = { text: 'soak', algorithms: ['sha256'] }
type Json = Record<string, any>

async function postJson(url: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: (text.startsWith('{') ? JSON.parse(text) : { text }) as Json }
}

/** `n` calls of `call`, `CONCURRENCY` at a time; the heap measured after the first half and at the end */
async function run(call: (i: number) => Promise<boolean>) {
  let next = 0
  let served = 0
  let mid = 0
  const worker = async () => {
    for (let i = next++; i < CALLS; i = next++) {
      if (await call(i)) served++
      if (i === CALLS / 2) mid = heapMb()
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  return { served, growthMb: heapMb() - mid }
}

/** the payments recorded since `since` for the endpoint at the end of `resource` */
const ledgerRows = (since: Date, slug: string) =>
  platform.deps.db
    .selectFrom('payments')
    .select(['status'])
    .where('created_at', '>=', since)
    .where('resource', 'like', `%/${slug}`)
    .execute()

t.test(`MCP direct path: ${CALLS} paid tools/call in one process`, async (t) => {
  const url = `${platform.proxyUrl}/tollgate/toolbox/mcp`
  const headers = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' }
  const call = (id: number, meta?: Json) =>
    postJson(
      url,
      {
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'hash-generator', arguments: HASH_INPUT, ...(meta ? { _meta: meta } : {}) },
      },
      headers,
    )
  const unpaid = await call(0)
  const required = unpaid.body.result?.structuredContent as PaymentRequired
  t.equal(required?.x402Version, 2, 'the challenge')
  const since = new Date()
  const { served, growthMb } = await run(async (i) => {
    const a = await call(i + 1, { 'x402/payment': await x402.createPaymentPayload(required) })
    return a.status === 200 && !a.body.result?.isError && a.body.result?._meta?.['x402/payment-response']?.success
  })
  t.equal(served, CALLS, 'every call paid and served')
  const rows = await ledgerRows(since, 'hash-generator')
  t.equal(rows.length, CALLS, 'one ledger row a call')
  t.comment(`heap growth from the middle to the end: ${growthMb.toFixed(1)} MB`)
  if (SOAK) t.ok(growthMb < 32, `the heap stays flat (${growthMb.toFixed(1)} MB)`)
})

t.test(`A2A direct path: ${CALLS} paid message/send in one process`, async (t) => {
  const url = `${platform.proxyUrl}/tollgate/toolbox/a2a`
  const headers = { 'x-a2a-extensions': X402_A2A_EXTENSION }
  const send = (metadata: Json) =>
    postJson(
      url,
      {
        jsonrpc: '2.0',
        id: 'soak',
        method: 'message/send',
        params: {
          message: {
            kind: 'message',
            messageId: crypto.randomUUID(),
            role: 'user',
            parts: [{ kind: 'data', data: HASH_INPUT }],
            metadata: { skill: 'hash-generator', ...metadata },
          },
        },
      },
      headers,
    )
  const unpaid = await send({})
  const task = (unpaid.body.result?.task ?? unpaid.body.result) as Json
  const required = task?.status?.message?.metadata?.['x402.payment.required'] as PaymentRequired
  t.equal(required?.x402Version, 2, 'the challenge')
  const since = new Date()
  const { served, growthMb } = await run(async () => {
    const a = await send({ 'x402.payment.payload': await x402.createPaymentPayload(required) })
    const r = (a.body.result?.task ?? a.body.result) as Json
    return a.status === 200 && r?.status?.state === 'completed'
  })
  t.equal(served, CALLS, 'every call paid and served')
  const rows = await ledgerRows(since, 'hash-generator')
  t.equal(rows.length, CALLS, 'one ledger row a call')
  t.comment(`heap growth from the middle to the end: ${growthMb.toFixed(1)} MB`)
  if (SOAK) t.ok(growthMb < 32, `the heap stays flat (${growthMb.toFixed(1)} MB)`)
})
