import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { x402Client } from '@x402/core/client'
import type { PaymentRequired } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm'
import { privateKeyToAccount } from 'viem/accounts'
import { withDevnet } from '../../helpers/devnet.js'
import { startTestPlatform } from '../../helpers/platform.js'

// The direct path (mcp-direct.ts) answers initialize, tools/list and tools/call without the SDK's
// Server; a second proxy on the same platform answers every message through the SDK's. The same
// requests to both must be answered the same: status, content type, session header and body bytes
// (a paid call's receipt names its own payment: its transaction and payment id are masked).

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')
const devnet = await withDevnet(t)
const payer = privateKeyToAccount(devnet.accounts.demoPayer.privateKey)
const x402 = new x402Client().register('eip155:84532', new ExactEvmScheme(payer))

const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-06-18',
}

interface Answer {
  status: number
  contentType: string | null
  sessionId: string | null
  /** content-length, or chunked */
  framing: string | null
  body: string
}

async function post(url: string, body: string, headers: Record<string, string> = HEADERS): Promise<Answer> {
  const res = await fetch(url, { method: 'POST', headers, body })
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    sessionId: res.headers.get('mcp-session-id'),
    framing: res.headers.get('content-length') ?? res.headers.get('transfer-encoding'),
    body: await res.text(),
  }
}

const rpc = (id: unknown, method: string, params?: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) })
const echo = (args: Record<string, unknown>, meta?: Record<string, unknown>) =>
  rpc(7, 'tools/call', { name: 'echo', arguments: args, ...(meta ? { _meta: meta } : {}) })

const masked = (body: string) =>
  body.replace(/"(transaction|paymentId)":"[^"]*"/g, '"$1":"…"').replace(/"payer":"0x[0-9a-fA-F]{40}"/g, '"payer":"…"')

t.test('the direct path answers as the SDK does', async (t) => {
  // the fixture handlers: the `echo` tool answers its arguments
  const platform = await startTestPlatform(t, {
    devnet,
    env: { TOLLGATE_MASTER_KEY: '42'.repeat(32) },
    proxy: { handlersDir: fixtures },
  })
  const sdkProxy = await platform.startProxy({ mcpDirect: false })
  const direct = `${platform.proxyUrl}/tollgate/toolbox/mcp`
  const sdk = `${sdkProxy.url}/tollgate/toolbox/mcp`

  const same = async (
    name: string,
    body: string | ((path: 'direct' | 'sdk') => Promise<string>),
    headers = HEADERS,
  ) => {
    const [a, b] = [
      await post(direct, typeof body === 'string' ? body : await body('direct'), headers),
      await post(sdk, typeof body === 'string' ? body : await body('sdk'), headers),
    ]
    t.same({ ...a, body: masked(a.body) }, { ...b, body: masked(b.body) }, name)
    return a
  }

  const init = {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'tollgate-test', version: '1.0.0' },
  }
  const initialized = await same('initialize', rpc(0, 'initialize', init))
  t.match(JSON.parse(initialized.body), {
    result: { protocolVersion: '2025-06-18', serverInfo: { name: 'tollgate/toolbox' } },
  })
  await same(
    'initialize asking for an unknown version',
    rpc('a', 'initialize', { ...init, protocolVersion: '1999-01-01' }),
  )
  await same('initialize without its params', rpc(1, 'initialize'))
  await same('initialize without the protocol header', rpc(1, 'initialize', init), {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  } as typeof HEADERS)

  const listed = await same('tools/list', rpc(2, 'tools/list'))
  t.ok(
    (JSON.parse(listed.body).result.tools as { name: string }[]).some((x) => x.name === 'echo'),
    'the tools listed',
  )
  await same('tools/list with a string id and a cursor', rpc('list-1', 'tools/list', { cursor: 'x' }))
  await same('tools/list with a bad cursor', rpc(3, 'tools/list', { cursor: 5 }))

  const unpaid = await same('tools/call unpaid: the challenge', echo({ msg: 'hi', n: 2 }))
  const required = JSON.parse(unpaid.body).result.structuredContent as PaymentRequired
  t.equal(required.error, 'payment_required')

  const paid = await same('tools/call paid', async () =>
    echo({ msg: 'hi', n: 2 }, { 'x402/payment': await x402.createPaymentPayload(required) }),
  )
  t.match(JSON.parse(paid.body), { result: { structuredContent: { echo: { msg: 'hi', n: 2 } } } })
  t.notOk(JSON.parse(paid.body).result.isError, 'served')

  const refused = await same('tools/call with a payment whose signature is not the payer’s', async () => {
    const p = await x402.createPaymentPayload(required)
    const payload = { ...(p.payload as Record<string, unknown>), signature: `0x${'11'.repeat(65)}` }
    return echo({ msg: 'hi', n: 2 }, { 'x402/payment': { ...p, payload } })
  })
  t.equal(JSON.parse(refused.body).result.isError, true, 'refused')
  await same('tools/call with a payment that is not one', echo({ msg: 'hi' }, { 'x402/payment': 'nope' }))
  await same('tools/call with arguments the schema refuses', echo({ msg: 'x'.repeat(200) }))
  await same('tools/call of an unknown tool', rpc(8, 'tools/call', { name: 'nope', arguments: {} }))
  await same('tools/call without a name', rpc(9, 'tools/call', { arguments: {} }))
  await same('tools/call with a name that is a number', rpc(10, 'tools/call', { name: 5 }))
  await same('tools/call with arguments that are a list', rpc(11, 'tools/call', { name: 'echo', arguments: [1] }))
  await same('tools/call asking for a task', rpc(12, 'tools/call', { name: 'echo', arguments: {}, task: { ttl: 5 } }))

  // what the direct path leaves to the SDK, and what it refuses as the SDK's transport does
  await same('ping', rpc(13, 'ping'))
  await same('a notification', JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))
  await same('a batch', JSON.stringify([JSON.parse(rpc(14, 'tools/list')), JSON.parse(rpc(15, 'ping'))]))
  await same('an unknown method', rpc(16, 'resources/list'))
  await same('a null id', rpc(null, 'tools/list'))
  await same('no jsonrpc version', JSON.stringify({ id: 17, method: 'tools/list' }))
  await same('a body that is not JSON', '{"jsonrpc":')
  await same('a body with a byte-order mark', `\ufeff${rpc(18, 'tools/list')}`)
  await same('an empty object', '{}')
  await same('JSON that is a string', '"tools/list"')
  await same('an unsupported protocol header', rpc(19, 'tools/list'), {
    ...HEADERS,
    'mcp-protocol-version': '1999-01-01',
  })
  await same('no event-stream in accept', rpc(20, 'tools/list'), { ...HEADERS, accept: 'application/json' })
  await same('a text body', rpc(21, 'tools/list'), { ...HEADERS, 'content-type': 'text/plain' })
  await same('a JSON content type with a charset', rpc(22, 'tools/list'), {
    ...HEADERS,
    'content-type': 'application/json; charset=utf-8',
  })
})
