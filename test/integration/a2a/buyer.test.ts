/**
 * The buyer side of A2A: `tollgate a2a call` and the `call_agent` tool of `tollgate mcp` pay a
 * skill of a Tollgate service's A2A agent from the agent's platform wallet (POST
 * /v1/agent/payments: caps and allowlist enforced), and the marketplace search names the agent.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import t from 'tap'
import { startBuyerPlatform, type BuyerPlatform } from '../../helpers/buyer.js'
import { mcpHost } from '../../helpers/mcp-host.js'
import { terminal } from '../cli/cli-io.js'

const call = (c: Client, name: string, args: Record<string, unknown>) =>
  c.callTool({ name, arguments: args }) as Promise<CallToolResult>
const texts = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n')

const paymentsOf = (p: BuyerPlatform, agentId: string) =>
  p.deps.db
    .selectFrom('agent_payments')
    .select(['amount', 'status', 'url'])
    .where('agent_id', '=', agentId)
    .orderBy('created_at')
    .execute()

t.test('paying A2A skills from the agent wallet: the CLI and the call_agent tool', async (t) => {
  const p = await startBuyerPlatform(t)
  const [rich, perTx] = await Promise.all([
    p.agent({ fund: 1_000_000n, caps: { daily: '100000' } }),
    p.agent({ fund: 1_000_000n, caps: { per_transaction: '500' } }),
  ])
  const card = `${p.proxyUrl}/tollgate/toolbox/a2a/.well-known/agent-card.json`
  const envOf = (a: { key: string }) => ({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: a.key })

  t.test('tollgate a2a call pays the skill and prints the answer and the receipt', async (t) => {
    const term = terminal(envOf(rich))
    const r = await term.run(['a2a', 'call', card, 'echo', '--input', '{"msg":"hi a2a"}'])
    t.equal(r.code, 0, r.err)
    t.same(JSON.parse(r.out), { echo: { msg: 'hi a2a' } })
    // the platform's own agent offers batch-settlement beside exact: paid through a channel by default
    t.match(r.err, /paid 0\.001 USDC to 0x[0-9a-fA-F]{40} from 0x[0-9a-fA-F]{40} \(batch-settlement\)/)
    t.match(await paymentsOf(p, rich.id), [{ amount: '1000', url: `${p.proxyUrl}/tollgate/toolbox/echo` }])

    const json = await term.run(['--json', 'a2a', 'call', card, 'echo', '--input', '{"msg":"x"}'])
    t.equal(json.code, 0)
    t.match(JSON.parse(json.err), { object: 'receipt', paid: true, amount: '1000', state: 'completed' })

    // --no-batch: exact
    const exact = await term.run(['a2a', 'call', card, 'echo', '--input', '{"msg":"e"}', '--no-batch'])
    t.equal(exact.code, 0, exact.err)
    t.match(exact.err, /paid 0\.001 USDC to 0x[0-9a-fA-F]{40} from 0x[0-9a-fA-F]{40} \(exact\)/)

    const bad = await term.run(['a2a', 'call', card, 'echo', '--input', '[1]'])
    t.equal(bad.code, 1)
    t.match(bad.err + bad.out, /--input must be a JSON object/)
  })

  t.test('over the cap: refused by the platform, exit 2, nothing paid', async (t) => {
    const r = await terminal(envOf(perTx)).run(['a2a', 'call', card, 'echo', '--input', '{"msg":"no"}'])
    t.equal(r.code, 2, r.err + r.out)
    t.match(r.err + r.out, /spend_cap_exceeded|per-transaction/)
    t.same(await paymentsOf(p, perTx.id), [])
  })

  const { client } = await mcpHost(t, envOf(rich))
  t.test('search_marketplace names the A2A agent; call_agent pays its skill and says what it cost', async (t) => {
    const found = await call(client, 'search_marketplace', { query: 'echo' })
    const ep = (found.structuredContent as { endpoints: Array<{ call_agent?: unknown }> }).endpoints[0]!
    t.same(ep.call_agent, { agent_card_url: card, skill: 'echo' })
    t.match(texts(found), /A2A: skill echo of /)

    const r = await call(client, 'call_agent', { agent_card_url: card, skill: 'echo', input: { msg: 'tool' } })
    t.notOk(r.isError, texts(r))
    t.same(r.structuredContent, { echo: { msg: 'tool' } })
    t.match(r._meta?.['tollgate/cost'], { charged: true, amount: '1000' })
    t.match(texts(r), /0\.001 USDC/)

    const unknown = await call(client, 'call_agent', { agent_card_url: card, skill: 'nope', input: {} })
    t.equal(unknown.isError, true)
    t.match(texts(unknown), /no skill "nope"/)
  })
})
