/**
 * x402 `sign-in-with-x` over MCP (Tollgate's binding: the proof in `params._meta["sign-in-with-x"]`,
 * the JSON object the SIGN-IN-WITH-X header carries base64-encoded): the challenge of an endpoint
 * with paid access declares the extension as the HTTP 402 does; a wallet that paid signs in and is
 * served with nothing charged; stale, foreign and malformed proofs are tool errors with the
 * extension's reasons; our client (callPaidTool, `tollgate mcp`) signs in where it paid before.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import t, { type Test } from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../../../src/chain/devnet.js'
import { parseChallenge } from '../../../src/client/challenge.js'
import { callPaidTool, paymentRequiredOf } from '../../../src/client/pay-mcp-tool.js'
import { signInHeader, signInOffer } from '../../../src/client/sign-in.js'
import { localPayer, platformPayer } from '../../../src/client/wrap-fetch.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { until } from '../../helpers/until.js'
import { mcpHost } from '../../helpers/mcp-host.js'
import { endAccessGrants } from '../../helpers/access-grants.js'

const p = await startBuyerPlatform(t)
const db = p.deps.db
const echo = `${p.proxyUrl}/tollgate/toolbox/echo`
const mcpUrl = `${p.proxyUrl}/tollgate/toolbox/mcp`
await db.updateTable('endpoints').set({ access_minutes: 10 }).where('slug', '=', 'echo').execute()
await announceRegistryChange(p.deps, {})
await until('the proxy to offer sign-in on echo', async () => {
  const res = await fetch(`${echo}?msg=x`)
  return decodeRequired(res.headers.get('payment-required')).extensions?.['sign-in-with-x'] !== undefined
})

/** The official MCP client over Streamable HTTP, connected to the toolbox's MCP server. */
async function connect(t: Test): Promise<Client> {
  const client = new Client({ name: 'tollgate-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)))
  t.teardown(() => client.close())
  return client
}

const callEcho = (client: Client, msg: string, meta?: Record<string, unknown>) =>
  client.callTool({ name: 'echo', arguments: { msg }, ...(meta ? { _meta: meta } : {}) }) as Promise<CallToolResult>

const payments = (payer: string) =>
  db.selectFrom('payments').select(['id', 'status']).where('payer', '=', payer.toLowerCase()).execute()

/** A funded local key. */
async function buyer() {
  const privateKey = generatePrivateKey()
  const account = privateKeyToAccount(privateKey)
  await mintUsdc(p.devnet.rpcUrl, account.address, 1_000_000n)
  return { privateKey, account }
}

/** A proof for a fresh challenge of `client`'s echo tool, signed by `signer` for `address` (the JSON object). */
async function proofFor(client: Client, signer: ReturnType<typeof privateKeyToAccount>, address = signer.address) {
  const required = paymentRequiredOf(await callEcho(client, 'challenge'))!
  const offer = signInOffer([{ parsed: parseChallenge(required) }], mcpUrl)!
  const b64 = await signInHeader(offer, address, (message) => signer.signMessage({ message }))
  return { b64, json: JSON.parse(Buffer.from(b64, 'base64').toString('utf8')) as Record<string, unknown> }
}

/** The refusal a sign-in got: a tool error carrying the PaymentRequired with the reason and a fresh sign-in challenge. */
function refusal(t: Test, r: CallToolResult): string {
  t.equal(r.isError, true, 'a tool error')
  const required = paymentRequiredOf(r)
  t.ok(required, 'with the PaymentRequired')
  t.same(JSON.parse((r.content[0] as { text: string }).text), r.structuredContent, 'in both places')
  t.ok((required!.extensions as Record<string, unknown>)['sign-in-with-x'], 'offering sign-in again')
  return required!.error as string
}

t.test('the MCP challenge declares sign-in-with-x as the HTTP 402 does', async (t) => {
  const client = await connect(t)
  const r = await callEcho(client, 'x')
  const required = paymentRequiredOf(r)!
  t.same(JSON.parse((r.content[0] as { text: string }).text), r.structuredContent, 'content[0].text is the JSON')
  const http = decodeRequired((await fetch(`${echo}?msg=x`)).headers.get('payment-required'))
  const mcp = (required.extensions as Record<string, { info: Record<string, unknown> }>)['sign-in-with-x']!
  const web = http.extensions!['sign-in-with-x'] as { info: Record<string, unknown> }
  const { nonce: n1, issuedAt: _i1, expirationTime: _e1, ...mcpInfo } = mcp.info
  const { nonce: n2, issuedAt: _i2, expirationTime: _e2, ...webInfo } = web.info
  t.same(mcpInfo, webInfo, 'the same domain, uri and statement')
  t.same({ ...mcp, info: {} }, { ...web, info: {} }, 'the same chains and schema')
  t.not(n1, n2, 'a fresh nonce each time')
  t.equal(mcp.info.uri, echo, 'bound to the resource')
  t.match((r.content[1] as { text: string }).text, /params\._meta\["sign-in-with-x"\]/, 'the reader is told where')

  const naps = paymentRequiredOf(
    (await client.callTool({ name: 'naps', arguments: { msg: 'x', ms: 1 } })) as CallToolResult,
  )!
  t.equal(naps.extensions, undefined, 'an endpoint without paid access declares no sign-in')
})

t.test('a wallet that paid over MCP signs in: served, nothing charged', async (t) => {
  const client = await connect(t)
  const b = await buyer()
  const paidAccess = new Set<string>()
  const payer = localPayer({ privateKey: b.privateKey })
  const opts = { serverUrl: mcpUrl, paidAccess }
  const first = await callPaidTool(client, payer, { name: 'echo', arguments: { msg: 'one' } }, opts)
  t.equal(first.payment?.success, true, 'paid')
  t.same([...paidAccess], [echo], 'remembered')
  t.equal((await payments(b.account.address)).length, 1)

  const second = await callPaidTool(client, payer, { name: 'echo', arguments: { msg: 'two' } }, opts)
  t.notOk(second.result.isError, JSON.stringify(second.result.content))
  t.same(second.result.structuredContent, { echo: { msg: 'two' } })
  t.equal(second.payment, undefined, 'no payment')
  t.same(second.signedIn, { payer: b.account.address, uri: echo })
  t.equal(second.result._meta?.['x402/payment-response'], undefined, 'no receipt')
  t.equal((await payments(b.account.address)).length, 1, 'one payment in the ledger')

  // the proof by hand, in both forms
  const asObject = await callEcho(client, 'object', { 'sign-in-with-x': (await proofFor(client, b.account)).json })
  t.notOk(asObject.isError, JSON.stringify(asObject.content))
  t.same(asObject.structuredContent, { echo: { msg: 'object' } })
  const asString = await callEcho(client, 'base64', { 'sign-in-with-x': (await proofFor(client, b.account)).b64 })
  t.same(asString.structuredContent, { echo: { msg: 'base64' } }, 'the base64 string form is taken too')
  t.equal((await payments(b.account.address)).length, 1, 'still one payment')

  const proof = await proofFor(client, b.account)
  t.notOk((await callEcho(client, 'once', { 'sign-in-with-x': proof.json })).isError)
  t.equal(
    refusal(t, await callEcho(client, 'twice', { 'sign-in-with-x': proof.json })),
    'invalid_siwx_nonce',
    'a proof is used once',
  )
  // each served sign-in is recorded for the history, as over HTTP (the refused one is not)
  const [paid] = await payments(b.account.address)
  const uses = await db
    .selectFrom('access_uses')
    .select(['payment_id', 'method'])
    .where('payer', '=', b.account.address.toLowerCase())
    .execute()
  t.same(
    uses.map((u) => u.payment_id),
    [paid!.id, paid!.id, paid!.id, paid!.id],
    'four sign-in uses, each naming the payment that bought the access',
  )
})

t.test('refusals: expired access, foreign wallets, malformed proofs', async (t) => {
  const client = await connect(t)
  const b = await buyer()
  const paidAccess = new Set<string>()
  const payer = localPayer({ privateKey: b.privateKey })
  await callPaidTool(client, payer, { name: 'echo', arguments: { msg: 'pay' } }, { serverUrl: mcpUrl, paidAccess })

  const stranger = privateKeyToAccount(generatePrivateKey())
  t.equal(
    refusal(t, await callEcho(client, 'x', { 'sign-in-with-x': (await proofFor(client, stranger)).json })),
    'siwx_no_paid_access',
    'a wallet that never paid',
  )
  t.equal(
    refusal(
      t,
      await callEcho(client, 'x', { 'sign-in-with-x': (await proofFor(client, stranger, b.account.address)).json }),
    ),
    'invalid_siwx_signature',
    "the payer's address signed by another key",
  )
  const elsewhere = (await proofFor(client, b.account)).json
  t.equal(
    refusal(
      t,
      await callEcho(client, 'x', { 'sign-in-with-x': { ...elsewhere, uri: `${p.proxyUrl}/tollgate/toolbox/naps` } }),
    ),
    'invalid_siwx_uri_mismatch',
    'a proof for another resource',
  )
  for (const [bad, what] of [
    ['not base64!', 'a string that is not base64'],
    [42, 'a number'],
    [null, 'null'],
    [{ address: b.account.address }, 'an object missing fields'],
    [[1, 2], 'an array'],
  ] as const) {
    const r = await callEcho(client, 'x', { 'sign-in-with-x': bad })
    t.equal(refusal(t, r), 'invalid_siwx_header', what)
  }

  await endAccessGrants(p.deps, b.account.address)
  const stale = await proofFor(client, b.account)
  const expired = await callEcho(client, 'x', { 'sign-in-with-x': stale.json })
  t.equal(refusal(t, expired), 'siwx_no_paid_access', 'the access ran out')
  t.match((expired.content[1] as { text: string }).text, /holds no access/)
  t.equal((await payments(b.account.address)).length, 1, 'no refusal charged anything')

  // our client: the refused sign-in is paid as usual, and the new payment gives a new access
  const again = await callPaidTool(
    client,
    payer,
    { name: 'echo', arguments: { msg: 'again' } },
    { serverUrl: mcpUrl, paidAccess },
  )
  t.equal(again.payment?.success, true, 'paid again')
  t.equal((await payments(b.account.address)).length, 2)
  const third = await callPaidTool(
    client,
    payer,
    { name: 'echo', arguments: { msg: 'three' } },
    { serverUrl: mcpUrl, paidAccess },
  )
  t.ok(third.signedIn, 'signed in on the new access')
})

t.test('callPaidTool never signs a challenge bound to another origin than the server it called', async (t) => {
  const client = await connect(t)
  const b = await buyer()
  const paidAccess = new Set([echo])
  const r = await callPaidTool(
    client,
    localPayer({ privateKey: b.privateKey }),
    { name: 'echo', arguments: { msg: 'x' } },
    { serverUrl: 'http://elsewhere.example/tollgate/toolbox/mcp', paidAccess, signIn: 'always' },
  )
  t.equal(r.signedIn, undefined)
  t.equal(r.payment?.success, true, 'paid instead')
})

t.test('platform mode: the agent wallet pays once over MCP, then signs in (tollgate mcp --remote too)', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const client = await connect(t)
  const payer = platformPayer(fetch, { baseUrl: p.webUrl, agentKey: agent.key })
  const paidAccess = new Set<string>()
  const first = await callPaidTool(
    client,
    payer,
    { name: 'echo', arguments: { msg: 'one' } },
    { serverUrl: mcpUrl, paidAccess },
  )
  t.ok(first.payment?.agentPaymentId, 'paid from the agent wallet')
  const second = await callPaidTool(
    client,
    payer,
    { name: 'echo', arguments: { msg: 'two' } },
    { serverUrl: mcpUrl, paidAccess },
  )
  t.same(second.signedIn, { payer: agent.address, uri: echo })
  t.same(second.result.structuredContent, { echo: { msg: 'two' } })

  // tollgate mcp --remote, as an agent host runs it: a new agent pays the first call, signs in on the second
  const fresh = await p.agent({ fund: 1_000_000n })
  const { client: host } = await mcpHost(t, { TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: fresh.key }, [
    '--remote',
    mcpUrl,
  ])
  const cost = (r: CallToolResult) => r._meta?.['tollgate/cost'] as Record<string, unknown>
  const a = (await host.callTool({ name: 'echo', arguments: { msg: 'a' } })) as CallToolResult
  t.match(cost(a), { charged: true, amount: '1000' })
  const b = (await host.callTool({ name: 'echo', arguments: { msg: 'b' } })) as CallToolResult
  t.notOk(b.isError)
  t.match(b.structuredContent, { echo: { msg: 'b' } })
  t.match(cost(b), { charged: false, amount: '0', signed_in: { payer: fresh.address, uri: echo } })
  t.match((b.content.at(-1) as { text: string }).text, /cost: nothing \(signed in as 0x[0-9a-fA-F]{40}/)
  const agentPayments = await db.selectFrom('agent_payments').select('id').where('agent_id', '=', fresh.id).execute()
  t.equal(agentPayments.length, 1, 'one agent payment: the sign-in spent nothing')
  t.equal((await payments(fresh.address)).length, 1, 'one payment in the ledger')
})

t.test("tollgate mcp's call_endpoint pays an endpoint with paid access once, then signs in", async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const { client: host } = await mcpHost(t, { TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key })
  const cost = (r: CallToolResult) => r._meta?.['tollgate/cost'] as Record<string, unknown>
  const call = async (msg: string) =>
    (await host.callTool({ name: 'call_endpoint', arguments: { url: `${echo}?msg=${msg}` } })) as CallToolResult
  const a = await call('a')
  t.notOk(a.isError)
  t.match(cost(a), { charged: true, amount: '1000' })
  const b = await call('b')
  t.notOk(b.isError)
  t.match(b.structuredContent, { echo: { msg: 'b' } })
  t.match(cost(b), { charged: false, amount: '0', signed_in: { payer: agent.address } })
  const agentPayments = await db.selectFrom('agent_payments').select('id').where('agent_id', '=', agent.id).execute()
  t.equal(agentPayments.length, 1, 'one agent payment: the second call signed in')
})
