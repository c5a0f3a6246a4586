/**
 * `tollgate fetch --upto` (issue #27): the agent wallet pays a seller's usage-based price where the
 * challenge offers one, and exact elsewhere; the receipt says which, and an upto one the charge and
 * the maximum. On the devnet the chain settles exactly the charge. `--inspect --upto` previews it,
 * and `tollgate mcp --upto`'s call_endpoint makes the same choice.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { erc20Abi, type Address } from 'viem'
import { runCli, type Io } from '../../../src/cli/main.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { createPublishing } from '../../../src/services/publishing/publishing.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { meteredUpstream } from '../../helpers/metered.js'
import { settleAllOf } from '../../helpers/settlement.js'
import { decodeRequired } from '../../helpers/pay.js'
import { until } from '../../helpers/until.js'
import { mcpHost } from '../../helpers/mcp-host.js'

function capture(env: Record<string, string | undefined>) {
  const out: Buffer[] = []
  const err: string[] = []
  const home = mkdtempSync(path.join(os.tmpdir(), 'tg-cli-upto-'))
  const io: Io = { stdout: (c) => out.push(Buffer.from(c)), stderr: (l) => err.push(l), env, home }
  return { io, out: () => Buffer.concat(out).toString(), err: () => err.join('') }
}

t.test('tollgate fetch --upto pays the usage, settled on chain for it; exact where upto is not offered', async (t) => {
  const origin = await meteredUpstream(t)
  const p = await startBuyerPlatform(t, {
    env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true' },
    proxy: { allowPrivateNetwork: true },
  })
  const { deps, devnet } = p
  const seller = await createUsers(deps).create(`cli-upto-${Date.now()}@example.com`, 'correct horse battery staple')
  const pub = createPublishing(deps)
  await pub.claimNamespace({ userId: seller.id }, { namespace: 'clim', display_name: 'Meter' })
  await pub.createService({ userId: seller.id }, 'clim', { name: 'svc', pay_to: devnet.accounts.receiver.address })
  for (const [slug, schemes] of [
    ['metered', ['exact', 'upto']],
    ['fixed', ['exact']],
  ] as const)
    await pub.createEndpoint({ userId: seller.id }, 'clim', 'svc', {
      slug,
      methods: ['GET'],
      price: '5000',
      upstream_url: origin,
      schemes: [...schemes],
    })
  await announceRegistryChange(deps)
  const metered = `${p.proxyUrl}/clim/svc/metered`
  const fixed = `${p.proxyUrl}/clim/svc/fixed`
  await until('the proxy offers upto', async () => {
    const h = (await fetch(metered)).headers.get('payment-required')
    return h !== null && decodeRequired(h).accepts.length === 2
  })
  await until('the proxy serves the fixed endpoint', async () => (await fetch(fixed)).status === 402)

  const agent = await p.agent({ fund: 1_000_000n })
  const env = { TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key }
  const balance = (a: Address) =>
    deps.chain.readContract({ address: devnet.usdcAddress, abi: erc20Abi, functionName: 'balanceOf', args: [a] })
  const before = { agent: await balance(agent.address), receiver: await balance(devnet.accounts.receiver.address) }

  // the preview: with --upto the platform's dry run reserves the maximum, "up to"
  const look = capture(env)
  t.equal(await runCli(['fetch', `${metered}?charge=1`, '--inspect', '--upto'], look.io), 0, look.err())
  t.match(look.out(), /price\s+up to 0\.005 USDC \(charged by usage\)/)
  t.match(look.out(), /would pay up to 0\.005 USDC to 0x[0-9a-fA-F]{40} on eip155:84532 \(upto: /)
  const lookExact = capture(env)
  t.equal(await runCli(['fetch', `${metered}?charge=1`, '--inspect'], lookExact.io), 0, lookExact.err())
  t.match(
    lookExact.out(),
    /would pay 0\.005 USDC to 0x[0-9a-fA-F]{40} on eip155:84532 \(exact\)/,
    'exact unless --upto',
  )

  // paid with upto: the seller charges 1234 of the 5000 authorized
  const paid = capture(env)
  t.equal(await runCli(['fetch', '-X', 'GET', `${metered}?charge=1234`, '--upto'], paid.io), 0, paid.err())
  t.same(JSON.parse(paid.out()), { upstream: 'ok' })
  t.match(
    paid.err(),
    /^paid 0\.001234 USDC to 0x[0-9a-fA-F]{40} from 0x[0-9a-fA-F]{40} \(upto: charged by usage, of at most 0\.005 USDC authorized\)\n/,
  )
  const json = capture(env)
  t.equal(await runCli(['--json', 'fetch', `${metered}?charge=700`, '--upto'], json.io), 0, json.err())
  t.match(JSON.parse(json.err()), {
    paid: true,
    scheme: 'upto',
    amount: '700',
    amount_usdc: '0.0007',
    usage_based: true,
    max_amount: '5000',
    max_amount_usdc: '0.005',
  })

  // --upto where the seller offers exact alone: exact, and it says so
  const plain = capture(env)
  t.equal(await runCli(['fetch', `${fixed}?charge=1`, '--upto'], plain.io), 0, plain.err())
  t.match(plain.err(), /^paid 0\.005 USDC .* \(exact: the seller offers no upto here\)\n/)
  const plainJson = capture(env)
  t.equal(await runCli(['--json', 'fetch', `${fixed}?charge=1`, '--upto'], plainJson.io), 0, plainJson.err())
  const r = JSON.parse(plainJson.err())
  t.match(r, { scheme: 'exact', amount: '5000' })
  t.notOk('max_amount' in r, 'no maximum on an exact receipt')

  // tollgate mcp --upto, as an agent host runs it (a child on stdio): call_endpoint pays with upto
  const { client } = await mcpHost(t, env, ['--upto'])
  const viaMcp = (await client.callTool({
    name: 'call_endpoint',
    arguments: { url: `${metered}?charge=321` },
  })) as CallToolResult
  t.notOk(viaMcp.isError, JSON.stringify(viaMcp.content))
  t.match(viaMcp._meta?.['tollgate/cost'], { charged: true, amount: '321', scheme: 'upto', signed_amount: '5000' })
  t.match(
    viaMcp.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n'),
    /cost: 0\.000321 USDC \(usage-based: up to 0\.005 USDC\)/,
  )

  const rows = await deps.db
    .selectFrom('payments')
    .select(['scheme', 'value', 'max_value'])
    .where('payer', '=', agent.address.toLowerCase())
    .orderBy('created_at')
    .execute()
  t.same(
    rows.map((x) => [x.scheme, x.value, x.max_value]),
    [
      ['upto', '1234', '5000'],
      ['upto', '700', '5000'],
      ['exact', '5000', null],
      ['exact', '5000', null],
      ['upto', '321', '5000'],
    ],
  )

  await settleAllOf(deps, agent.address)
  const spent = 1234n + 700n + 5000n + 5000n + 321n
  t.equal(before.agent - (await balance(agent.address)), spent, 'the agent wallet paid the usage, not the maxima')
  t.equal((await balance(devnet.accounts.receiver.address)) - before.receiver, spent, 'the seller got it')
})
