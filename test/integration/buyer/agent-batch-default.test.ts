/**
 * batch-settlement by default (issue #34 item 8): an agent wallet pays a platform endpoint that
 * offers it beside exact through a channel unless the caller opts out (`batch_settlement: false`,
 * wrapFetch's `batchSettlement: false`, `tollgate fetch --no-batch`, `tollgate mcp --no-batch`);
 * `tollgate fetch --inspect` shows the deposit the default would make; a seller elsewhere that
 * offers batch-settlement is paid exact (the platform checks channel terms on its own proxy only);
 * and a default choice whose deposit cannot be made (the owner's bound, the wallet's balance) gives
 * way to exact, while an explicit `batch_settlement: true` is refused as before.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import t from 'tap'
import { wrapFetch } from '../../../src/client.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { mcpHost } from '../../helpers/mcp-host.js'
import { decodeRequired } from '../../helpers/pay.js'
import { terminal } from '../cli/cli-io.js'

const p = await startBuyerPlatform(t)
const db = p.deps.db
const url = `${p.proxyUrl}/tollgate/toolbox/echo?msg=hi`
const challenge = (await fetch(url)).headers.get('payment-required')!
const offered = decodeRequired(challenge)
if (!offered.accepts.some((a) => a.scheme === 'batch-settlement') || !offered.accepts.some((a) => a.scheme === 'exact'))
  throw new Error('the hosted endpoint offers batch-settlement beside exact')

const payApi = (key: string, body: Record<string, unknown>) =>
  fetch(`${p.webUrl}/v1/agent/payments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
const schemesOf = async (agentId: string) =>
  (
    await db
      .selectFrom('agent_payments')
      .select('scheme')
      .where('agent_id', '=', agentId)
      .orderBy('created_at')
      .execute()
  ).map((r) => r.scheme)
const channelsOf = async (agentId: string) =>
  (await db.selectFrom('agent_channels').select('channel_id').where('agent_id', '=', agentId).execute()).length

t.test('POST /v1/agent/payments: batch-settlement unless batch_settlement: false', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const preview = await (await payApi(agent.key, { url, challenge, dry_run: true })).json()
  t.match(preview, { would_pay: { scheme: 'batch-settlement', amount: '1000', deposit: '100000' }, refusal: null })
  const paid = await (await payApi(agent.key, { url, challenge })).json()
  t.match(paid, { scheme: 'batch-settlement', amount: '1000', deposit: '100000', channel: { max_claimable: '1000' } })

  const outPreview = await (await payApi(agent.key, { url, challenge, batch_settlement: false, dry_run: true })).json()
  t.match(outPreview, { would_pay: { scheme: 'exact', amount: '1000' }, refusal: null })
  t.notOk(outPreview.would_pay.deposit, 'no deposit when opted out')
  const out = await (await payApi(agent.key, { url, challenge, batch_settlement: false })).json()
  t.match(out, { scheme: 'exact', amount: '1000', header: 'PAYMENT-SIGNATURE' })
  t.notOk(out.channel, 'no channel voucher')
  t.notOk(out.deposit)
  t.same(await schemesOf(agent.id), ['batch-settlement', 'exact'])

  const bad = await payApi(agent.key, { url, challenge, batch_settlement: 'no' })
  t.equal(bad.status, 400)
  t.match(await bad.json(), { code: 'invalid_parameter', param: 'batch_settlement' })
})

t.test('a seller elsewhere offering batch-settlement is paid exact, never through a channel', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  // the platform's own terms, offered by another origin: the platform cannot check them there
  const elsewhere = 'http://127.0.0.1:9/paid'
  const v2 = { ...offered, resource: { ...offered.resource, url: elsewhere } }
  const theirs = Buffer.from(JSON.stringify(v2)).toString('base64')
  const preview = await (await payApi(agent.key, { url: elsewhere, challenge: theirs, dry_run: true })).json()
  t.match(preview, { would_pay: { scheme: 'exact' }, refusal: null })
  const paid = await (await payApi(agent.key, { url: elsewhere, challenge: theirs })).json()
  t.match(paid, { scheme: 'exact', amount: '1000' })
  t.notOk(paid.channel)
  // asked for explicitly, still not: exact is what can be paid there
  const asked = await (await payApi(agent.key, { url: elsewhere, challenge: theirs, batch_settlement: true })).json()
  t.match(asked, { scheme: 'exact' })
  // batch-settlement alone elsewhere: nothing this platform pays
  const only = Buffer.from(
    JSON.stringify({ ...v2, accepts: v2.accepts.filter((a) => a.scheme === 'batch-settlement') }),
  ).toString('base64')
  const refused = await payApi(agent.key, { url: elsewhere, challenge: only })
  t.equal(refused.status, 422, 'unsupported')
  t.match(await refused.json(), { code: 'unsupported_requirements' })
  t.equal(await channelsOf(agent.id), 0, 'no channel opened')
})

t.test('a default whose deposit cannot be made pays exact; asked for, it is refused', async (t) => {
  // the owner's bound below the price: no deposit allowed
  const bound = await p.agent({ fund: 1_000_000n, caps: { channel_deposit: '500' } })
  const preview = await (await payApi(bound.key, { url, challenge, dry_run: true })).json()
  t.match(preview, { would_pay: { scheme: 'exact' }, refusal: null })
  const paid = await (await payApi(bound.key, { url, challenge })).json()
  t.match(paid, { scheme: 'exact', amount: '1000' })
  const asked = await payApi(bound.key, { url, challenge, batch_settlement: true })
  t.equal(asked.status, 403)
  t.match(await asked.json(), { code: 'spend_cap_exceeded', cap: 'channel_deposit' })

  // a wallet holding less than the default deposit (100 x the price) but enough for a call
  const poor = await p.agent({ fund: 50_000n })
  const poorPreview = await (await payApi(poor.key, { url, challenge, dry_run: true })).json()
  t.match(poorPreview, { would_pay: { scheme: 'exact' }, refusal: null })
  const poorPaid = await (await payApi(poor.key, { url, challenge })).json()
  t.match(poorPaid, { scheme: 'exact', amount: '1000' })
  const poorAsked = await payApi(poor.key, { url, challenge, batch_settlement: true })
  t.equal(poorAsked.status, 402)
  t.match(await poorAsked.json(), { code: 'insufficient_balance' })
  t.equal(await channelsOf(bound.id), 0)
  t.equal(await channelsOf(poor.id), 0)
})

t.test('wrapFetch: batch-settlement by default, exact with batchSettlement: false', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const byDefault = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key })
  const a = await byDefault(url)
  t.equal(a.status, 200, await a.clone().text())
  t.match(a.payment, { success: true, scheme: 'batch-settlement', amount: '1000', deposit: 100_000n })
  const b = await byDefault(url)
  t.equal(b.status, 200)
  t.match(b.payment, { success: true, scheme: 'batch-settlement' })
  t.equal(b.payment!.deposit, undefined, 'the channel holds the first deposit')

  const optedOut = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, batchSettlement: false })
  const c = await optedOut(url)
  t.equal(c.status, 200, await c.clone().text())
  t.match(c.payment, { success: true, scheme: 'exact', amount: '1000' })
  t.same(await schemesOf(agent.id), ['batch-settlement', 'batch-settlement', 'exact'])
  t.equal(await channelsOf(agent.id), 1)
})

t.test('tollgate fetch: --inspect shows the deposit, batch-settlement by default, --no-batch opts out', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const run = terminal({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key }).run

  const look = await run(['fetch', url, '--inspect'])
  t.equal(look.code, 0, look.err)
  t.match(look.out, /would pay 0\.001 USDC to 0x[0-9a-fA-F]{40} on \S+ \(batch-settlement\)/)
  t.match(look.out, /would deposit 0\.1 USDC from the agent wallet into a batch-settlement channel first/)
  const lookOut = await run(['fetch', url, '--inspect', '--no-batch'])
  t.equal(lookOut.code, 0, lookOut.err)
  t.match(lookOut.out, /would pay 0\.001 USDC to 0x[0-9a-fA-F]{40} on \S+ \(exact\)/)
  t.notMatch(lookOut.out, /would deposit/)
  t.equal(await channelsOf(agent.id), 0, 'inspecting opened no channel')

  const paid = await run(['fetch', url])
  t.equal(paid.code, 0, paid.err)
  t.match(paid.err, /^paid 0\.001 USDC to 0x[0-9a-fA-F]{40} from 0x[0-9a-fA-F]{40} through a batch-settlement channel/)
  t.match(paid.err, /deposited 0\.1 USDC from the agent wallet into the channel first/)
  const exact = await run(['--json', 'fetch', url, '--no-batch'])
  t.equal(exact.code, 0, exact.err)
  t.match(JSON.parse(exact.err), { paid: true, scheme: 'exact', amount: '1000' })
  const exactText = await run(['fetch', url, '--no-batch'])
  t.equal(exactText.code, 0, exactText.err)
  t.match(
    exactText.err,
    /transaction (0x[0-9a-f]{64}|pending \(settles asynchronously; tollgate payments status [0-9a-f-]{36}\)) on eip155:84532/,
    'an exact payment names its transaction',
  )
  t.notMatch(exactText.err, /batch-settlement/)
  t.same(await schemesOf(agent.id), ['batch-settlement', 'exact', 'exact'])

  const both = await run(['fetch', url, '--batch', '--no-batch'])
  t.equal(both.code, 1)
  t.match(both.err, /either --batch or --no-batch/)
  t.same(await schemesOf(agent.id), ['batch-settlement', 'exact', 'exact'], 'nothing paid')
})

t.test('tollgate mcp: call_endpoint pays batch-settlement by default, exact with --no-batch', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const env = { TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key }
  const schemeOf = (r: CallToolResult) => (r._meta?.['tollgate/cost'] as { scheme?: string } | undefined)?.scheme
  const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n')

  const byDefault = (await mcpHost(t, env)).client
  const a = (await byDefault.callTool({ name: 'call_endpoint', arguments: { url } })) as CallToolResult
  t.notOk(a.isError, text(a))
  t.equal(schemeOf(a), 'batch-settlement')
  t.match(text(a), /a voucher on a batch-settlement channel, claimed later in batches; 0\.1 USDC deposited/)

  const optedOut = (await mcpHost(t, env, ['--no-batch'])).client
  const b = (await optedOut.callTool({ name: 'call_endpoint', arguments: { url } })) as CallToolResult
  t.notOk(b.isError, text(b))
  t.equal(schemeOf(b), 'exact')
  t.same(await schemesOf(agent.id), ['batch-settlement', 'exact'])
})
