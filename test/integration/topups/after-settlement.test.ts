import { randomBytes } from 'node:crypto'
import t from 'tap'
import type { Job } from 'bullmq'
import type { Address, Hex } from 'viem'
import { mintUsdc } from '../../../src/chain/devnet.js'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { bullConnection, settlementQueue } from '../../../src/queue/settlement-queue.js'
import { createAgents } from '../../../src/services/accounts/agents.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { walletAad } from '../../../src/services/wallets/custodial-wallet.js'
import { ensureFundingWallet } from '../../../src/services/wallets/funding-wallet.js'
import { decryptSecret } from '../../../src/secrets/wallet-crypto.js'
import { startWorkers } from '../../../workers/index.js'
import { agentPaymentSettledWithin } from '../../../workers/settlement-tick.js'
import { name as TOPUP_CHECK } from '../../../workers/topup-check.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'
import { newPayer, paidPath, payMany } from '../../helpers/settlement.js'

// "after payments" (issue 7): a settled agent payment asks for a top-up check at once. The
// schedule is set to an hour so it cannot be what refills the agent.

const USDC = 1_000_000n
const PRICE = 1000n // hash-generator, see settlement-helpers
const THRESHOLD = 5n * USDC
const AMOUNT = 20n * USDC
const HOUR = 3_600_000

const platform = await startTestPlatform(t, { env: { TOLLGATE_MASTER_KEY: randomBytes(32).toString('hex') } })
const { deps } = platform
const masterKey = deps.config.masterKey!
const conn = bullConnection(deps.config)
const queue = settlementQueue(deps.config, conn)
t.teardown(async () => {
  await queue.close()
  conn.disconnect()
})

const balanceOf = (a: string) =>
  deps.chain.readContract({
    address: deps.config.chain.usdc.address,
    abi: usdcAbi,
    functionName: 'balanceOf',
    args: [a as Address],
  })
const statusOf = async (payer: string) =>
  (await deps.db.selectFrom('payments').select('status').where('payer', '=', payer.toLowerCase()).execute()).map(
    (r) => r.status,
  )
/** topup-check jobs added on request (the scheduler's jobs carry a repeatJobKey). */
const requestedChecks = async () =>
  (await queue.getJobs(['completed', 'failed', 'active', 'waiting', 'delayed', 'prioritized'])).filter(
    (j: Job) => j.name === TOPUP_CHECK && !j.repeatJobKey,
  )
const scheduledChecks = async () =>
  (await queue.getJobs(['completed', 'failed', 'active', 'waiting', 'delayed', 'prioritized'])).filter(
    (j: Job) => j.name === TOPUP_CHECK && j.repeatJobKey,
  )

t.test('a settled agent payment triggers the top-up without waiting for the schedule', async (t) => {
  // a user whose agent sits just above its threshold: one paid call takes it below
  const user = await createUsers({ db: deps.db }).create(
    `u${randomBytes(4).toString('hex')}@example.com`,
    'correct horse battery',
  )
  const fw = await ensureFundingWallet(deps.db, masterKey, user.id)
  await mintUsdc(platform.devnet.rpcUrl, fw.address as Address, 100n * USDC)
  const agent = await createAgents({ db: deps.db, masterKey: () => masterKey }).create(user.id, {
    name: 'bot',
    top_up: { enabled: true, threshold: THRESHOLD.toString(), amount: AMOUNT.toString() },
  })
  await mintUsdc(platform.devnet.rpcUrl, agent.address as Address, THRESHOLD + PRICE / 2n)
  const row = await deps.db
    .selectFrom('agents')
    .select('encrypted_key')
    .where('address', '=', agent.address)
    .executeTakeFirstOrThrow()
  const agentKey = decryptSecret([masterKey], row.encrypted_key, walletAad('agent', agent.address)) as Hex

  const logged: Array<Record<string, unknown>> = []
  const workers = await startWorkers(deps, {
    everyMs: {
      'topup-check': HOUR,
      'settlement-tick': 200,
      'recovery-sweep': HOUR,
      'balance-refresh': HOUR,
      'relayer-funds-check': HOUR,
    },
    log: {
      info: (o: object, m?: string) => void logged.push({ ...o, msg: m }),
      warn: () => {},
      error: (o: object, m?: string) => void logged.push({ ...o, msg: m }),
    },
  })
  t.teardown(() => workers.close())
  // BullMQ runs an `every` scheduler's first job at once: let that run finish before anyone pays,
  // then no scheduled job may start again for an hour
  await until('the scheduler to register its first run', async () => (await scheduledChecks()).length > 0)
  await until('the scheduled first run to finish', async () => {
    const pending = await queue.getJobs(['active', 'waiting', 'prioritized'])
    return !pending.some((j: Job) => j.name === TOPUP_CHECK)
  })
  const quietSince = Date.now()
  t.same(
    await deps.db.selectFrom('topups').select('id').execute(),
    [],
    'no top-up while the agent is above its threshold',
  )

  // a payer that is not a platform agent: its settlement asks for nothing
  const stranger = await newPayer(platform, USDC)
  t.same(await payMany(platform, stranger.key, 1, 1), [200])
  await until("the stranger's payment to settle", async () => (await statusOf(stranger.address)).includes('settled'))
  await new Promise((r) => setTimeout(r, 500))
  t.same(await requestedChecks(), [], 'a non-agent payment does not request a top-up check')

  // the agent pays with its custodial key
  t.same(await payMany(platform, agentKey, 1, 1, platform.proxyUrl + paidPath), [200])
  await until('the agent payment to settle', async () => (await statusOf(agent.address)).includes('settled'))
  const topup = await until('the top-up to confirm', async () =>
    deps.db
      .selectFrom('topups')
      .selectAll()
      .where('agent_address', '=', agent.address)
      .where('status', '=', 'confirmed')
      .executeTakeFirst(),
  )
  t.equal(topup.amount, AMOUNT.toString())
  t.match(topup.tx_hash, /^0x[0-9a-f]{64}$/)
  t.equal(await balanceOf(agent.address), THRESHOLD + PRICE / 2n - PRICE + AMOUNT, 'refilled once, by the amount')

  const requested = await requestedChecks()
  t.ok(requested.length >= 1, `the settlement tick requested ${requested.length} check(s)`)
  const ranSince = (await scheduledChecks()).filter((j: Job) => (j.processedOn ?? 0) >= quietSince)
  t.same(
    ranSince.map((j: Job) => j.id),
    [],
    'the hourly schedule did not run meanwhile',
  )
  t.equal((await deps.db.selectFrom('topups').select('id').execute()).length, 1, 'one top-up in all')

  // the job reports through the worker's logger, and no wallet key shows up there
  t.same(
    logged.map((l) => l.msg),
    ['top-up need opened', 'top-up confirmed'],
  )
  t.ok(
    logged.some((l) => l.msg === 'top-up confirmed' && l.agent === agent.address && l.txHash === topup.tx_hash),
    'confirmed, with its transaction',
  )
  const fwRow = await deps.db
    .selectFrom('funding_wallets')
    .select('encrypted_key')
    .where('address', '=', fw.address)
    .executeTakeFirstOrThrow()
  const fundingKey = decryptSecret([masterKey], fwRow.encrypted_key, walletAad('funding', fw.address))
  const text = JSON.stringify(logged)
  for (const k of [agentKey, fundingKey]) t.notOk(text.includes(k.slice(2)), 'no wallet key in the worker log')
})

t.test('agentPaymentSettledWithin: only settled payments of platform agents inside the window', async (t) => {
  const agentRow = await deps.db.selectFrom('agents').select('address').executeTakeFirstOrThrow()
  t.equal(await agentPaymentSettledWithin(deps.db, 60_000), true, 'the agent payment above settled within a minute')
  // push every settled agent payment an hour back: outside any tick's window
  await deps.db
    .updateTable('payments')
    .set({ updated_at: new Date(Date.now() - HOUR) })
    .where('payer', '=', agentRow.address.toLowerCase())
    .execute()
  t.equal(await agentPaymentSettledWithin(deps.db, 60_000), false, 'an old settlement does not count')
  t.equal(await agentPaymentSettledWithin(deps.db, 2 * HOUR), true, 'a window that covers it does')
  // a recent non-agent settlement (the stranger above) alone does not count
  await deps.db
    .updateTable('payments')
    .set({ updated_at: new Date() })
    .where('payer', '!=', agentRow.address.toLowerCase())
    .execute()
  t.equal(await agentPaymentSettledWithin(deps.db, 60_000), false)
})
