/**
 * `upto` over MCP with our client (callPaidTool, `tollgate mcp --upto`): a seller upstream charged by
 * usage (X-Tollgate-Charge) is paid from an agent wallet and from a local key for the actual charge,
 * which the receipt states and the chain settles; where upto is not offered the call is paid exact.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import t, { type Test } from 'tap'
import { erc20Abi, maxUint256, type Address } from 'viem'
import { PERMIT2_ADDRESS } from '../../../src/chain/permit2.js'
import { callPaidTool } from '../../../src/client/pay-mcp-tool.js'
import { localPayer, platformPayer } from '../../../src/client/wrap-fetch.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { createPublishing } from '../../../src/services/publishing/publishing.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { meteredUpstream } from '../../helpers/metered.js'
import { newPayer, settleAllOf, walletFor } from '../../helpers/settlement.js'
import { until } from '../../helpers/until.js'
import { mcpHost } from '../../helpers/mcp-host.js'

const MAX = 5000n
const origin = await meteredUpstream(t)
const p = await startBuyerPlatform(t, {
  env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true' },
  proxy: { allowPrivateNetwork: true },
})
const { deps, devnet } = p
const db = deps.db
const seller = await createUsers(deps).create(`mcp-meter-${Date.now()}@example.com`, 'correct horse battery staple')
const pub = createPublishing(deps)
await pub.claimNamespace({ userId: seller.id }, { namespace: 'meter', display_name: 'Meter' })
await pub.createService({ userId: seller.id }, 'meter', { name: 'svc', pay_to: devnet.accounts.receiver.address })
for (const [slug, schemes] of [
  ['metered', ['exact', 'upto']],
  ['fixed', ['exact']],
] as const)
  await pub.createEndpoint({ userId: seller.id }, 'meter', 'svc', {
    slug,
    methods: ['GET'],
    price: MAX.toString(),
    upstream_url: origin,
    schemes: [...schemes],
  })
await announceRegistryChange(deps)
const mcpUrl = `${p.proxyUrl}/meter/svc/mcp`

async function connect(t: Test): Promise<Client> {
  const client = new Client({ name: 'tollgate-test', version: '1.0.0' })
  await until('the proxy serves the service over MCP', async () => {
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)))
      return (await client.listTools()).tools.some((x) => x.name === 'metered')
    } catch {
      return false
    }
  })
  t.teardown(() => client.close())
  return client
}

const balance = (a: Address) =>
  deps.chain.readContract({ address: devnet.usdcAddress, abi: erc20Abi, functionName: 'balanceOf', args: [a] })
const ledger = (payer: string) =>
  db
    .selectFrom('payments')
    .select(['scheme', 'status', 'value', 'max_value'])
    .where('payer', '=', payer.toLowerCase())
    .orderBy('created_at')
    .execute()
t.test('an agent wallet pays upto over MCP: the actual charge, exact where upto is not offered', async (t) => {
  const client = await connect(t)
  const agent = await p.agent({ fund: 1_000_000n })
  const before = await balance(agent.address)

  const plain = await callPaidTool(client, platformPayer(fetch, { baseUrl: p.webUrl, agentKey: agent.key }), {
    name: 'metered',
    arguments: { charge: '1' },
  })
  t.match(plain.payment, { scheme: 'exact', amount: '5000' }, 'exact unless asked')

  const payer = platformPayer(fetch, { baseUrl: p.webUrl, agentKey: agent.key, upto: true })
  const m = await callPaidTool(client, payer, { name: 'metered', arguments: { charge: '1234' } })
  t.notOk(m.result.isError, JSON.stringify(m.result.content))
  t.match(m.payment, { success: true, scheme: 'upto', amount: '1234', maxAmount: '5000' })
  t.equal((m.result._meta?.['x402/payment-response'] as { amount: string }).amount, '1234', 'the receipt states it')

  const fixed = await callPaidTool(client, payer, { name: 'fixed', arguments: {} })
  t.match(fixed.payment, { success: true, scheme: 'exact', amount: '5000' }, 'exact where upto is not offered')

  t.same(
    (await ledger(agent.address)).map((r) => [r.scheme, r.status, r.value, r.max_value]),
    [
      ['exact', 'served', '5000', null],
      ['upto', 'served', '1234', '5000'],
      ['exact', 'served', '5000', null],
    ],
  )
  await settleAllOf(deps, agent.address)
  t.equal(before - (await balance(agent.address)), 5000n + 1234n + 5000n, 'the chain moved the charges, not the maxima')
})

t.test('a local key pays upto over MCP', async (t) => {
  const client = await connect(t)
  const buyer = await newPayer(p, 100_000n)
  await walletFor(p, buyer.key).writeContract({
    address: devnet.usdcAddress,
    abi: erc20Abi,
    functionName: 'approve',
    args: [PERMIT2_ADDRESS, maxUint256],
  })
  const r = await callPaidTool(client, localPayer({ privateKey: buyer.key, upto: true }), {
    name: 'metered',
    arguments: { charge: '321' },
  })
  t.match(r.payment, { success: true, scheme: 'upto', amount: '321', maxAmount: '5000', header: 'PAYMENT-SIGNATURE' })
  const exact = await callPaidTool(client, localPayer({ privateKey: buyer.key, upto: true }), {
    name: 'fixed',
    arguments: {},
  })
  t.match(exact.payment, { success: true, scheme: 'exact', amount: '5000' }, 'exact where upto is not offered')
  t.same(
    (await ledger(buyer.address)).map((x) => [x.scheme, x.value]),
    [
      ['upto', '321'],
      ['exact', '5000'],
    ],
  )
})

t.test('tollgate mcp --remote --upto pays the usage-based price, and says so', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const { client: host } = await mcpHost(t, { TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key }, [
    '--remote',
    mcpUrl,
    '--upto',
  ])
  const r = (await host.callTool({ name: 'metered', arguments: { charge: '700' } })) as CallToolResult
  t.notOk(r.isError, JSON.stringify(r.content))
  t.match(r._meta?.['tollgate/cost'], { charged: true, amount: '700', signed_amount: '5000', scheme: 'upto' })
  t.match((r.content.at(-1) as { text: string }).text, /cost: 0\.0007 USDC \(usage-based: up to 0\.005 USDC\), paid to/)
  const rows = await db
    .selectFrom('agent_payments')
    .select(['scheme', 'amount', 'max_amount'])
    .where('agent_id', '=', agent.id)
    .execute()
  t.same(rows, [{ scheme: 'upto', amount: '700', max_amount: '5000' }])
})
