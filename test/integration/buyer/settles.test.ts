import { createTestClient, http, parseEther } from 'viem'
import t from 'tap'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { runCli, type Io } from '../../../src/cli/main.js'
import { wrapFetch } from '../../../src/client.js'
import { createAgentPayments } from '../../../src/services/agent-payments/agent-payments.js'
import { startWorkers } from '../../../workers/index.js'
import { until } from '../../helpers/until.js'
import { userWithKey } from '../../helpers/accounts.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'

const HOUR = 3_600_000

t.test(
  'an agent pays a hosted endpoint through the wrapper and the CLI; the payments settle; caps and exports show them',
  async (t) => {
    const p = await startBuyerPlatform(t)
    const owner = await userWithKey(p.deps)
    const agent = await p.agent({ user: owner.userId, fund: 1_000_000n, caps: { daily: '100000', monthly: '500000' } })
    await createTestClient({ mode: 'anvil', transport: http(p.devnet.rpcUrl) }).setBalance({
      address: agent.address,
      value: parseEther('1'),
    })
    const workers = await startWorkers(p.deps, {
      everyMs: {
        'topup-check': HOUR,
        'settlement-tick': 200,
        'recovery-sweep': HOUR,
        'balance-refresh': HOUR,
        'relayer-funds-check': HOUR,
      },
      log: { info: () => {}, warn: () => {}, error: () => {} },
    })
    t.teardown(() => workers.close())
    const balanceOf = (a: string) =>
      p.deps.chain.readContract({
        address: p.deps.config.chain.usdc.address,
        abi: usdcAbi,
        functionName: 'balanceOf',
        args: [a as `0x${string}`],
      })
    const receiverBefore = await balanceOf(p.devnet.accounts.receiver.address)

    // through the wrapper; exact (opted out of the hosted endpoint's batch-settlement): one transfer per call, settled
    const res = await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, batchSettlement: false })(
      `${p.proxyUrl}/tollgate/toolbox/echo?msg=settle`,
    )
    t.equal(res.status, 200)
    const viaWrapper = res.payment!.agentPaymentId!
    // through the CLI
    const out: Buffer[] = []
    const err: string[] = []
    const io: Io = {
      stdout: (c) => out.push(Buffer.from(c)),
      stderr: (l) => err.push(l),
      env: { TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key },
      home: '/nonexistent',
    }
    t.equal(
      await runCli(
        ['fetch', '-X', 'POST', `${p.proxyUrl}/tollgate/toolbox/echo`, '--json', '{"msg":"cli"}', '--no-batch'],
        io,
      ),
      0,
      err.join(''),
    )
    t.match(Buffer.concat(out).toString(), /cli/)
    const ids = (
      await p.deps.db
        .selectFrom('agent_payments')
        .select('id')
        .where('agent_id', '=', agent.id)
        .orderBy('created_at')
        .execute()
    ).map((r) => r.id)
    t.equal(ids.length, 2, 'one agent payment per call')
    t.ok(ids.includes(viaWrapper))

    // the settlement worker settles both on chain
    const settled = await until('both payments to settle', async () => {
      const rows = await p.deps.db
        .selectFrom('payments')
        .select(['id', 'status', 'tx_hash', 'nonce'])
        .where('payer', '=', agent.address.toLowerCase())
        .execute()
      return rows.length === 2 && rows.every((r) => r.status === 'settled' && r.tx_hash) && rows
    })
    t.equal(await balanceOf(agent.address), 1_000_000n - 2000n, 'the agent wallet paid 2 × 1000 on chain')
    t.equal((await balanceOf(p.devnet.accounts.receiver.address)) - receiverBefore, 2000n, 'the seller received it')

    // the agent payment status reports the settlement
    for (const id of ids) {
      const st = await p.web.inject({ method: 'GET', url: `/v1/agent/payments/${id}`, headers: agent.auth })
      t.match(
        st.json(),
        { status: 'accepted', settlement: { status: 'settled' }, transaction: /^0x[0-9a-f]{64}$/ },
        `payment ${id} settled`,
      )
    }
    // the sweep records the transaction on the buyer-side row
    const svc = createAgentPayments(p.deps)
    t.teardown(() => svc.close())
    await svc.sweep()
    const rows = await p.deps.db
      .selectFrom('agent_payments')
      .select(['nonce', 'tx_hash'])
      .where('agent_id', '=', agent.id)
      .execute()
    for (const r of rows)
      t.equal(
        r.tx_hash,
        settled.find((s) => s.nonce === r.nonce)!.tx_hash,
        'buyer row carries the settlement transaction',
      )

    // caps: what was paid, no more
    const preview = await p.web.inject({
      method: 'POST',
      url: '/v1/agent/payments',
      headers: agent.auth,
      payload: {
        url: `${p.proxyUrl}/tollgate/toolbox/echo`,
        challenge: (await fetch(`${p.proxyUrl}/tollgate/toolbox/echo`)).headers.get('payment-required'),
        dry_run: true,
      },
    })
    t.match(
      preview.json(),
      { spent: { daily: '2000', monthly: '2000' }, headroom: { daily: '97000', monthly: '497000' } },
      'cap usage equals what was paid',
    )

    // exports: transactions and events with the settled status and transaction hashes
    const page = (await p.web.inject({ method: 'GET', url: '/v1/transactions?limit=10', headers: owner.auth })).json()
    t.equal(page.data.length, 2)
    for (const s of settled)
      t.match(
        page.data.find((d: { id: string }) => d.id === s.id),
        { status: 'settled', tx_hash: s.tx_hash, payer: agent.address.toLowerCase(), value: '1000' },
      )
    const csv = (await p.web.inject({ method: 'GET', url: '/v1/transactions?format=csv', headers: owner.auth })).body
    const nd = (await p.web.inject({ method: 'GET', url: '/v1/transactions?format=ndjson', headers: owner.auth })).body
    const ndRows = nd
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    t.equal(ndRows.length, 2)
    for (const s of settled) {
      t.ok(csv.includes(s.tx_hash!) && csv.includes(s.id), 'CSV carries the payment and its transaction')
      t.match(
        ndRows.find((r) => r.id === s.id),
        { status: 'settled', tx_hash: s.tx_hash },
      )
    }
    const events = (
      await p.web.inject({ method: 'GET', url: '/v1/payment-events?format=ndjson', headers: owner.auth })
    ).body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    for (const s of settled)
      t.ok(
        events.some((e) => e.payment_id === s.id && e.to_status === 'settled'),
        `event log shows ${s.id} settled`,
      )
    const evCsv = (await p.web.inject({ method: 'GET', url: '/v1/payment-events?format=csv', headers: owner.auth }))
      .body
    t.equal(
      evCsv.split('\n').filter((l) => l.includes('settled')).length >= 2,
      true,
      'CSV event log shows the settlements',
    )
  },
)
