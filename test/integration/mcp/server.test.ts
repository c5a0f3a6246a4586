import { createServer } from 'node:http'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { x402Client } from '@x402/core/client'
import type { PaymentRequired } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm'
import { privateKeyToAccount } from 'viem/accounts'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { createPublishing } from '../../../src/services/publishing/publishing.js'
import { createSyncSettlement } from '../../../src/services/settlement/sync.js'
import { withDevnet } from '../../helpers/devnet.js'
import { startTestPlatform, type TestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'
import { newPayer, walletFor } from '../../helpers/settlement.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')
const devnet = await withDevnet(t)
const payer = privateKeyToAccount(devnet.accounts.demoPayer.privateKey)
// the official x402 client makes every payment below, as an MCP buyer would
const x402 = new x402Client().register('eip155:84532', new ExactEvmScheme(payer))

/** The official MCP client over Streamable HTTP, connected to a service's MCP server. */
async function connect(t: Test, url: string): Promise<Client> {
  const client = new Client({ name: 'tollgate-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  t.teardown(() => client.close())
  return client
}

const call = (client: Client, name: string, args: Record<string, unknown>, payment?: unknown) =>
  client.callTool({
    name,
    arguments: args,
    ...(payment === undefined ? {} : { _meta: { 'x402/payment': payment } }),
  }) as Promise<CallToolResult>

/** The PaymentRequired of a tool result, checked to be in both places the spec puts it. */
function paymentRequiredOf(t: Test, r: CallToolResult): PaymentRequired {
  t.equal(r.isError, true, 'isError')
  const text = (r.content[0] as { type: string; text: string }).text
  t.same(JSON.parse(text), r.structuredContent, 'content[0].text is the JSON of structuredContent')
  return r.structuredContent as unknown as PaymentRequired
}

const rowsOf = (platform: TestPlatform, slug: string) =>
  platform.deps.db
    .selectFrom('payments as p')
    .innerJoin('endpoints as e', 'e.id', 'p.endpoint_id')
    .select(['p.id', 'p.status', 'p.nonce', 'p.failure_reason'])
    .where('e.slug', '=', slug)
    .where('p.payer', '=', payer.address.toLowerCase())
    .execute()

t.test('tollgate/toolbox as a paid MCP server', async (t) => {
  const platform = await startTestPlatform(t, {
    devnet,
    env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true', TOLLGATE_MASTER_KEY: '42'.repeat(32) },
  })
  const client = await connect(t, `${platform.proxyUrl}/tollgate/toolbox/mcp`)

  t.test('tools/list gives every endpoint of the service as a tool, priced', async (t) => {
    const { tools } = await client.listTools()
    const published = await platform.deps.db
      .selectFrom('endpoints as e')
      .innerJoin('services as s', 's.id', 'e.service_id')
      .innerJoin('sellers as sl', 'sl.id', 's.seller_id')
      .select('e.slug')
      .where('sl.namespace', '=', 'tollgate')
      .where('s.name', '=', 'toolbox')
      .where('e.enabled', '=', true)
      .execute()
    t.ok(published.length > 50, `${published.length} endpoints`)
    t.same(
      tools.map((x) => x.name).sort(),
      published.map((e) => e.slug).sort(),
      'one tool per endpoint, named by its slug',
    )
    const hash = tools.find((x) => x.name === 'hash-generator')!
    t.equal(hash.inputSchema.type, 'object')
    t.ok(hash.inputSchema.properties?.text, 'the input schema is the endpoint’s')
    t.match(hash.description, /0\.001 USDC per call/)
    t.equal((hash._meta?.['tollgate/price'] as { amount: string }).amount, '1000')
    t.equal((hash._meta?.['x402/payment-requirements'] as { amount: string }[])[0]!.amount, '1000')
  })

  let required: PaymentRequired
  t.test('an unpaid call is answered with the PaymentRequired as the spec has it', async (t) => {
    const r = await call(client, 'hash-generator', { text: 'abc', algorithms: ['sha256'] })
    required = paymentRequiredOf(t, r)
    t.equal(required.x402Version, 2)
    t.equal(required.error, 'payment_required')
    t.equal(required.resource.url, `${platform.proxyUrl}/tollgate/toolbox/hash-generator`)
    t.equal(required.accepts[0]!.amount, '1000')
    t.equal(required.accepts[0]!.network, 'eip155:84532')
    t.same(await rowsOf(platform, 'hash-generator'), [], 'nothing recorded')
  })

  let payment: Awaited<ReturnType<typeof x402.createPaymentPayload>>
  t.test('a paid call is served, with the settlement response in _meta and a ledger row', async (t) => {
    payment = await x402.createPaymentPayload(required)
    const r = await call(client, 'hash-generator', { text: 'abc', algorithms: ['sha256'] }, payment)
    t.notOk(r.isError, JSON.stringify(r.content))
    t.match((r.content[0] as { text: string }).text, 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    t.ok(r.structuredContent, 'a JSON answer is also structuredContent')
    const receipt = r._meta?.['x402/payment-response'] as {
      success: boolean
      network: string
      payer: string
      paymentId: string
    }
    t.equal(receipt.success, true)
    t.equal(receipt.network, 'eip155:84532')
    t.equal(receipt.payer.toLowerCase(), payer.address.toLowerCase())
    const rows = await rowsOf(platform, 'hash-generator')
    t.equal(rows.length, 1)
    t.equal(rows[0]!.id, receipt.paymentId)
    t.equal(rows[0]!.status, 'served')
  })

  t.test('the same payment again is refused as a replay, nothing more recorded', async (t) => {
    const r = await call(client, 'hash-generator', { text: 'abc', algorithms: ['sha256'] }, payment)
    const again = paymentRequiredOf(t, r)
    t.equal(again.error, 'invalid_exact_evm_nonce_already_used')
    t.equal((await rowsOf(platform, 'hash-generator')).length, 1)
  })

  t.test('a binary answer is MCP content of its type: a PNG as an image', async (t) => {
    const args = { text: 'https://example.com' }
    const qr = paymentRequiredOf(t, await call(client, 'qr-code-generator', args))
    const r = await call(client, 'qr-code-generator', args, await x402.createPaymentPayload(qr))
    t.notOk(r.isError, JSON.stringify(r.content).slice(0, 200))
    const image = r.content[0] as { type: string; data: string; mimeType: string }
    t.equal(image.type, 'image')
    t.equal(image.mimeType, 'image/png')
    t.equal(Buffer.from(image.data, 'base64').subarray(1, 4).toString(), 'PNG')
    t.ok(r._meta?.['x402/payment-response'])
  })

  t.test('a published seller service is an MCP server too', async (t) => {
    const origin = createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => (body += c.toString()))
      req.on('end', () => {
        if (req.url?.startsWith('/broken'))
          return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"down"}')
        if (req.url?.startsWith('/huge'))
          return void res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(17 * 1024 * 1024))
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ method: req.method, url: req.url, body: body ? JSON.parse(body) : null }))
      })
    })
    await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r))
    t.teardown(() => new Promise((r) => origin.close(r)))
    const originUrl = `http://127.0.0.1:${(origin.address() as { port: number }).port}`
    const { deps } = platform
    const user = await createUsers(deps).create(`mcp-seller-${Date.now()}@example.com`, 'correct horse battery staple')
    const pub = createPublishing(deps)
    const who = { userId: user.id }
    await pub.claimNamespace(who, { namespace: 'acme', display_name: 'Acme' })
    await pub.createService(who, 'acme', { name: 'quotes', pay_to: devnet.accounts.receiver.address })
    const schema = { type: 'object', required: ['symbol'], properties: { symbol: { type: 'string', maxLength: 8 } } }
    await pub.createEndpoint(who, 'acme', 'quotes', {
      slug: 'quote',
      methods: ['POST'],
      price: '2500',
      description: 'A stock quote',
      input_schema: schema,
      upstream_url: `${originUrl}/quote`,
    })
    await pub.createEndpoint(who, 'acme', 'quotes', {
      slug: 'history',
      methods: ['GET'],
      price: '1000',
      upstream_url: `${originUrl}/history`,
    })
    await pub.createEndpoint(who, 'acme', 'quotes', {
      slug: 'broken',
      methods: ['POST'],
      price: '1000',
      upstream_url: `${originUrl}/broken`,
    })
    await pub.createEndpoint(who, 'acme', 'quotes', {
      slug: 'huge',
      methods: ['DELETE'],
      price: '1000',
      upstream_url: `${originUrl}/huge`,
    })
    await until(
      'the proxy knows the service',
      async () => (await platform.proxy.inject({ method: 'POST', url: '/acme/quotes/broken' })).statusCode === 402,
    )

    const seller = await connect(t, `${platform.proxyUrl}/acme/quotes/mcp`)
    const { tools } = await seller.listTools()
    t.same(
      tools.map((x) => x.name),
      ['broken', 'history', 'huge', 'quote'],
    )
    const quote = tools.find((x) => x.name === 'quote')!
    t.same(quote.inputSchema, schema)
    t.match(quote.description, /^A stock quote\. Price: 0\.0025 USDC per call/)

    const unpaid = paymentRequiredOf(t, await call(seller, 'quote', { symbol: 'ACME' }))
    t.equal(unpaid.accepts[0]!.amount, '2500')
    const paid = await call(seller, 'quote', { symbol: 'ACME' }, await x402.createPaymentPayload(unpaid))
    t.notOk(paid.isError, JSON.stringify(paid.content))
    t.same(
      paid.structuredContent,
      { method: 'POST', url: '/quote', body: { symbol: 'ACME' } },
      'the arguments reach the upstream as a JSON body',
    )
    t.ok(paid._meta?.['x402/payment-response'])

    const history = paymentRequiredOf(t, await call(seller, 'history', { symbol: 'ACME', days: 3 }))
    const got = await call(seller, 'history', { symbol: 'ACME', days: 3 }, await x402.createPaymentPayload(history))
    t.same(
      got.structuredContent,
      { method: 'GET', url: '/history?symbol=ACME&days=3', body: null },
      'a GET endpoint gets them as its query',
    )

    const broken = paymentRequiredOf(t, await call(seller, 'broken', {}))
    const failed = await call(seller, 'broken', {}, await x402.createPaymentPayload(broken))
    t.equal(failed.isError, true)
    t.notOk(failed._meta?.['x402/payment-response'], 'no receipt')
    const rows = await rowsOf(platform, 'broken')
    t.equal(rows.length, 1)
    t.equal(rows[0]!.status, 'voided', 'the upstream failed: voided, not charged')

    // an endpoint offering neither POST nor GET is called with what it offers
    const huge = paymentRequiredOf(t, await call(seller, 'huge', {}))
    const tooLarge = await call(seller, 'huge', {}, await x402.createPaymentPayload(huge))
    t.equal(tooLarge.isError, true)
    t.match(tooLarge.structuredContent, { code: 'answer_too_large', message: /call it over HTTP/ })
    t.ok(tooLarge._meta?.['x402/payment-response'], 'served (the upstream answered), so the receipt says what was kept')
  })
})

t.test(
  'a sync endpoint over MCP: the transaction in the receipt; a settlement that fails withholds the answer',
  async (t) => {
    const platform = await startTestPlatform(t, { devnet })
    const { deps } = platform
    await deps.db
      .updateTable('endpoints')
      .set({ settlement_mode: 'sync' })
      .where('slug', '=', 'uuid-generator')
      .execute()
    const { url } = await platform.startProxy({ sync: createSyncSettlement(deps) })
    const client = await connect(t, `${url}/tollgate/toolbox/mcp`)
    const p = await newPayer(platform, 5_000n)
    const own = new x402Client().register('eip155:84532', new ExactEvmScheme(privateKeyToAccount(p.key)))

    const required = paymentRequiredOf(t, await call(client, 'uuid-generator', {}))
    const paid = await call(client, 'uuid-generator', {}, await own.createPaymentPayload(required))
    t.notOk(paid.isError, JSON.stringify(paid.content))
    const receipt = paid._meta?.['x402/payment-response'] as { transaction: string; paymentId: string }
    const row = await deps.db
      .selectFrom('payments')
      .select(['status', 'tx_hash'])
      .where('id', '=', receipt.paymentId)
      .executeTakeFirstOrThrow()
    t.same(
      row,
      { status: 'settled', tx_hash: receipt.transaction },
      'settled before the answer, its transaction in the receipt',
    )

    // the payer empties its wallet; its cached balance still covers a call, which settlement then cannot
    await deps.chain.waitForTransactionReceipt({
      hash: await walletFor(platform, p.key).writeContract({
        address: devnet.usdcAddress,
        abi: usdcAbi,
        functionName: 'transfer',
        args: [devnet.accounts.faucet.address, 4_000n],
      }),
    })
    const failed = await call(client, 'uuid-generator', {}, await own.createPaymentPayload(required))
    const again = paymentRequiredOf(t, failed)
    t.equal(again.error, 'insufficient_funds', 'the PaymentRequired again, the settlement failure its reason')
    t.match((failed.content[1] as { text: string }).text, /withheld; nothing was charged/)
    t.notOk(failed._meta?.['x402/payment-response'], 'no receipt')
    t.equal(failed.content.length, 2, "the tool's own answer does not leave")
    const rows = await deps.db
      .selectFrom('payments')
      .select(['status', 'failure_reason'])
      .where('payer', '=', p.address.toLowerCase())
      .where('status', '!=', 'settled')
      .execute()
    t.same(rows, [{ status: 'failed', failure_reason: 'insufficient_funds' }])
  },
)

t.test('failures and bad input cost nothing', async (t) => {
  const platform = await startTestPlatform(t, {
    devnet,
    proxy: { handlersDir: fixtures },
    env: { HANDLER_TIMEOUT_MS: '60000' },
  })
  const mcpUrl = `${platform.proxyUrl}/tollgate/toolbox/mcp`
  const client = await connect(t, mcpUrl)
  const required = paymentRequiredOf(t, await call(client, 'echo', { msg: 'hi' }))

  t.test('a handler that fails: voided, not charged, its error named', async (t) => {
    const challenge = paymentRequiredOf(t, await call(client, 'throws', {}))
    const r = await call(client, 'throws', {}, await x402.createPaymentPayload(challenge))
    t.equal(r.isError, true)
    t.equal((r.structuredContent as { code: string }).code, 'handler_failed')
    t.notMatch(JSON.stringify(r), /KEY-IN/, 'the handler’s own message does not leave')
    t.notOk(r._meta?.['x402/payment-response'])
    const rows = await rowsOf(platform, 'throws')
    t.equal(rows.length, 1)
    t.equal(rows[0]!.status, 'voided')
  })

  t.test('an unknown tool is a tool error naming it', async (t) => {
    const r = await call(client, 'no-such-tool', {}, await x402.createPaymentPayload(required))
    t.equal(r.isError, true)
    t.equal((r.structuredContent as { code: string }).code, 'not_found')
    t.match((r.content[0] as { text: string }).text, '/tollgate/toolbox/no-such-tool')
  })

  t.test('arguments that fail the schema: a tool error naming the field, nothing recorded', async (t) => {
    const r = await call(client, 'echo', { msg: 'x'.repeat(200) }, await x402.createPaymentPayload(required))
    t.equal(r.isError, true)
    t.match(r.structuredContent, { code: 'invalid_parameter', param: 'msg' })
    const missing = await call(client, 'echo', { n: 1 }, await x402.createPaymentPayload(required))
    t.match(missing.structuredContent, { code: 'invalid_parameter', param: 'msg' })
    t.same(await rowsOf(platform, 'echo'), [])
  })

  t.test('a malformed _meta["x402/payment"]: the PaymentRequired again with the reason', async (t) => {
    const good = await x402.createPaymentPayload(required)
    const cases: [string, unknown, string][] = [
      ['a string', 'not a payload', 'invalid_payload'],
      ['null', null, 'invalid_payload'],
      ['an array', [good], 'invalid_payload'],
      ['x402Version 1', { ...good, x402Version: 1 }, 'invalid_x402_version'],
      ['no accepted', { ...good, accepted: undefined }, 'invalid_payload'],
      [
        'a bad signature',
        { ...good, payload: { ...good.payload, signature: '0x1234' } },
        'invalid_exact_evm_payload_signature',
      ],
      [
        'a forged amount',
        { ...good, accepted: { ...good.accepted, amount: '1' } },
        'invalid_exact_evm_payload_authorization_value',
      ],
      [
        'oversized',
        { ...good, resource: { url: 'https://x.example/', description: 'x'.repeat(20_000) } },
        'payment_header_too_large',
      ],
    ]
    for (const [name, payment, reason] of cases) {
      const r = await call(client, 'echo', { msg: 'hi' }, payment)
      const pr = paymentRequiredOf(t, r)
      t.equal(pr.error, reason, name)
      t.ok(pr.accepts.length > 0, `${name}: the requirements to pay again`)
    }
    t.same(await rowsOf(platform, 'echo'), [], 'nothing recorded')
  })

  t.test('an oversized message: a JSON-RPC error with 413, not a 5xx', async (t) => {
    const res = await fetch(mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'echo', arguments: { msg: 'x'.repeat(2 * 1024 * 1024) } },
      }),
    })
    t.equal(res.status, 413)
    const body = (await res.json()) as { error: { code: number; message: string } }
    t.match(body.error.message, /Payload Too Large/)
  })

  t.test('arguments that are not an object: the SDK’s JSON-RPC error naming them, nothing recorded', async (t) => {
    const res = await fetch(mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: {
          name: 'echo',
          arguments: ['hi'],
          _meta: { 'x402/payment': await x402.createPaymentPayload(required) },
        },
      }),
    })
    t.equal(res.status, 200)
    const body = (await res.json()) as { id: number; error: { code: number; message: string } }
    t.equal(body.id, 7)
    // the low-level SDK Server parses the request before any handler and answers its schema error as -32603
    t.equal(body.error.code, -32603)
    t.match(body.error.message, /arguments[\s\S]*expected record, received array/, 'the message names the problem')
    t.same(await rowsOf(platform, 'echo'), [])
  })

  t.test('not JSON, an unknown service, GET: JSON-RPC errors, 4xx', async (t) => {
    const junk = await fetch(mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{not json',
    })
    t.equal(junk.status, 400)
    t.equal(((await junk.json()) as { error: { code: number } }).error.code, -32700)
    const none = await fetch(`${platform.proxyUrl}/nobody/nothing/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    })
    t.equal(none.status, 404)
    t.match(await none.json(), {
      jsonrpc: '2.0',
      error: { code: -32000, message: 'no published service /nobody/nothing' },
    })
    const get = await fetch(mcpUrl, { headers: { accept: 'text/event-stream' } })
    t.equal(get.status, 405)
  })

  t.test('the server still answers after all of it', async (t) => {
    const r = await call(client, 'echo', { msg: 'still here' }, await x402.createPaymentPayload(required))
    t.notOk(r.isError, JSON.stringify(r.content))
    t.same(r.structuredContent, { echo: { msg: 'still here' } })
    t.same(
      (await rowsOf(platform, 'echo')).map((x) => x.status),
      ['served'],
    )
  })
})
