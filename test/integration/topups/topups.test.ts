import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import t from 'tap'
import { createTestClient, createWalletClient, http, parseEther, type Address } from 'viem'
import { mintUsdc } from '../../../src/chain/devnet.js'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { createDeps, type Deps } from '../../../src/deps.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { createAgents } from '../../../src/services/accounts/agents.js'
import { createApiKeys } from '../../../src/services/accounts/api-keys.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { createTopups, type TopupOptions } from '../../../src/services/topups/topups.js'
import { custodialAccount } from '../../../src/services/wallets/custodial-wallet.js'
import { ensureFundingWallet } from '../../../src/services/wallets/funding-wallet.js'
import { jobs } from '../../../workers/index.js'
import { topupCheck } from '../../../workers/topup-check.js'
import { withDevnet } from '../../helpers/devnet.js'
import { testConfig } from '../../helpers/test-env.js'

const USDC = 1_000_000n
const THRESHOLD = 5n * USDC
const AMOUNT = 20n * USDC

const devnet = await withDevnet(t)
const config = await testConfig(t, {
  RPC_URL: devnet.rpcUrl,
  RELAYER_PRIVATE_KEYS: devnet.accounts.relayers.map((r) => r.privateKey).join(','),
  TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex'),
})
const deps = createDeps(config)
t.teardown(() => deps.close())
const fast: TopupOptions = { backoffMs: 20, receiptTimeoutMs: 20_000 }

const balanceOf = (a: string) =>
  deps.chain.readContract({
    address: config.chain.usdc.address,
    abi: usdcAbi,
    functionName: 'balanceOf',
    args: [a as Address],
  })
const rows = (agentAddress: string) =>
  deps.db.selectFrom('topups').selectAll().where('agent_address', '=', agentAddress).orderBy('need_seq').execute()

/** A user with a funding wallet holding `funding` and an agent with top-ups enabled. */
async function setup(funding: bigint) {
  const user = await createUsers({ db: deps.db }).create(
    `u${randomBytes(4).toString('hex')}@example.com`,
    'correct horse battery',
  )
  const fw = await ensureFundingWallet(deps.db, config.masterKey!, user.id)
  if (funding > 0n) await mintUsdc(devnet.rpcUrl, fw.address as Address, funding)
  const agents = createAgents({ db: deps.db, masterKey: () => config.masterKey! })
  const agent = await agents.create(user.id, {
    name: 'bot',
    top_up: { enabled: true, threshold: THRESHOLD.toString(), amount: AMOUNT.toString() },
  })
  return { user, funding: fw.address, agent: agent.address, agents }
}

/** The agent spends `amount` (moves it to the receiver) with its own custodial key. */
async function spend(agentAddress: string, amount: bigint) {
  const row = await deps.db
    .selectFrom('agents')
    .select(['encrypted_key'])
    .where('address', '=', agentAddress)
    .executeTakeFirstOrThrow()
  const account = custodialAccount([config.masterKey!], 'agent', agentAddress, row.encrypted_key)
  await createTestClient({ mode: 'anvil', transport: http(devnet.rpcUrl) }).setBalance({
    address: account.address,
    value: parseEther('1'),
  })
  const wallet = createWalletClient({ account, chain: devnet.chain, transport: http(devnet.rpcUrl) })
  const hash = await wallet.writeContract({
    address: config.chain.usdc.address,
    abi: usdcAbi,
    functionName: 'transfer',
    args: [devnet.accounts.receiver.address, amount],
  })
  await deps.chain.waitForTransactionReceipt({ hash })
}

t.test('the topup-check job is registered', async (t) => {
  t.ok(jobs.includes(topupCheck))
  t.equal(topupCheck.defaultOptions.attempts, 1, "retries are the service's (per top-up), not BullMQ's")
})

// runs first: the later subtests reuse its agent
let refilled: { agent: string; funding: string } | undefined

t.test('an agent below threshold is refilled exactly once per need', async (t) => {
  const s = await setup(100n * USDC)
  refilled = s
  const topups = createTopups(deps, fast)
  const before = await balanceOf(s.funding)
  const r1 = await topups.runOnce()
  t.equal(r1.created, 1)
  t.same(
    r1.processed.map((p) => p.status),
    ['confirmed'],
  )
  t.equal(await balanceOf(s.agent), AMOUNT, 'the agent got exactly the amount')
  t.equal(await balanceOf(s.funding), before - AMOUNT, 'from the funding wallet')
  // no new need while the balance is above the threshold
  for (let i = 0; i < 3; i++) t.equal((await topups.runOnce()).created, 0)
  const list = await rows(s.agent)
  t.equal(list.length, 1)
  t.equal(list[0]!.status, 'confirmed')
  t.match(list[0]!.tx_hash, /^0x[0-9a-f]{64}$/)
  const receipt = await deps.chain.getTransactionReceipt({ hash: list[0]!.tx_hash as `0x${string}` })
  t.equal(receipt.status, 'success')
  t.equal(receipt.from.toLowerCase(), list[0]!.relayer, 'submitted by a settlement relayer')
  const view = await topups.listForAgent(list[0]!.agent_id)
  t.equal(view[0]!.status, 'confirmed')
  t.equal(view[0]!.tx_hash, list[0]!.tx_hash)
  // issue 38: the need and its end are webhook events, written with them
  const events = await deps.db
    .selectFrom('webhook_events')
    .select(['type', 'data'])
    .where(sql<boolean>`lower(data->>'agent') = lower(${s.agent})`)
    .orderBy('created_at')
    .execute()
  t.same(
    events.map((e) => e.type),
    ['agent.balance_low', 'topup.completed'],
  )
  t.match(events[1]!.data, { topup_id: list[0]!.id, tx_hash: list[0]!.tx_hash })
})

t.test('after the refill, spending below the threshold again opens a second need', async (t) => {
  const s = refilled!
  const topups = createTopups(deps, fast)
  await spend(s.agent, AMOUNT - 4n * USDC) // 20 -> 4 USDC, below 5
  const r = await topups.runOnce()
  t.equal(r.created, 1)
  t.same(
    r.processed.map((p) => p.status),
    ['confirmed'],
  )
  t.equal(await balanceOf(s.agent), 4n * USDC + AMOUNT)
  t.equal((await topups.runOnce()).created, 0)
  const list = await rows(s.agent)
  t.same(
    list.map((x) => [x.need_seq, x.status]),
    [
      [1, 'confirmed'],
      [2, 'confirmed'],
    ],
  )
  t.not(list[0]!.tx_hash, list[1]!.tx_hash)
})

t.test('two workers racing create and pay one top-up', async (t) => {
  const s = await setup(100n * USDC)
  const other: Deps = createDeps(config) // a second process: its own pools and connections
  t.teardown(() => other.close())
  const a = createTopups(deps, fast)
  const b = createTopups(other, fast)
  for (let round = 0; round < 3; round++) await Promise.all([a.runOnce(), b.runOnce(), a.check(), b.check()])
  const list = await rows(s.agent)
  t.equal(list.length, 1, 'one row for the need')
  t.equal(list[0]!.status, 'confirmed')
  t.equal(await balanceOf(s.agent), AMOUNT, 'paid once on chain')
  // a racing insert for the same need is refused by the database itself
  const dup = await deps.db
    .insertInto('topups')
    .values({
      agent_id: list[0]!.agent_id,
      need_seq: 1,
      agent_address: s.agent,
      amount: '1',
      threshold: '1',
      balance_seen: '0',
      block_seen: 1,
    })
    .execute()
    .then(
      () => 'inserted',
      (e: Error) => e.message,
    )
  t.match(dup, /topups_agent_need_key/)
})

t.test('an empty funding wallet: retried with backoff, then failed and reported; no duplicates', async (t) => {
  const s = await setup(0n)
  const errors: Array<Record<string, unknown>> = []
  const topups = createTopups(deps, {
    ...fast,
    maxAttempts: 3,
    logger: { info: () => {}, error: (o) => errors.push(o as Record<string, unknown>) },
  })
  const seen: string[] = []
  for (let i = 0; i < 100 && !seen.includes('failed'); i++) {
    const r = await topups.runOnce()
    seen.push(...r.processed.map((p) => p.status))
    await new Promise((res) => setTimeout(res, 30))
  }
  t.same(seen, ['pending', 'pending', 'failed'], 'two retries, then failed')
  const list = await rows(s.agent)
  t.equal(list.length, 1)
  t.equal(list[0]!.status, 'failed')
  t.equal(list[0]!.attempts, 3)
  t.match(list[0]!.error, /insufficient_funds/)
  t.equal(list[0]!.tx_hash, null, 'nothing was submitted')
  const failed = await deps.db
    .selectFrom('webhook_events')
    .select(['type', 'notify'])
    .where('type', '=', 'topup.failed')
    .where(sql<boolean>`lower(data->>'agent') = lower(${s.agent})`)
    .execute()
  t.same(failed, [{ type: 'topup.failed', notify: 'pending' }], 'a topup.failed event and alert')
  t.equal(await balanceOf(s.agent), 0n)
  t.equal(errors.length, 1, 'reported once')
  t.equal(errors[0]!.agent, s.agent)
  // the failed need is not repeated by later checks
  for (let i = 0; i < 3; i++) t.equal((await topups.runOnce()).created, 0)
  t.equal((await rows(s.agent)).length, 1)
  t.equal((await topups.listForAgent(list[0]!.agent_id))[0]!.status, 'failed')

  // reported through the API; another user's agent is "not found"
  const app = await buildWebApp(deps, { logger: false })
  t.teardown(() => app.close())
  const keys = createApiKeys({ db: deps.db, deployment: config.deployment })
  const mine = { authorization: `Bearer ${(await keys.create(s.user.id, 'test')).secret}` }
  const res = await app.inject({ method: 'GET', url: `/v1/agents/${s.agent}/top-ups`, headers: mine })
  t.equal(res.statusCode, 200)
  const body = res.json() as { object: string; data: Array<Record<string, unknown>> }
  t.equal(body.object, 'list')
  t.match(body.data, [
    {
      object: 'top_up',
      agent: s.agent,
      need: 1,
      status: 'failed',
      attempts: 3,
      tx_hash: null,
      error: /insufficient_funds/,
    },
  ])
  const stranger = await createUsers({ db: deps.db }).create(
    `s${randomBytes(4).toString('hex')}@example.com`,
    'correct horse battery',
  )
  const theirs = { authorization: `Bearer ${(await keys.create(stranger.id, 'test')).secret}` }
  t.equal((await app.inject({ method: 'GET', url: `/v1/agents/${s.agent}/top-ups`, headers: theirs })).statusCode, 404)
  t.ok(
    (await app.inject({ method: 'GET', url: '/docs/json' })).json().paths['/v1/agents/{address}/top-ups'],
    'documented in OpenAPI',
  )

  // the user funds the wallet and re-arms top-ups (any settings update): a new need is paid
  await mintUsdc(devnet.rpcUrl, s.funding as Address, 50n * USDC)
  await s.agents.update(s.user.id, s.agent, { top_up: { enabled: true } })
  const r = await topups.runOnce()
  t.same(
    r.processed.map((p) => p.status),
    ['confirmed'],
  )
  t.equal(await balanceOf(s.agent), AMOUNT)
  t.same(
    (await rows(s.agent)).map((x) => [x.need_seq, x.status]),
    [
      [1, 'failed'],
      [2, 'confirmed'],
    ],
  )
})

t.test('a top-up whose transaction was lost track of is confirmed from the chain, not paid again', async (t) => {
  const s = await setup(100n * USDC)
  const topups = createTopups(deps, fast)
  await topups.runOnce()
  const [done] = await rows(s.agent)
  t.equal(done!.status, 'confirmed')
  // as if the worker died after broadcast, before recording anything
  await deps.db
    .updateTable('topups')
    .set({ status: 'pending', tx_hash: null, confirmed_block: null })
    .where('id', '=', done!.id)
    .execute()
  const r = await topups.processDue()
  t.same(
    r.map((x) => x.status),
    ['confirmed'],
  )
  const [again] = await rows(s.agent)
  t.equal(again!.tx_hash, done!.tx_hash, 'the original transaction, found by its authorization')
  t.equal(await balanceOf(s.agent), AMOUNT, 'no second transfer')
})

t.test('the worker role runs the job end to end', async (t) => {
  const { startWorkers } = await import('../../../workers/index.js')
  const s = await setup(100n * USDC)
  const workers = await startWorkers(deps, {
    everyMs: { 'topup-check': 200, 'settlement-tick': 60_000, 'recovery-sweep': 60_000, 'balance-refresh': 60_000 },
  })
  t.teardown(() => workers.close())
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline && (await rows(s.agent))[0]?.status !== 'confirmed')
    await new Promise((res) => setTimeout(res, 100))
  await workers.close()
  t.same(
    (await rows(s.agent)).map((x) => x.status),
    ['confirmed'],
  )
  t.equal(await balanceOf(s.agent), AMOUNT)
})
