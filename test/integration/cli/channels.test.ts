/**
 * The buyer's view of batch-settlement channels from the command line (issue #34 item 8):
 * `tollgate fetch --inspect` (by default, or with --batch) shows the deposit before it happens and
 * `--no-batch` the exact payment instead, `tollgate fetch --batch` pays through a channel (the receipt says so, and names the deposit), `tollgate channels` lists
 * the agent's channels with the agent key or, with --agent, the API key; `refund` returns what was
 * not charged to the agent wallet (part of it with --amount), and `withdraw` starts the timed
 * withdrawal from the agent wallet, says when it is due, and finalizes it after the delay; without
 * ETH for its gas it names what is needed and the refund instead, exiting non-zero.
 */
import t from 'tap'
import { createTestClient, http, parseEther } from 'viem'
import { createApiKeys } from '../../../src/services/accounts/api-keys.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { createPublishing } from '../../../src/services/publishing/publishing.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { meteredUpstream } from '../../helpers/metered.js'
import { until } from '../../helpers/until.js'
import { terminal } from './cli-io.js'

// private upstreams allowed: the second test publishes a seller endpoint on this machine
const p = await startBuyerPlatform(t, {
  env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true' },
  proxy: { allowPrivateNetwork: true },
})
const db = p.deps.db
const url = `${p.proxyUrl}/tollgate/toolbox/echo?msg=hi`

t.test('tollgate channels, fetch --batch and its --inspect', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const { user_id } = await db
    .selectFrom('agents')
    .select('user_id')
    .where('id', '=', agent.id)
    .executeTakeFirstOrThrow()
  const apiKey = (await createApiKeys({ db, deployment: p.deps.config.deployment }).create(user_id, 'k')).secret
  const name = (await db.selectFrom('agents').select('name').where('id', '=', agent.id).executeTakeFirstOrThrow()).name
  const asAgent = terminal({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key }).run
  const asOwner = terminal({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_API_KEY: apiKey }).run

  // before any payment: an empty list that says how one is opened
  const none = await asAgent(['channels'])
  t.equal(none.code, 0, none.err)
  t.match(none.out, /^no channels yet: .*tollgate fetch <url> opens one/)
  const noneJson = await asAgent(['channels', '--json'])
  t.same(noneJson.json(), { object: 'list', data: [] })

  // the preview shows the deposit before it happens (100 x the price by default), as with --batch;
  // with --no-batch, exact and no deposit
  const look = await asAgent(['fetch', url, '--inspect', '--batch'])
  t.equal(look.code, 0, look.err)
  t.match(look.out, /would pay 0\.001 USDC to 0x[0-9a-fA-F]{40} on \S+ \(batch-settlement\)/)
  t.match(look.out, /would deposit 0\.1 USDC from the agent wallet into a batch-settlement channel first/)
  const byDefault = await asAgent(['fetch', url, '--inspect'])
  t.equal(byDefault.code, 0, byDefault.err)
  t.match(byDefault.out, /would pay 0\.001 USDC to 0x[0-9a-fA-F]{40} on \S+ \(batch-settlement\)/)
  t.match(byDefault.out, /would deposit 0\.1 USDC from the agent wallet into a batch-settlement channel first/)
  const plain = await asAgent(['fetch', url, '--inspect', '--no-batch'])
  t.equal(plain.code, 0, plain.err)
  t.notMatch(plain.out, /would deposit/, 'no deposit with --no-batch')
  t.notMatch(plain.out, /would pay .*\(batch-settlement\)/)
  t.match(plain.out, /would pay 0\.001 USDC to 0x[0-9a-fA-F]{40} on \S+ \(exact\)/)
  const lookJson = await asAgent(['--json', 'fetch', url, '--inspect', '--batch'])
  t.equal(lookJson.code, 0, lookJson.err)
  t.match(lookJson.json(), {
    preview: { would_pay: { scheme: 'batch-settlement', amount: '1000', deposit: '100000' } },
  })
  t.equal(
    (await db.selectFrom('agent_channels').select('channel_id').where('agent_id', '=', agent.id).execute()).length,
    0,
    'inspecting opened no channel',
  )

  // two paid calls: the first deposits, the second is a voucher alone
  const first = await asAgent(['fetch', url, '--batch'])
  t.equal(first.code, 0, first.err)
  t.match(first.err, /^paid 0\.001 USDC to 0x[0-9a-fA-F]{40} from 0x[0-9a-fA-F]{40} through a batch-settlement channel/)
  t.match(first.err, /deposited 0\.1 USDC from the agent wallet into the channel first \(tollgate channels\)/)
  const second = await asAgent(['fetch', url, '--batch'])
  t.equal(second.code, 0, second.err)
  t.match(second.err, /through a batch-settlement channel/)
  t.notMatch(second.err, /deposited/, 'no second deposit')
  const receipt = await asAgent(['--json', 'fetch', url, '--batch'])
  t.match(JSON.parse(receipt.err), { paid: true, scheme: 'batch-settlement', amount: '1000' })
  t.notOk('deposit' in JSON.parse(receipt.err))

  const row = await db
    .selectFrom('agent_channels')
    .select(['channel_id', 'receiver'])
    .where('agent_id', '=', agent.id)
    .executeTakeFirstOrThrow()
  const id = row.channel_id
  const shortId = `${id.slice(0, 6)}…${id.slice(-4)}`

  // the table, with the agent key
  const listed = await asAgent(['channels'])
  t.equal(listed.code, 0, listed.err)
  const lines = listed.out.trimEnd().split('\n')
  t.match(lines[0], /^CHANNEL\s+RECEIVER\s+DEPOSITED\s+CHARGED\s+CLAIMED\s+BALANCE\s+REFUNDABLE\s+WITHDRAWING$/)
  t.equal(lines.length, 3, 'header, one channel, the note on units')
  const cells = lines[1]!.split(/\s+/)
  t.same(cells, [
    shortId,
    `${row.receiver.slice(0, 6)}…${row.receiver.slice(-4)}`,
    '0.1',
    '0.003',
    '0',
    '0.1',
    '0.097',
    'no',
  ])
  t.match(lines[2], /amounts in USDC/)
  const json = await asAgent(['channels', '--json'])
  t.match(json.json(), {
    object: 'list',
    data: [
      {
        channel_id: id,
        deposited: '100000',
        charged: '3000',
        balance: '100000',
        refundable: '97000',
        withdraw_requested_at: null,
      },
    ],
  })

  // the owner, with the API key: by address and by name
  for (const ref of [agent.address, name]) {
    const owner = await asOwner(['channels', '--agent', ref])
    t.equal(owner.code, 0, owner.err)
    t.equal(owner.out, listed.out, `--agent ${ref}: the same table`)
  }
  const unknown = await asOwner(['channels', '--agent', 'nobody-by-this-name'])
  t.equal(unknown.code, 1)
  t.match(unknown.err, /no agent named "nobody-by-this-name"/)
  const noKeys = await terminal({ TOLLGATE_API_URL: p.webUrl }).run(['channels'])
  t.equal(noKeys.code, 1)
  t.match(noKeys.err, /which agent\?/)

  // withdraw from a wallet without ETH: the API's 409 with the gas it needs and the refund instead, exit 3
  for (const ref of [shortId, id.slice(0, 10), id]) {
    const r = await asAgent(['channels', 'withdraw', ref])
    t.equal(r.code, 3, `withdraw ${ref}`)
    t.match(r.err, /the agent wallet holds 0 ETH and initiateWithdraw needs up to [0-9.]+ ETH of gas/)
    t.match(r.err, /tollgate channels refund.*needs no gas/)
    t.equal(r.out, '')
  }
  const asJson = await asAgent(['channels', 'withdraw', id, '--json'])
  t.equal(asJson.code, 3)
  t.match(asJson.json(), {
    error: { code: 'channel_withdraw_needs_gas', details: { channel_id: id, balance_wei: '0' } },
  })
  const other = await asAgent(['channels', 'refund', `0x${'ab'.repeat(32)}`])
  t.equal(other.code, 1)
  t.match(other.err, /this agent has no channel 0xabab/)
  const bad = await asAgent(['channels', 'withdraw', 'nothex'])
  t.equal(bad.code, 1)
  t.match(bad.err, /not a channel id: nothex/)
  const missing = await asAgent(['channels', 'withdraw'])
  t.equal(missing.code, 1)
  t.match(missing.err, /usage: tollgate channels withdraw <channel>/)
  const wrong = await asAgent(['channels', 'close', id])
  t.equal(wrong.code, 1)
  t.match(wrong.err, /unknown channels action "close"/)
  const misplaced = await asAgent(['channels', 'withdraw', id, '--amount', '1'])
  t.equal(misplaced.code, 1)
  t.match(misplaced.err, /--amount goes with tollgate channels refund/)

  // refund: part of it with the agent key, the rest by the owner, then nothing is left
  const part = await asAgent(['channels', 'refund', id.slice(0, 10), '--amount', '0.007'])
  t.equal(part.code, 0, part.err)
  t.match(part.out, new RegExp(`refunded 0\\.007 USDC from channel ${id} to the agent wallet`))
  t.match(part.out, /the seller keeps what it charged \(0\.003 USDC/)
  const rest = await asOwner(['channels', 'refund', shortId, '--agent', name, '--json'])
  t.equal(rest.code, 0, rest.err)
  t.match(rest.json(), { channel_id: id, refunded: '90000', charged: '3000', channel: { refundable: '0' } })
  const empty = await asAgent(['channels', 'refund', id])
  t.equal(empty.code, 1)
  t.match(empty.err, /nothing to refund/)
})

t.test('--batch where the seller offers no batch-settlement: paid exact, and said so', async (t) => {
  const origin = await meteredUpstream(t)
  const seller = await createUsers(p.deps).create(`cli-ch-${Date.now()}@example.com`, 'correct horse battery staple')
  const pub = createPublishing(p.deps)
  await pub.claimNamespace({ userId: seller.id }, { namespace: 'clich', display_name: 'Plain' })
  await pub.createService({ userId: seller.id }, 'clich', { name: 'svc', pay_to: p.devnet.accounts.receiver.address })
  await pub.createEndpoint({ userId: seller.id }, 'clich', 'svc', {
    slug: 'plain',
    methods: ['GET'],
    price: '1000',
    upstream_url: origin,
    schemes: ['exact'],
  })
  await announceRegistryChange(p.deps)
  const plainUrl = `${p.proxyUrl}/clich/svc/plain`
  await until('the proxy serves the endpoint', async () => (await fetch(plainUrl)).status === 402)
  const agent = await p.agent({ fund: 1_000_000n })
  const run = terminal({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key }).run
  const look = await run(['fetch', plainUrl, '--inspect', '--batch'])
  t.equal(look.code, 0, look.err)
  t.match(look.out, /would pay 0\.001 USDC .* \(exact; the seller offers no batch-settlement here\)/)
  t.notMatch(look.out, /would deposit/)
  const paid = await run(['fetch', plainUrl, '--batch'])
  t.equal(paid.code, 0, paid.err)
  t.match(paid.err, /^paid 0\.001 USDC to .* \(exact: the seller offers no batch-settlement here\)\n/)
  const none = await run(['channels'])
  t.match(none.out, /^no channels yet/, 'no channel opened')
})

// last: it moves the chain's clock past the wall clock (payments' authorizations would expire)
t.test('tollgate channels withdraw: started, not due yet, finalized after the delay', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const asAgent = terminal({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key }).run
  const paid = await asAgent(['fetch', url, '--batch'])
  t.equal(paid.code, 0, paid.err)
  const { channel_id: id } = await db
    .selectFrom('agent_channels')
    .select('channel_id')
    .where('agent_id', '=', agent.id)
    .executeTakeFirstOrThrow()
  await createTestClient({ chain: p.devnet.chain, mode: 'anvil', transport: http(p.devnet.rpcUrl) }).setBalance({
    address: agent.address,
    value: parseEther('0.01'),
  })
  const started = await asAgent(['channels', 'withdraw', id])
  t.equal(started.code, 0, started.err)
  t.match(started.out, new RegExp(`started the timed withdrawal of 0\\.1 USDC from channel ${id} \\(0x[0-9a-f]{64}\\)`))
  t.match(started.out, /it can be finalized after \S+Z: run tollgate channels withdraw 0x/)
  const listed = await asAgent(['channels'])
  t.match(listed.out.split('\n')[1], /since \S+Z$/, 'the table shows it withdrawing')
  const early = await asAgent(['channels', 'withdraw', id, '--json'])
  t.equal(early.code, 0, early.err)
  const e = early.json()
  t.match(e, { action: 'none', status: 'waiting', due: false, amount: '100000' })
  const notYet = await asAgent(['channels', 'withdraw', id])
  t.match(
    notYet.out,
    new RegExp(
      `the withdrawal of 0\\.1 USDC from channel ${id} is not due yet: it can be finalized after ${e.finalize_after}`,
    ),
  )

  await p.chainTimeAtLeast(Date.parse(e.finalize_after) / 1000)
  const done = await asAgent(['channels', 'withdraw', id])
  t.equal(done.code, 0, done.err)
  t.match(done.out, new RegExp(`withdrew 0\\.1 USDC from channel ${id} to the agent wallet \\(0x[0-9a-f]{64}\\)`))
  const after = await asAgent(['channels'])
  t.match(after.out.split('\n')[1], /withdrawn$/)
  const again = await asAgent(['channels', 'withdraw', id])
  t.match(again.out, /already withdrew 0\.1 USDC/)
})
