/**
 * The batch-settlement claim and settle worker on a devnet with channels opened and vouchers signed
 * by the official `@x402/evm` client: it claims on the thresholds (age, amount) and at once when a
 * channel's timed withdrawal starts (so finalizeWithdraw cannot take a served call), settles per
 * receiver, and a worker killed (SIGKILL) between recording and broadcasting, or after
 * broadcasting, loses nothing and claims nothing twice.
 */
import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { createTestClient, erc20Abi, http, parseEther, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createDeps } from '../../../src/deps.js'
import { DEVNET_USDC_ADDRESS, type Devnet } from '../../../src/chain/devnet.js'
import { BATCH_SETTLEMENT_ADDRESS } from '../../../src/chain/batch-settlement/addresses.js'
import { batchSettlementAbi } from '../../../src/chain/batch-settlement/abi.js'
import { normalizeConfig, readChannel } from '../../../src/chain/batch-settlement/channel.js'
import { BatchClaimer } from '../../../src/services/batch-claim/claimer.js'
import { batchCrashHooksFromEnv } from '../../../src/services/batch-claim/test-hooks.js'
import { ensurePlatformKey } from '../../../src/services/wallets/platform-key.js'
import { spawnNode } from '../../helpers/child-process.js'
import { withDevnet } from '../../helpers/devnet.js'
import { chainClients, openChannel, type TestChannel } from '../../helpers/batch-channel.js'
import { TEST_DATABASE_URL, TEST_REDIS_URL, testConfig } from '../../helpers/test-env.js'
import { until } from '../../helpers/until.js'

const MASTER_KEY = randomBytes(32).toString('hex')
const quiet = { info() {}, warn() {}, error() {} }

t.test('the crash hook is inert unless set, and refused in production and for an unknown stage', async (t) => {
  t.equal(batchCrashHooksFromEnv({}, { deployment: 'sandbox' }), undefined)
  t.throws(
    () => batchCrashHooksFromEnv({ TOLLGATE_TEST_BATCH_CRASH_AT: 'after-send' }, { deployment: 'production' }),
    /refused/,
  )
  t.throws(() => batchCrashHooksFromEnv({ TOLLGATE_TEST_BATCH_CRASH_AT: 'x' }, { deployment: 'sandbox' }), /one of/)
})

async function setup(t: Test, env: Record<string, string> = {}) {
  const devnet = await withDevnet(t)
  const base = {
    RPC_URL: devnet.rpcUrl,
    TOLLGATE_RECEIVER_ADDRESS: devnet.accounts.receiver.address,
    RELAYER_PRIVATE_KEYS: devnet.accounts.relayers.map((r) => r.privateKey).join(','),
    TOLLGATE_MASTER_KEY: MASTER_KEY,
    ...env,
  }
  const config = await testConfig(t, base)
  const deps = createDeps(config)
  t.teardown(() => deps.close())
  const { address: authorizer } = await ensurePlatformKey(deps.db, config.masterKey!, 'batch-receiver-authorizer')
  const relayer = privateKeyToAccount(devnet.accounts.relayers[2]!.privateKey)
  const workerEnv = {
    ...base,
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    DATABASE_SCHEMA: config.databaseSchema,
    REDIS_PREFIX: config.redisPrefix,
    LOG_LEVEL: 'warn',
  }
  return { devnet, deps, authorizer, relayer, workerEnv }
}

type Setup = Awaited<ReturnType<typeof setup>>

/** A channel opened by a fresh payer with the official client, and its row as the scheme keeps it. */
async function channelWithCharges(
  s: Setup,
  receiver: Address,
  opts: { charged: bigint; ageSeconds: number; deposit?: bigint },
): Promise<TestChannel> {
  const ch = await openChannel(s.devnet, {
    receiver,
    receiverAuthorizer: s.authorizer,
    relayer: s.relayer,
    deposit: opts.deposit ?? 1_000_000n,
  })
  // the last call's voucher: charged so far + this call's maximum
  const max = opts.charged + 1000n
  const c = normalizeConfig(ch.config)
  await s.deps.db
    .insertInto('batch_channels')
    .values({
      channel_id: ch.channelId.toLowerCase(),
      network: s.deps.config.chain.caip2,
      contract: BATCH_SETTLEMENT_ADDRESS.toLowerCase(),
      payer: c.payer.toLowerCase(),
      payer_authorizer: c.payerAuthorizer.toLowerCase(),
      receiver: c.receiver.toLowerCase(),
      receiver_authorizer: c.receiverAuthorizer.toLowerCase(),
      token: c.token.toLowerCase(),
      withdraw_delay: c.withdrawDelay,
      salt: c.salt,
      charged: opts.charged,
      signed_max_claimable: max,
      signature: await ch.voucher(max),
      balance: ch.deposited,
      last_request_at: new Date(),
      oldest_unclaimed_at: new Date(Date.now() - opts.ageSeconds * 1000),
    })
    .execute()
  return ch
}

const usdcOf = (devnet: Devnet, who: Address) =>
  chainClients(devnet).pub.readContract({
    address: DEVNET_USDC_ADDRESS,
    abi: erc20Abi,
    functionName: 'balanceOf',
    args: [who],
  })

const claimedOnChain = async (devnet: Devnet, ch: TestChannel) =>
  (await readChannel(chainClients(devnet).pub, ch.channelId)).totalClaimed

async function txRows(s: Setup) {
  return s.deps.db.selectFrom('batch_transactions').selectAll().orderBy('created_at').execute()
}

t.test('claims on thresholds and at once on a withdrawal; settle moves exactly the claimed sum', async (t) => {
  const s = await setup(t, { BATCH_CLAIM_THRESHOLD: '50000', BATCH_CLAIM_MAX_AGE_SECONDS: '20' })
  const receiver = privateKeyToAccount(generatePrivateKey()).address
  const claimer = new BatchClaimer(s.deps, { log: quiet })
  const old = await channelWithCharges(s, receiver, { charged: 20_000n, ageSeconds: 30 })
  const fresh = await channelWithCharges(s, receiver, { charged: 5_000n, ageSeconds: 0 })
  const big = await channelWithCharges(s, receiver, { charged: 60_000n, ageSeconds: 0 })
  // a due channel whose stored voucher was signed by another key: left out, the others still claimed
  const forged = await channelWithCharges(s, receiver, { charged: 30_000n, ageSeconds: 30 })
  await s.deps.db
    .updateTable('batch_channels')
    .set({ signature: await privateKeyToAccount(generatePrivateKey()).signMessage({ message: 'not a voucher' }) })
    .where('channel_id', '=', forged.channelId.toLowerCase())
    .execute()

  const stats = await claimer.runOnce()
  t.match(stats, { claims: 1, channelsClaimed: 2, claimed: 80_000n, settles: 1, settled: 80_000n })
  t.equal(await claimedOnChain(s.devnet, old), 20_000n, 'the old channel is claimed (age)')
  t.equal(await claimedOnChain(s.devnet, big), 60_000n, 'the big one too (amount)')
  t.equal(await claimedOnChain(s.devnet, fresh), 0n, 'the fresh small one waits')
  t.equal(await claimedOnChain(s.devnet, forged), 0n, 'the forged voucher is left out')
  t.equal(await usdcOf(s.devnet, receiver), 80_000n, 'settle moved exactly the claimed sum')
  const rows = await s.deps.db.selectFrom('batch_channels').selectAll().orderBy('charged').execute()
  t.match(
    rows.map((r) => [r.total_claimed, r.oldest_unclaimed_at === null]),
    [
      ['0', false],
      ['20000', true],
      ['0', false],
      ['60000', true],
    ],
    'the books follow the chain',
  )
  t.match(
    (await txRows(s)).map((r) => [r.kind, r.status, r.amount]),
    [
      ['claim', 'confirmed', '80000'],
      ['settle', 'confirmed', '80000'],
    ],
  )
  t.match(await claimer.runOnce(), { claims: 0, settles: 0 }, 'nothing more is due')

  // the payer of the fresh channel starts a timed withdrawal: its served calls are claimed at once
  const { pub, wallet } = chainClients(s.devnet)
  await createTestClient({ chain: s.devnet.chain, mode: 'anvil', transport: http(s.devnet.rpcUrl) }).setBalance({
    address: fresh.payer.address,
    value: parseEther('1'),
  })
  const payerWallet = wallet(fresh.payer)
  const config = normalizeConfig(fresh.config)
  await pub.waitForTransactionReceipt({
    hash: await payerWallet.writeContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: batchSettlementAbi,
      functionName: 'initiateWithdraw',
      args: [config, 1_000_000n],
    }),
  })
  t.match(await claimer.runOnce(), { withdrawing: 1, claims: 1, claimed: 5_000n, settled: 5_000n })
  const row = await s.deps.db
    .selectFrom('batch_channels')
    .selectAll()
    .where('channel_id', '=', fresh.channelId.toLowerCase())
    .executeTakeFirstOrThrow()
  t.ok(row.withdraw_requested_at, 'the withdrawal is mirrored')
  t.equal(row.total_claimed, '5000')
  // the delay passes (anvil time travel); the payer takes what is left, not the served calls
  const test = createTestClient({ chain: s.devnet.chain, mode: 'anvil', transport: http(s.devnet.rpcUrl) })
  await test.increaseTime({ seconds: 901 })
  await test.mine({ blocks: 1 })
  const receipt = await pub.waitForTransactionReceipt({
    hash: await payerWallet.writeContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: batchSettlementAbi,
      functionName: 'finalizeWithdraw',
      args: [config],
    }),
  })
  t.equal(receipt.status, 'success')
  t.equal(await usdcOf(s.devnet, fresh.payer.address), 995_000n, 'the payer got back only the unclaimed rest')
  t.equal(await usdcOf(s.devnet, receiver), 85_000n, 'every served call reached the receiver')
})

t.test('SIGKILL between record and broadcast, and after broadcast: nothing lost, nothing claimed twice', async (t) => {
  const s = await setup(t, { BATCH_TX_STUCK_SECONDS: '2' })
  const startWorker = (extra: Record<string, string> = {}) =>
    spawnNode(t, 'src/start/worker.ts', {
      ...s.workerEnv,
      BATCH_CLAIM_EVERY_MS: '200',
      BATCH_CLAIM_MAX_AGE_SECONDS: '0',
      ...extra,
    })

  for (const stage of ['after-record', 'after-send'] as const) {
    await t.test(`killed ${stage}`, async (t) => {
      const receiver = privateKeyToAccount(generatePrivateKey()).address
      const a = await channelWithCharges(s, receiver, { charged: 33_000n, ageSeconds: 5 })
      const b = await channelWithCharges(s, receiver, { charged: 44_000n, ageSeconds: 5 })
      const ids = [a.channelId.toLowerCase(), b.channelId.toLowerCase()]
      const doomed = startWorker({ TOLLGATE_TEST_BATCH_CRASH_AT: stage })
      const died = await doomed.exited
      if (!t.same(died, { code: null, signal: 'SIGKILL' }, `the worker died of SIGKILL ${stage}`))
        t.comment(doomed.stderr())
      const naming = async () =>
        (await txRows(s)).filter(
          (r) =>
            r.kind === 'claim' && (r.channels as Array<{ channelId: string }>).some((c) => ids.includes(c.channelId)),
        )
      const left = await naming()
      t.equal(left.length, 1, 'it left one recorded claim')
      t.equal(left[0]!.status, stage === 'after-record' ? 'pending' : 'sent')

      const worker = startWorker()
      await until(
        `the channels claimed and settled after the kill ${stage}`,
        async () => (await usdcOf(s.devnet, receiver)) === 77_000n,
        60_000,
      )
      t.equal(await claimedOnChain(s.devnet, a), 33_000n)
      t.equal(await claimedOnChain(s.devnet, b), 44_000n)
      await until('the claims decided', async () =>
        (await naming()).every((r) => r.status === 'confirmed' || r.status === 'dropped'),
      )
      const claims = await naming()
      const confirmed = claims.filter((r) => r.status === 'confirmed')
      t.equal(
        confirmed.reduce((sum, r) => sum + BigInt(r.amount), 0n),
        77_000n,
        'the confirmed claims of these channels add up to what was charged, once',
      )
      if (stage === 'after-record') {
        t.same(
          claims.map((r) => r.status),
          ['dropped', 'confirmed'],
          'the unbroadcast claim is dropped and claimed again',
        )
      } else
        t.same(
          claims.map((r) => r.status),
          ['confirmed'],
          'the broadcast claim is decided from its receipt, not re-sent',
        )
      const settles = (await txRows(s)).filter(
        (r) => r.kind === 'settle' && (r.channels as { receiver: string }).receiver === receiver.toLowerCase(),
      )
      t.equal(
        settles.filter((r) => r.status === 'confirmed').reduce((sum, r) => sum + BigInt(r.amount), 0n),
        77_000n,
        'settled once',
      )
      await until('the books updated', async () => {
        const rows = await s.deps.db
          .selectFrom('batch_channels')
          .select(['total_claimed', 'oldest_unclaimed_at'])
          .where('channel_id', 'in', ids)
          .execute()
        return rows.length === 2 && rows.every((r) => r.oldest_unclaimed_at === null)
      })
      worker.child.kill('SIGTERM')
      if (!t.same(await worker.exited, { code: 0, signal: null })) t.comment(worker.stderr())
    })
  }

  await t.test('with the sandbox defaults, a call is claimed and settled within 60 s', async (t) => {
    const receiver = privateKeyToAccount(generatePrivateKey()).address
    const ch = await channelWithCharges(s, receiver, { charged: 1_000n, ageSeconds: 0 })
    const since = Date.now()
    const worker = spawnNode(t, 'src/start/worker.ts', s.workerEnv)
    await until('the call settled', async () => (await usdcOf(s.devnet, receiver)) === 1_000n, 60_000)
    const took = (Date.now() - since) / 1000
    t.ok(took < 60, `settled ${took.toFixed(1)} s after the call`)
    t.equal(await claimedOnChain(s.devnet, ch), 1_000n)
    worker.child.kill('SIGTERM')
    if (!t.same(await worker.exited, { code: 0, signal: null })) t.comment(worker.stderr())
  })
})
