import { randomBytes, randomUUID } from 'node:crypto'
import t from 'tap'
import { sql } from 'kysely'
import { createTestClient, http, parseEther, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../../../src/chain/devnet.js'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { ensureDemoPayerAgent } from '../../../src/services/accounts/demo-account.js'
import { createWithdrawals } from '../../../src/services/withdrawals/withdrawals.js'
import { jobs, startWorkers } from '../../../workers/index.js'
import { withdrawalSweep } from '../../../workers/withdrawal-sweep.js'
import { decodeRequired, signFor, v2Header } from '../../helpers/pay.js'
import { until } from '../../helpers/until.js'
import { userWithKey } from '../../helpers/accounts.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'

// Money out on a real chain: agent and funding-wallet withdrawals, their idempotency, the refusal
// while payments are unsettled, and withdrawals racing payments (platform-signed and signed with
// the wallet's own key) without ever promising the same funds twice.
const HOUR = 3_600_000
const p = await startBuyerPlatform(t)
const { deps } = p
const usdcOf = (a: string) =>
  deps.chain.readContract({
    address: deps.config.chain.usdc.address,
    abi: usdcAbi,
    functionName: 'balanceOf',
    args: [a as Address],
  })
const fresh = () => privateKeyToAccount(generatePrivateKey()).address
const owner = await userWithKey(deps)
const post = (url: string, payload: unknown, key: string | null = randomUUID(), auth = owner.auth) =>
  p.web.inject({
    method: 'POST',
    url,
    headers: { ...auth, ...(key === null ? {} : { 'idempotency-key': key }) },
    payload: payload as object,
  })
const get = (url: string, auth = owner.auth) => p.web.inject({ method: 'GET', url, headers: auth })
const settledWithdrawal = (id: string, auth = owner.auth) =>
  until(`withdrawal ${id} to finish`, async () => {
    const w = (await get(`/v1/withdrawals/${id}`, auth)).json()
    return w.status !== 'pending' && w
  })
const ECHO = `${p.proxyUrl}/tollgate/toolbox/echo`

t.test('the withdrawal-sweep job is registered', async (t) => {
  t.ok(jobs.includes(withdrawalSweep))
  t.equal(withdrawalSweep.defaultOptions.attempts, 1, "retries are the service's (per withdrawal), not BullMQ's")
})

t.test(
  'an agent withdraws USDC: recorded, sent, confirmed on chain; a replay sends nothing again; history, events and exports show it',
  async (t) => {
    const agent = await p.agent({ user: owner.userId, fund: 5_000_000n })
    const to = fresh()
    const key = `w-${randomBytes(4).toString('hex')}`

    // what the API refuses, before anything is reserved
    t.match((await post(`/v1/agents/${agent.address}/withdrawals`, { to, amount: '1000000' }, null)).json(), {
      statusCode: 400,
      param: 'Idempotency-Key',
      message: /required: send an Idempotency-Key header/,
    })
    t.match((await post(`/v1/agents/${agent.address}/withdrawals`, { to, amount: '1.5' })).json(), {
      statusCode: 400,
      param: 'amount',
      message: /atomic units.*"1.5" looks like USDC: in atomic units \(6 decimals\) that is "1500000"/,
    })
    t.match(
      (
        await post(`/v1/agents/${agent.address}/withdrawals`, {
          to: '0x0000000000000000000000000000000000000000',
          amount: '1',
        })
      ).json(),
      { statusCode: 400, param: 'to' },
    )
    t.match((await post(`/v1/agents/${agent.address}/withdrawals`, { to: agent.address, amount: '1' })).json(), {
      statusCode: 400,
      param: 'to',
    })
    t.match((await post(`/v1/agents/${agent.address}/withdrawals`, { to, amount: '1', asset: 'ETH' })).json(), {
      statusCode: 400,
      param: 'asset',
    })
    t.match((await post(`/v1/agents/${agent.address}/withdrawals`, { to, amount: '9000000' })).json(), {
      statusCode: 409,
      code: 'withdrawal_exceeds_available',
      balance: '5000000',
      available: '5000000',
      amount: '9000000',
    })
    const stranger = await userWithKey(deps)
    t.equal(
      (await post(`/v1/agents/${agent.address}/withdrawals`, { to, amount: '1' }, randomUUID(), stranger.auth))
        .statusCode,
      404,
      "another user's agent is 404",
    )

    const res = await post(`/v1/agents/${agent.address}/withdrawals`, { to, amount: '1250000' }, key)
    t.equal(res.statusCode, 201)
    const w = res.json()
    t.match(w, {
      object: 'withdrawal',
      status: 'pending',
      source: 'agent',
      agent: agent.address,
      from: agent.address,
      to,
      amount: '1250000',
      asset: 'USDC',
    })
    t.equal(
      Object.keys(w).filter((k) => ['id', 'status', 'to', 'amount', 'asset', 'tx_hash', 'created_at'].includes(k))
        .length,
      7,
      "the contract's fields",
    )
    const done = await settledWithdrawal(w.id)
    t.match(done, { status: 'confirmed', tx_hash: /^0x[0-9a-f]{64}$/, error: null })
    const ev = await deps.db
      .selectFrom('webhook_events')
      .select('data')
      .where('type', '=', 'withdrawal.confirmed')
      .where(sql<boolean>`data->>'withdrawal_id' = ${w.id}`)
      .execute()
    t.match(
      ev,
      [{ data: { withdrawal_id: w.id, tx_hash: done.tx_hash, amount: '1250000' } }],
      'a withdrawal.confirmed event',
    )
    t.equal(await usdcOf(to), 1_250_000n, 'the address received it')
    t.equal(await usdcOf(agent.address), 3_750_000n, 'it left the agent wallet')

    // the same key and body: the first withdrawal again, 200, nothing sent
    const again = await post(`/v1/agents/${agent.address}/withdrawals`, { to, amount: '1250000' }, key)
    t.equal(again.statusCode, 200)
    t.equal(again.headers['idempotent-replayed'], 'true')
    t.equal(again.json().id, w.id)
    t.equal(await usdcOf(to), 1_250_000n, 'nothing sent twice')
    t.match((await post(`/v1/agents/${agent.address}/withdrawals`, { to, amount: '1' }, key)).json(), {
      statusCode: 409,
      code: 'idempotency_key_reused',
    })
    t.equal((await get(`/v1/withdrawals/${w.id}`, stranger.auth)).statusCode, 404, "another user's withdrawal is 404")

    // history: a transaction of kind withdrawal, its events, and in the exports
    const page = (await get(`/v1/transactions?agent=${agent.address}&kind=withdrawal`)).json()
    t.match(page.data, [
      {
        object: 'transaction',
        id: w.id,
        kind: 'withdrawal',
        status: 'confirmed',
        payer: agent.address,
        pay_to: to,
        value: '1250000',
        asset: 'USDC',
        tx_hash: done.tx_hash,
      },
    ])
    t.same(
      (await get('/v1/transactions?kind=payment')).json().data.filter((r: { kind: string }) => r.kind === 'withdrawal'),
      [],
      'kind=payment leaves withdrawals out',
    )
    t.same(
      (await get('/v1/transactions?role=buyer')).json().data.filter((r: { kind: string }) => r.kind === 'withdrawal'),
      [],
      'withdrawals have no role',
    )
    const events = (await get('/v1/payment-events?kind=withdrawal&format=ndjson')).body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    t.same(
      events.filter((e) => e.withdrawal_id === w.id).map((e) => e.type),
      ['created', 'submitted', 'confirmed'],
    )
    t.match(events[0], { object: 'withdrawal_event', payment_id: null })
    const csv = (await get('/v1/transactions?format=csv')).body.trim().split('\r\n')
    // no field of these rows holds a comma: a split is the CSV's columns
    const kind = csv[0]!.split(',').indexOf('kind')
    t.ok(kind > 0, 'the CSV has a kind column')
    t.ok(
      csv.some((l) => l.startsWith(w.id) && l.split(',')[kind] === 'withdrawal' && l.includes(done.tx_hash)),
      'the CSV lists the withdrawal',
    )
  },
)

t.test('refused while payments are unsettled beyond the remaining balance; the rest may leave', async (t) => {
  const agent = await p.agent({ user: owner.userId, fund: 10_000n })
  // the platform signs a 1000-unit payment for the agent (a transfer: opted out of batch-settlement);
  // it is not used yet, so it is unsettled
  const challenge = (await fetch(`${ECHO}?msg=hold`)).headers.get('payment-required')
  const signed = await p.web.inject({
    method: 'POST',
    url: '/v1/agent/payments',
    headers: agent.auth,
    payload: { url: `${ECHO}?msg=hold`, challenge, batch_settlement: false },
  })
  t.equal(signed.statusCode, 201)
  const refused = await post(`/v1/agents/${agent.address}/withdrawals`, { to: fresh(), amount: '10000' })
  t.equal(refused.statusCode, 409)
  t.match(refused.json(), {
    code: 'withdrawal_exceeds_available',
    balance: '10000',
    unsettled: '1000',
    available: '9000',
    amount: '10000',
    message:
      /can withdraw 0.009 USDC now \(its balance 0.01 USDC minus 0.001 USDC not settled yet\); 0.01 USDC were asked/,
  })
  const ok = await post(`/v1/agents/${agent.address}/withdrawals`, { to: fresh(), amount: '9000' })
  t.equal(ok.statusCode, 201, 'what is not promised to a payment may leave')
  t.match(await settledWithdrawal(ok.json().id), { status: 'confirmed' })
  // and the payment the agent signed can still be paid: the funds it was promised stayed
  const paid = await fetch(`${ECHO}?msg=hold`, { headers: { [signed.json().header]: signed.json().value } })
  t.equal(paid.status, 200)
})

t.test('platform-signed payments and withdrawals at the same time never promise more than the balance', async (t) => {
  const BALANCE = 20_000n
  const agent = await p.agent({ user: owner.userId, fund: BALANCE })
  const challenge = (await fetch(`${ECHO}?msg=race`)).headers.get('payment-required')
  const pay = () =>
    p.web.inject({
      method: 'POST',
      url: '/v1/agent/payments',
      headers: agent.auth,
      payload: { url: `${ECHO}?msg=race`, challenge, batch_settlement: false },
    })
  const withdraw = () => post(`/v1/agents/${agent.address}/withdrawals`, { to: fresh(), amount: '6000' })
  // transfers (opted out of batch-settlement), each promised from the wallet until it settles;
  // 12 payments of 1000 and 3 withdrawals of 6000 ask for 30,000 of 20,000 (either kind alone fits, so each gets some in any order)
  const results = await Promise.all([...Array.from({ length: 12 }, pay), withdraw(), withdraw(), withdraw()])
  const payments = results.slice(0, 12)
  const withdrawals = results.slice(12)
  const signed = payments.filter((r) => r.statusCode === 201)
  const sent = withdrawals.filter((r) => r.statusCode === 201)
  for (const r of payments.filter((r) => r.statusCode !== 201))
    t.equal(r.json().code, 'insufficient_balance', 'a payment is refused for the balance only')
  for (const r of withdrawals.filter((r) => r.statusCode !== 201))
    t.equal(r.json().code, 'withdrawal_exceeds_available')
  const promised = BigInt(signed.length) * 1000n + BigInt(sent.length) * 6000n
  t.ok(
    promised <= BALANCE,
    `promised ${promised} of ${BALANCE} (${signed.length} payments, ${sent.length} withdrawals)`,
  )
  t.ok(sent.length >= 1 && signed.length >= 2, 'both kinds got some')
  for (const r of sent) t.match(await settledWithdrawal(r.json().id), { status: 'confirmed' })
  // every signed payment is still covered on chain, and pays
  t.ok((await usdcOf(agent.address)) >= BigInt(signed.length) * 1000n, 'the wallet still holds every signed payment')
  for (const r of signed)
    t.equal((await fetch(`${ECHO}?msg=race`, { headers: { [r.json().header]: r.json().value } })).status, 200)
})

t.test(
  "paid calls signed with the wallet's own key and withdrawals at the same time: what is accepted all settles",
  async (t) => {
    const workers = await startWorkers(deps, {
      everyMs: {
        'topup-check': HOUR,
        'settlement-tick': 200,
        'recovery-sweep': HOUR,
        'balance-refresh': HOUR,
        'relayer-funds-check': HOUR,
        'withdrawal-sweep': 500,
      },
      log: { info: () => {}, warn: () => {}, error: () => {} },
    })
    t.teardown(() => workers.close())
    // a wallet whose key is held outside the platform (as the demo payer's is), linked as the user's agent
    const key = generatePrivateKey()
    const account = privateKeyToAccount(key)
    t.equal(await ensureDemoPayerAgent(deps, owner.userId, { address: account.address, privateKey: key }), true)
    const BALANCE = 10_000n
    await mintUsdc(p.devnet.rpcUrl, account.address, BALANCE)
    const required = decodeRequired((await fetch(`${ECHO}?msg=own`)).headers.get('payment-required'))
    const call = async () =>
      fetch(`${ECHO}?msg=own`, {
        headers: { 'payment-signature': v2Header(required, await signFor(account, required)) },
      })
    const withdraw = () => post(`/v1/agents/${account.address}/withdrawals`, { to: fresh(), amount: '3000' })
    // 6 calls of 1000 and 2 withdrawals of 3000 ask for 12,000 of 10,000 (either kind alone fits, so each gets some in any order)
    const [calls, withdrawals] = await Promise.all([
      Promise.all(Array.from({ length: 6 }, call)),
      Promise.all([withdraw(), withdraw()]),
    ])
    const served = calls.filter((r) => r.status === 200)
    for (const r of calls.filter((r) => r.status !== 200))
      t.equal(r.status, 402, 'a call the credit cannot cover gets the challenge again')
    const sent = withdrawals.filter((r) => r.statusCode === 201)
    for (const r of withdrawals.filter((r) => r.statusCode !== 201))
      t.equal(r.json().code, 'withdrawal_exceeds_available')
    const promised = BigInt(served.length) * 1000n + BigInt(sent.length) * 3000n
    t.ok(promised <= BALANCE, `accepted ${promised} of ${BALANCE} (${served.length} calls, ${sent.length} withdrawals)`)
    t.ok(sent.length >= 1 && served.length >= 1, 'both kinds got some')

    for (const r of sent) t.match(await settledWithdrawal(r.json().id), { status: 'confirmed' })
    const rows = await until('every served payment to settle', async () => {
      const rows = await deps.db
        .selectFrom('payments')
        .select(['status', 'failure_reason'])
        .where('payer', '=', account.address.toLowerCase())
        .execute()
      return rows.length === served.length && rows.every((r) => r.status === 'settled' || r.status === 'failed') && rows
    })
    t.same(
      rows.filter((r) => r.status !== 'settled'),
      [],
      'no accepted payment failed for lack of funds',
    )
    t.equal(await usdcOf(account.address), BALANCE - promised, 'the wallet paid exactly what was accepted')
  },
)

t.test(
  'the funding wallet: USDC around open top-ups, its ETH leaves room for the gas; one ETH withdrawal at a time',
  async (t) => {
    const u = await userWithKey(deps)
    const fw = (await get('/v1/funding-wallet', u.auth)).json()
    await mintUsdc(p.devnet.rpcUrl, fw.address, 3_000_000n)
    await createTestClient({ mode: 'anvil', transport: http(p.devnet.rpcUrl) }).setBalance({
      address: fw.address,
      value: parseEther('0.01'),
    })
    const usdcTo = fresh()
    const r = await post('/v1/funding-wallet/withdrawals', { to: usdcTo, amount: '2000000' }, randomUUID(), u.auth)
    t.equal(r.statusCode, 201)
    t.match(r.json(), { source: 'funding_wallet', agent: null, from: fw.address, asset: 'USDC' })
    t.match(await settledWithdrawal(r.json().id, u.auth), { status: 'confirmed' })
    t.equal(await usdcOf(usdcTo), 2_000_000n)

    // all of the ETH cannot leave: the transfer's gas is paid from it
    const ethTo = fresh()
    const all = await post(
      '/v1/funding-wallet/withdrawals',
      { to: ethTo, amount: parseEther('0.01').toString(), asset: 'ETH' },
      randomUUID(),
      u.auth,
    )
    t.equal(all.statusCode, 409)
    t.match(all.json(), {
      code: 'withdrawal_exceeds_available',
      asset: 'ETH',
      balance: parseEther('0.01').toString(),
      fee: /^\d+$/,
      message:
        /its balance 0\.01 ETH minus 0 ETH not settled yet and 0\.\d+ ETH of gas for the transfer\); 0\.01 ETH were asked/,
    })
    const most = BigInt(all.json().available)
    const eth = await post(
      '/v1/funding-wallet/withdrawals',
      { to: ethTo, amount: most.toString(), asset: 'ETH' },
      randomUUID(),
      u.auth,
    )
    t.equal(eth.statusCode, 201)
    const second = await post(
      '/v1/funding-wallet/withdrawals',
      { to: ethTo, amount: '1', asset: 'ETH' },
      randomUUID(),
      u.auth,
    )
    t.ok(second.statusCode === 409, 'a second ETH withdrawal waits for the first (or finds too little left)')
    const done = await settledWithdrawal(eth.json().id, u.auth)
    t.match(done, { status: 'confirmed', asset: 'ETH', amount: most.toString() })
    t.equal(await deps.chain.getBalance({ address: ethTo }), most, 'the ETH arrived')
  },
)

t.test(
  'a withdrawal recorded but not sent, or sent by a process that died, is finished by the sweep; nothing is sent twice',
  async (t) => {
    const agent = await p.agent({ user: owner.userId, fund: 4_000n })
    const svc = createWithdrawals(deps)
    // recorded, never sent (the web process died after answering)
    const a = await svc.request(
      owner.userId,
      { source: 'agent', address: agent.address },
      { to: fresh(), amount: '1000' },
      randomUUID(),
    )
    t.equal(a.withdrawal.status, 'pending')
    // recorded with a transaction hash, never broadcast (died between recording and sending)
    const b = await svc.request(
      owner.userId,
      { source: 'agent', address: agent.address },
      { to: fresh(), amount: '2000' },
      randomUUID(),
    )
    await deps.db
      .updateTable('withdrawals')
      .set({ tx_hash: `0x${randomBytes(32).toString('hex')}` })
      .where('id', '=', b.withdrawal.id)
      .execute()
    // the available balance already counts both
    t.match((await post(`/v1/agents/${agent.address}/withdrawals`, { to: fresh(), amount: '1001' })).json(), {
      code: 'withdrawal_exceeds_available',
      available: '1000',
    })
    const swept = await withdrawalSweep.process({ deps } as never, {} as never)
    t.match(swept, [{ status: 'confirmed' }, { status: 'confirmed' }])
    t.equal(await usdcOf(agent.address), 1_000n, 'each sent once')
    t.same(await svc.processDue(), [], 'nothing left to do')
  },
)
