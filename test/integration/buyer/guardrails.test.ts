/**
 * Issue #33 §1, §2: an agent key tries to spend past its caps or outside its allowlist. Each attack
 * is a bounded loop; the figure asserted is what left the agent wallet (or what a seller could
 * collect) against the daily cap.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { createPublicClient, createWalletClient, getAddress, http, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { createAgentPayments } from '../../../src/services/agent-payments/agent-payments.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { buildChallenge } from '../../../src/x402/challenge.js'
import { startBuyerPlatform, type BuyerPlatform } from '../../helpers/buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { until } from '../../helpers/until.js'

type Agent = Awaited<ReturnType<BuyerPlatform['agent']>>
const CAP = 5000n
const ROUNDS = 30

const p = await startBuyerPlatform(t, { env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true' } })
const { deps, devnet } = p
const { db } = deps
const chain = deps.config.chain
const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl) })
const submitter = createWalletClient({
  account: privateKeyToAccount(devnet.accounts.demoPayer.privateKey),
  chain: devnet.chain,
  transport: http(devnet.rpcUrl),
})
const echo = `${p.proxyUrl}/tollgate/toolbox/echo?msg=x`
const throws = `${p.proxyUrl}/tollgate/toolbox/throws`

const balanceOf = (who: string) =>
  pub.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [who as Hex] })
const pay = (agent: Agent, url: string, challenge: unknown, extra: Record<string, unknown> = {}) =>
  p.web.inject({
    method: 'POST',
    url: '/v1/agent/payments',
    headers: agent.auth,
    payload: { url, challenge, ...extra },
  })
const report = (agent: Agent, id: string, status: string) =>
  p.web.inject({ method: 'POST', url: `/v1/agent/payments/${id}/outcome`, headers: agent.auth, payload: { status } })
const spent = async (agent: Agent) =>
  (await p.web.inject({ method: 'GET', url: '/v1/agent', headers: agent.auth })).json().spent.daily as string

/** Submits a signed EIP-3009 payment itself, as an agent holding the header would; true when it moved funds. */
async function submitItself(value: string): Promise<boolean> {
  const { payload } = JSON.parse(Buffer.from(value, 'base64').toString()) as {
    payload: { signature: Hex; authorization: Record<string, string> }
  }
  const a = payload.authorization
  try {
    const hash = await submitter.writeContract({
      address: devnet.usdcAddress,
      abi: usdcAbi,
      functionName: 'transferWithAuthorization',
      args: [
        a.from as Hex,
        a.to as Hex,
        BigInt(a.value!),
        BigInt(a.validAfter!),
        BigInt(a.validBefore!),
        a.nonce as Hex,
        payload.signature,
      ],
    })
    return (await pub.waitForTransactionReceipt({ hash })).status === 'success'
  } catch {
    return false // reverted in estimation: cancelled or used
  }
}

/** The challenge with its exact requirement alone (the endpoints here offer vouchers too, which come first). */
const exactOnly = (header: string) => {
  const ch = decodeRequired(header) as unknown as { accepts: Array<{ scheme: string }> }
  ch.accepts = ch.accepts.filter((a) => a.scheme === 'exact')
  return Buffer.from(JSON.stringify(ch)).toString('base64')
}

const exactChallenge = (o: { url: string; payTo: string; amount: bigint; maxTimeoutSeconds?: number }) =>
  buildChallenge({
    resourceUrl: o.url,
    description: 'forged',
    mimeType: 'application/json',
    payTo: o.payTo,
    amount: o.amount,
    maxTimeoutSeconds: o.maxTimeoutSeconds ?? 300,
    method: 'GET',
    chain: { chainId: chain.chainId, network: chain.network, caip2: chain.caip2, usdc: chain.usdc },
  })

await db
  .updateTable('endpoints')
  .set({ schemes: ['exact', 'deferred', 'upto'] })
  .where('slug', 'in', ['echo', 'throws'])
  .execute()
await announceRegistryChange(deps)
await until('the proxy offers deferred and upto', async () => {
  const schemes = decodeRequired((await fetch(echo)).headers.get('payment-required')!).accepts.map((a) => a.scheme)
  return schemes.includes('deferred') && schemes.includes('upto')
})

t.test(
  '§1 a challenge the agent wrote for our own URL, payTo an address it holds: refused, nothing moves',
  async (t) => {
    const agent = await p.agent({
      fund: 1_000_000n,
      caps: { daily: CAP.toString() },
      allow: [{ kind: 'namespace', value: 'tollgate' }],
    })
    const attacker = privateKeyToAccount(generatePrivateKey()).address
    const forged = exactChallenge({ url: echo, payTo: attacker, amount: 5000n }).v1Body
    const before = await balanceOf(agent.address)
    const codes = new Set<string>()
    for (let i = 0; i < ROUNDS; i++) {
      const r = await pay(agent, echo, forged)
      codes.add(`${r.statusCode} ${r.json().code}`)
      if (r.statusCode !== 201) continue
      await report(agent, r.json().payment_id, 'rejected')
      await submitItself(r.json().value)
    }
    const moved = before - (await balanceOf(agent.address))
    t.same([...codes], ['409 requirement_mismatch'], 'every forged challenge refused')
    t.ok(moved <= CAP, `moved ${moved} ≤ cap ${CAP}`)
    t.equal(moved, 0n)
  },
)

t.test('§1 the real challenge, reported rejected and then submitted by the agent itself: moved ≤ cap', async (t) => {
  const agent = await p.agent({
    fund: 1_000_000n,
    caps: { daily: CAP.toString() },
    allow: [{ kind: 'namespace', value: 'tollgate' }],
  })
  const challenge = exactOnly((await fetch(echo)).headers.get('payment-required')!)
  const before = await balanceOf(agent.address)
  let signed = 0
  let movedByAgent = 0
  for (let i = 0; i < ROUNDS; i++) {
    const r = await pay(agent, echo, challenge)
    if (r.statusCode !== 201) continue
    signed++
    // alternately: report first (the platform cancels, the submission reverts), or submit first (the cancel fails: counted)
    if (i % 2 === 0) {
      await report(agent, r.json().payment_id, 'rejected')
      if (await submitItself(r.json().value)) movedByAgent++
    } else {
      if (await submitItself(r.json().value)) movedByAgent++
      await report(agent, r.json().payment_id, 'rejected')
    }
  }
  const moved = before - (await balanceOf(agent.address))
  t.ok(moved <= CAP, `moved ${moved} ≤ cap ${CAP} (${signed} signed, ${movedByAgent} submitted)`)
  t.equal(BigInt(await spent(agent)), moved, 'what moved is what counts')
})

t.test('§1 maxTimeoutSeconds of 10 years: the platform signs at most 600 s of validity', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n, caps: { daily: CAP.toString() } })
  const foreign = 'http://127.0.0.1:9/elsewhere/quote'
  const ch = exactChallenge({
    url: foreign,
    payTo: devnet.accounts.receiver.address,
    amount: 1000n,
    maxTimeoutSeconds: 10 * 365 * 86400,
  })
  const r = await pay(agent, foreign, ch.v2HeaderValue)
  t.equal(r.statusCode, 201)
  const validFor = Number(r.json().valid_before) - Math.floor(Date.now() / 1000)
  t.ok(validFor <= 600 && validFor > 500, `valid for ${validFor} s`)
})

t.test("§1 upto: a settler or payee of the agent's choosing on our own URL is refused", async (t) => {
  const agent = await p.agent({
    fund: 1_000_000n,
    caps: { daily: CAP.toString() },
    allow: [{ kind: 'namespace', value: 'tollgate' }],
  })
  const real = decodeRequired((await fetch(echo)).headers.get('payment-required')!)
  const forge = (o: { payTo?: string; facilitator?: string }) => {
    const ch = structuredClone(real) as unknown as { accepts: Array<Record<string, unknown>> }
    ch.accepts = ch.accepts
      .filter((a) => a.scheme === 'upto')
      .map((a) => ({
        ...a,
        payTo: o.payTo ?? a.payTo,
        extra: {
          ...(a.extra as object),
          facilitatorAddress: o.facilitator ?? (a.extra as Record<string, string>).facilitatorAddress,
        },
      }))
    return Buffer.from(JSON.stringify(ch)).toString('base64')
  }
  const before = await balanceOf(agent.address)
  const codes = new Set<string>()
  for (let i = 0; i < 10; i++) {
    const r = await pay(agent, echo, forge({ payTo: agent.address, facilitator: agent.address }), { upto: true })
    codes.add(`${r.statusCode} ${r.json().code}`)
  }
  const onlySettler = await pay(agent, echo, forge({ facilitator: agent.address }), { upto: true })
  t.same([...codes], ['409 requirement_mismatch'])
  t.equal(onlySettler.statusCode, 409)
  t.match(onlySettler.json().message, /facilitatorAddress .* is not the endpoint's settler/)
  const ok = await pay(agent, echo, forge({}), { upto: true })
  t.equal(ok.statusCode, 201, "the registry's own upto requirement is signed")
  t.equal(ok.json().scheme, 'upto')
  t.equal((await balanceOf(agent.address)) - before, 0n, 'nothing moved')
})

t.test('§1 a host entry binds the payee: only what the host itself asks for is paid', async (t) => {
  const seller = getAddress(devnet.accounts.receiver.address)
  const server = createServer((req, res) => {
    const url = `http://localhost:${(server.address() as AddressInfo).port}${req.url}`
    const ch = exactChallenge({ url, payTo: seller, amount: 1000n })
    res.writeHead(402, { 'content-type': 'application/json', 'payment-required': ch.v2HeaderValue })
    res.end(ch.v1BodyJson)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const url = `http://localhost:${(server.address() as AddressInfo).port}/quote`
  const agent = await p.agent({
    fund: 1_000_000n,
    caps: { daily: CAP.toString() },
    allow: [{ kind: 'host', value: 'localhost' }],
  })
  const codes = new Set<string>()
  for (let i = 0; i < ROUNDS; i++) {
    const r = await pay(agent, url, exactChallenge({ url, payTo: agent.address, amount: 5000n }).v2HeaderValue)
    codes.add(`${r.statusCode} ${r.json().code}`)
  }
  t.same([...codes], ['403 seller_not_allowed'], 'a payee the host never asked for is refused')
  const ok = await pay(agent, url, exactChallenge({ url, payTo: seller, amount: 1000n }).v2HeaderValue)
  t.equal(ok.statusCode, 201, 'the payee the host asks for is paid')
  const pinned = await p.agent({ fund: 1_000_000n, allow: [{ kind: 'pay_to', value: agent.address }] })
  t.equal(
    (await pay(pinned, url, exactChallenge({ url, payTo: agent.address, amount: 1000n }).v2HeaderValue)).statusCode,
    201,
    'a pay_to entry allows its payee anywhere',
  )
})

t.test('§2, §5 vouchers: voided ones stay counted until superseded; concurrent ones count once', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n, caps: { daily: '20000' } })
  const rows = () =>
    db
      .selectFrom('agent_payments')
      .select(['id', 'status', 'amount', 'value_aggregate', 'voucher_id'])
      .where('agent_id', '=', agent.id)
      .where('scheme', '=', 'deferred')
      .orderBy('created_at')
      .execute()
  // a first voucher, served: it carries the deposit into the escrow
  const first = (await pay(agent, echo, (await fetch(echo)).headers.get('payment-required')!)).json()
  t.equal(first.scheme, 'deferred')
  t.equal((await fetch(echo, { headers: { [first.header]: first.value } })).status, 200)
  t.equal(await spent(agent), '1000')

  // 12 vouchers the proxy voids (the seller's upstream fails), each reported rejected and swept
  const svc = createAgentPayments({ ...deps, cacheAuth: false })
  t.teardown(() => svc.close())
  for (let i = 0; i < 12; i++) {
    const v = (await pay(agent, throws, (await fetch(throws)).headers.get('payment-required')!)).json()
    t.equal(v.scheme, 'deferred', JSON.stringify(v))
    t.equal((await fetch(throws, { headers: { [v.header]: v.value } })).status, 502)
    const out = (await report(agent, v.payment_id, 'rejected')).json()
    t.equal(out.counted, true, 'a voided voucher has no expiry: still counted')
    await svc.sweep(5000)
  }
  const open = (await rows()).filter((r) => r.status === 'reserved')
  const servedAggregate = BigInt(first.voucher.value_aggregate)
  // what a seller could collect beyond the served voucher: the highest aggregate signed on that voucher id
  const collectable =
    open.reduce((m, r) => (BigInt(r.value_aggregate!) > m ? BigInt(r.value_aggregate!) : m), 0n) - servedAggregate
  t.equal(
    BigInt(await spent(agent)) - 1000n,
    collectable,
    `counted beyond the served call = collectable (${collectable})`,
  )
  t.ok(collectable <= 1000n, 'each voided voucher superseded the one before: one price collectable, one counted')

  // 5 at once: one head, so one counted
  const challenge = (await fetch(echo)).headers.get('payment-required')!
  const before = BigInt(await spent(agent))
  const five = await Promise.all(Array.from({ length: 5 }, () => pay(agent, echo, challenge)))
  t.same(
    five.map((r) => r.statusCode),
    [201, 201, 201, 201, 201],
  )
  t.equal(
    BigInt(await spent(agent)) - before,
    0n,
    'the five supersede the voided one and each other: nothing more counted',
  )
  const served = await fetch(echo, { headers: { [five[0]!.json().header]: five[0]!.json().value } })
  t.equal(served.status, 200)
  t.equal(await spent(agent), '2000', '2 served, 2 counted')
})
