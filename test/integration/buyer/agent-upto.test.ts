/**
 * Agent wallets pay `upto` (usage-based prices, issue #27) through POST /v1/agent/payments and
 * wrapFetch: the custodial wallet approves Permit2 once (a relayer sends its EIP-2612 permit), the
 * caps reserve each call's maximum and keep only the charge the proxy recorded (a hosted
 * language-model endpoint charged by tokens, a seller upstream by X-Tollgate-Charge), a failed call
 * releases everything, the preview says "up to", and the chain settles exactly the charges.
 */
import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { erc20Abi, maxUint256, type Address } from 'viem'
import { PERMIT2_ADDRESS } from '../../../src/chain/permit2.js'
import { runCli, type Io } from '../../../src/cli/main.js'
import { PaymentRefusedError, wrapFetch } from '../../../src/client.js'
import { createAgentPayments, type SignedPayment } from '../../../src/services/agent-payments/agent-payments.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { createPublishing } from '../../../src/services/publishing/publishing.js'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { llmSettings } from '../../helpers/llm-stand-in.js'
import { meteredUpstream, usageReportingLlm } from '../../helpers/metered.js'
import { decodeRequired } from '../../helpers/pay.js'
import { newPayer, settleAllOf, walletFor } from '../../helpers/settlement.js'
import { until } from '../../helpers/until.js'

const MAX = 5000n

// the seller's metered upstream: charges ?charge=N, fails on ?charge=fail, waits for the gate on ?gate=1
let gate: Promise<void> = Promise.resolve()
let openGate = () => {}
const closeGate = () => {
  gate = new Promise((r) => (openGate = r))
}
const origin = await meteredUpstream(t, () => gate)

const llm = await usageReportingLlm(t)
// the proxy with the real hosted handlers and a language-model provider (the stand-in)
const p = await startBuyerPlatform(t, {
  env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true' },
  proxy: { handlersDir: undefined, providers: llmSettings(llm.url), allowPrivateNetwork: true },
})
const { deps, devnet } = p
const db = deps.db
await db
  .updateTable('endpoints')
  .set({ schemes: ['exact', 'upto'] })
  .where('slug', '=', 'ai-text-summarizer')
  .execute()
const seller = await createUsers(deps).create(`meter-${Date.now()}@example.com`, 'correct horse battery staple')
const pub = createPublishing(deps)
await pub.claimNamespace({ userId: seller.id }, { namespace: 'meter', display_name: 'Meter' })
await pub.createService({ userId: seller.id }, 'meter', { name: 'svc', pay_to: devnet.accounts.receiver.address })
await pub.createEndpoint({ userId: seller.id }, 'meter', 'svc', {
  slug: 'metered',
  methods: ['GET'],
  price: MAX.toString(),
  upstream_url: origin,
  schemes: ['exact', 'upto'],
})
await announceRegistryChange(deps)
const proxyUrl = p.proxyUrl
await until('the proxy offers upto', async () => {
  const h = (await fetch(`${proxyUrl}/meter/svc/metered`)).headers.get('payment-required')
  return h !== null && decodeRequired(h).accepts.length === 2
})
const metered = (q: string) => `${proxyUrl}/meter/svc/metered?${q}`

const balance = (a: Address) =>
  deps.chain.readContract({ address: devnet.usdcAddress, abi: erc20Abi, functionName: 'balanceOf', args: [a] })
const rowsOf = (agentId: string) =>
  db
    .selectFrom('agent_payments')
    .select(['id', 'scheme', 'status', 'amount', 'max_amount', 'nonce', 'payer'])
    .where('agent_id', '=', agentId)
    .orderBy('created_at')
    .execute()
const statusOf = async (key: string) =>
  (await (await fetch(`${p.webUrl}/v1/agent/`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
    spent: { daily: string }
    headroom: { daily: string | null }
    unsettled: string
  }

t.test(
  'an agent pays usage-priced endpoints: the maximum reserved, the charge kept, settled for the charge',
  async (t) => {
    const agent = await p.agent({ fund: 1_000_000n })
    const before = await balance(agent.address)
    const receiverBefore = await balance(devnet.accounts.receiver.address)

    // without opting in, the same endpoint is paid exact
    const plain = await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key })(metered('charge=1'))
    t.equal(plain.status, 200)
    t.match(plain.payment, { scheme: 'exact', amount: '5000' }, 'exact unless the agent opts in')

    const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, upto: true })
    const hosted = await pay(
      `${proxyUrl}/tollgate/toolbox/ai-text-summarizer?text=${encodeURIComponent('A long text. '.repeat(20))}`,
    )
    t.equal(hosted.status, 200, await hosted.clone().text())
    t.match(hosted.payment, { scheme: 'upto', amount: '800', maxAmount: '1000', header: 'PAYMENT-SIGNATURE' })
    t.equal(
      (await deps.chain.readContract({
        address: devnet.usdcAddress,
        abi: erc20Abi,
        functionName: 'allowance',
        args: [agent.address, PERMIT2_ADDRESS],
      })) >
        10n ** 30n,
      true,
      'the custodial wallet approved Permit2 (a relayer sent its permit; the agent has no gas)',
    )
    const m = await pay(metered('charge=1234'))
    t.equal(m.status, 200)
    t.match(m.payment, { scheme: 'upto', amount: '1234', maxAmount: '5000' })

    const rows = await rowsOf(agent.id)
    t.same(
      rows.map((r) => [r.scheme, r.status, r.amount, r.max_amount]),
      [
        ['exact', 'accepted', '5000', null],
        ['upto', 'accepted', '800', '1000'],
        ['upto', 'accepted', '1234', '5000'],
      ],
      'agent_payments records the charge and the maximum',
    )
    t.equal((await statusOf(agent.key)).spent.daily, String(5000 + 800 + 1234), 'the caps count the charges')

    // the proxy's batch settles: on chain the wallet paid the charges, not the maxima
    await settleAllOf(deps, agent.address)
    const spent = 5000n + 800n + 1234n
    t.equal(before - (await balance(agent.address)), spent, 'the agent wallet paid exactly the charges')
    t.equal((await balance(devnet.accounts.receiver.address)) - receiverBefore, spent, 'the sellers got them')
  },
)

t.test(
  'a daily cap below the concurrent maxima: reserved at the maximum, the difference released, exactly',
  async (t) => {
    // 12000 a day: two maxima (10000) fit at once, not three; at a charge of 1000 a call the
    // released differences let later calls in until less than one maximum is left
    const agent = await p.agent({ fund: 1_000_000n, caps: { daily: '12000' } })
    const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, upto: true })
    closeGate()
    const calls = Array.from({ length: 6 }, () =>
      pay(metered('charge=1000&gate=1')).then(
        (res) => ({ ok: true as const, res }),
        (err: unknown) => ({ ok: false as const, err }),
      ),
    )
    let refused = 0
    for (const c of calls) void c.then((r) => (refused += r.ok ? 0 : 1))
    await until('four of six concurrent calls refused', async () => refused === 4)
    t.equal((await statusOf(agent.key)).spent.daily, '10000', 'two maxima reserved while the calls run')
    openGate()
    const results = await Promise.all(calls)
    const ok = results.filter((r) => r.ok)
    t.equal(ok.length, 2, 'two calls paid')
    for (const r of results)
      if (!r.ok) t.match(r.err, { code: 'spend_cap_exceeded', details: { cap: 'daily' } })
      else t.match(r.res.payment, { scheme: 'upto', amount: '1000', maxAmount: '5000' })
    t.equal((await statusOf(agent.key)).spent.daily, '2000', 'the differences released once the charges were known')

    // one at a time: each needs a whole maximum of headroom; 2000 + 6 x 1000 = 8000, then 4000 left < 5000
    for (let i = 0; i < 6; i++) t.equal((await pay(metered('charge=1000'))).status, 200, `sequential call ${i}`)
    const over = await pay(metered('charge=1000')).catch((e) => e)
    t.type(over, PaymentRefusedError)
    t.match(over, { code: 'spend_cap_exceeded', details: { cap: 'daily', spent: '8000', remaining: '4000' } })
    const rows = await rowsOf(agent.id)
    t.equal(rows.length, 8, 'nothing signed for refused calls')
    t.same(
      rows.map((r) => [r.amount, r.max_amount]),
      Array(8).fill(['1000', '5000']),
    )
  },
)

t.test('a failed call: nothing charged, the reservation released', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n, caps: { daily: '6000' } })
  const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, upto: true })
  const failed = await pay(metered('charge=fail'))
  t.equal(failed.status, 500)
  const [row] = await rowsOf(agent.id)
  t.match(row, { scheme: 'upto', status: 'rejected', max_amount: '5000' }, 'released: the proxy voided it')
  const s = await statusOf(agent.key)
  t.equal(s.spent.daily, '0', 'nothing counted')
  t.equal(s.unsettled, '0', 'nothing held against the wallet')
  // a charge of 0 is voided by the proxy too: released
  t.equal((await pay(metered('charge=0'))).status, 200)
  t.equal((await statusOf(agent.key)).spent.daily, '0')
  // and the whole cap is there again
  t.equal((await pay(metered('charge=4000'))).status, 200)
  t.equal((await statusOf(agent.key)).spent.daily, '4000')
})

t.test('caps and preview: the per-transaction cap applies to the maximum; the preview says "up to"', async (t) => {
  const small = await p.agent({ fund: 1_000_000n, caps: { per_transaction: '4999' } })
  const refused = await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: small.key, upto: true })(
    metered('charge=1'),
  ).catch((e) => e)
  t.match(refused, { code: 'spend_cap_exceeded', details: { cap: 'per_transaction' } })
  t.same(await rowsOf(small.id), [])

  const agent = await p.agent({ fund: 1_000_000n })
  const challenge = (await fetch(metered('charge=1'))).headers.get('payment-required')!
  t.same(
    decodeRequired(challenge).accepts.map((a: { scheme: string }) => a.scheme),
    ['exact', 'upto'],
  )
  const preview = async (body: Record<string, unknown>) =>
    (
      await fetch(`${p.webUrl}/v1/agent/payments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${agent.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: metered('charge=1'), challenge, dry_run: true, ...body }),
      })
    ).json()
  t.match(await preview({ upto: true }), {
    object: 'agent_payment_preview',
    would_pay: { scheme: 'upto', amount: '5000', usage_based: true, max_amount: '5000' },
    refusal: null,
  })
  t.match(await preview({}), { would_pay: { scheme: 'exact', amount: '5000' } })
  t.notOk(((await preview({})) as { would_pay: Record<string, unknown> }).would_pay.usage_based)
  t.match(await preview({ upto: 'yes' }), { code: 'invalid_parameter', param: 'upto' })
  t.same(await rowsOf(agent.id), [], 'a preview signs nothing')

  // tollgate fetch --inspect lists the usage-based requirement as "up to"
  const out: Buffer[] = []
  const io: Io = {
    stdout: (c) => out.push(Buffer.from(c)),
    stderr: () => {},
    env: { TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key },
    home: mkdtempSync(path.join(os.tmpdir(), 'tg-upto-inspect-')),
  }
  t.equal(await runCli(['fetch', metered('charge=1'), '--inspect'], io), 0)
  const text = Buffer.concat(out).toString()
  t.match(text, /price\s+0\.005 USDC\n/, 'exact')
  t.match(text, /price\s+up to 0\.005 USDC \(charged by usage\)/, 'upto: up to')
  t.same(await rowsOf(agent.id), [], 'nothing paid')
})

t.test(
  'an agent that never reports: the sweep keeps the charge the proxy recorded; its expiry is read from Permit2',
  async (t) => {
    const svc = createAgentPayments(deps)
    t.teardown(() => svc.close())
    const agent = await p.agent({ fund: 1_000_000n })
    const url = metered('charge=700')
    const challenge = (await fetch(url)).headers.get('payment-required')!
    const signed = (await svc.pay(agent.id, { url, challenge, upto: true })) as SignedPayment
    t.match(signed, { scheme: 'upto', amount: '5000', max_amount: '5000', usage_based: true })
    const res = await fetch(url, { headers: { [signed.header]: signed.value } })
    t.equal(res.status, 200)
    t.equal((await statusOf(agent.key)).spent.daily, '5000', 'unreported: the maximum stays counted')
    await svc.sweep()
    t.equal((await statusOf(agent.key)).spent.daily, '700', 'the sweep lowered it to the charge')
    t.match(await svc.get(agent.id, signed.payment_id), { amount: '700', max_amount: '5000', scheme: 'upto' })

    // settled: its Permit2 nonce is used; another signed and never sent: unused. Past both deadlines
    // the sweep reads which from Permit2: the first stays counted at its charge, the second is released
    const settler = createSettler(deps, { batchSize: 50 })
    await until('the payment settled', async () => {
      await settler.runOnce()
      const r = await db
        .selectFrom('payments')
        .select('status')
        .where('payer', '=', agent.address.toLowerCase())
        .executeTakeFirst()
      return r?.status === 'settled'
    })
    const later = createAgentPayments({ ...deps, now: () => new Date(Date.now() + 3_600_000) })
    await p.chainTimeAtLeast(Math.floor(Date.now() / 1000) + 3_600) // past the deadlines by the chain's clock
    t.teardown(() => later.close())
    const unsent = (await svc.pay(agent.id, { url, challenge, upto: true })) as SignedPayment
    t.equal((await statusOf(agent.key)).spent.daily, '5700')
    await later.sweep()
    t.match(await svc.get(agent.id, unsent.payment_id), { status: 'expired' })
    t.equal((await statusOf(agent.key)).spent.daily, '700', 'released at expiry')
  },
)

t.test('a local key with upto: signs the maximum, the receipt states the charge', async (t) => {
  const buyer = await newPayer(p, 100_000n)
  await walletFor(p, buyer.key).writeContract({
    address: devnet.usdcAddress,
    abi: erc20Abi,
    functionName: 'approve',
    args: [PERMIT2_ADDRESS, maxUint256],
  })
  const res = await wrapFetch(fetch, { privateKey: buyer.key, upto: true })(metered('charge=321'))
  t.equal(res.status, 200)
  t.match(res.payment, { scheme: 'upto', amount: '321', maxAmount: '5000', header: 'PAYMENT-SIGNATURE' })
  const capped = await wrapFetch(fetch, { privateKey: buyer.key, upto: true, maxAmount: 4999n })(
    metered('charge=1'),
  ).catch((e) => e)
  t.match(capped, { code: 'spend_cap_exceeded' }, 'maxAmount applies to the maximum')
  const plain = await wrapFetch(fetch, { privateKey: buyer.key })(metered('charge=1'))
  t.match(plain.payment, { scheme: 'exact', amount: '5000' }, 'exact unless asked')
})
