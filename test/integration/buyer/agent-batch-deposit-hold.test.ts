/**
 * A batch-settlement deposit's authorization counts in the agent wallet's unsettled total until the
 * chain proves it unusable, and no longer: once the deposit landed (the balance already lacks it)
 * the sweep reads `authorizationState(payer, nonce)` and releases its hold (after the balance cache's
 * TTL), so the wallet's available balance is not short by the deposit twice; and a deposit signed
 * but never used is recorded in Postgres, so a rebuild of the unsettled total after Redis lost it
 * still counts it, until the chain is past its validBefore.
 */
import t from 'tap'
import { erc20Abi, type Address, type Hex } from 'viem'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { wrapFetch } from '../../../src/client.js'
import { redisTag } from '../../../src/redis-client.js'
import { createAgentPayments } from '../../../src/services/agent-payments/agent-payments.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { until } from '../../helpers/until.js'

const HOUR = 3_600_000
const p = await startBuyerPlatform(t)
const { deps, devnet } = p
const db = deps.db
const url = `${p.proxyUrl}/tollgate/toolbox/echo?msg=hi`
const challenge = (await fetch(url)).headers.get('payment-required')!

const onChain = (a: Address) =>
  deps.chain.readContract({ address: devnet.usdcAddress, abi: erc20Abi, functionName: 'balanceOf', args: [a] })
const usedOnChain = (payer: string, nonce: string) =>
  deps.chain.readContract({
    address: devnet.usdcAddress,
    abi: usdcAbi,
    functionName: 'authorizationState',
    args: [payer as Hex, nonce as Hex],
  })
const status = async (key: string) =>
  (await (await fetch(`${p.webUrl}/v1/agent/`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
    balance: string
    unsettled: string
    available: string
  }
/** an exact payment for the endpoint (opted out of batch-settlement), signed and not sent */
const payExact = (key: string) =>
  fetch(`${p.webUrl}/v1/agent/payments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url, challenge, batch_settlement: false }),
  })
const holdsOf = (payer: string) =>
  db.selectFrom('agent_deposit_holds').selectAll().where('payer', '=', payer.toLowerCase()).execute()
const sweep = async (now?: () => Date) => {
  const svc = createAgentPayments({ ...deps, cacheAuth: false, ...(now ? { now } : {}) })
  try {
    return await svc.sweep(5000)
  } finally {
    await svc.close()
  }
}

t.test('a deposit that landed stops counting once the sweep reads it used on chain', async (t) => {
  // enough for the default deposit (100 x the price) and 100 calls more
  const agent = await p.agent({ fund: 200_000n })
  const payer = agent.address.toLowerCase()
  const res = await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key })(url)
  t.equal(res.status, 200, await res.clone().text())
  t.match(res.payment, { scheme: 'batch-settlement', amount: '1000', deposit: 100_000n })
  t.equal(await onChain(agent.address), 100_000n, 'the deposit landed')
  const [hold] = await holdsOf(payer)
  t.match(hold, { amount: '100000', released_at: null }, 'the deposit authorization was recorded')
  t.equal(hold && (await usedOnChain(payer, hold.nonce)), true, 'its recorded nonce is the one the chain used')
  t.ok(
    hold && BigInt(hold.valid_before) > BigInt(Math.floor(Date.now() / 1000)),
    'its validBefore, as signed, is ahead',
  )

  // nothing has read the chain yet: the hold still counts it (no one's word releases it), beside a
  // balance re-read (the cache holds one for 1 s) that already lacks it
  await new Promise((r) => setTimeout(r, 1_100))
  const held = await status(agent.key)
  t.same(held, { ...held, balance: '100000', unsettled: '100000', available: '0' })
  const refused = await payExact(agent.key)
  t.equal(refused.status, 402, 'until the sweep reads the chain, the wallet is short by the deposit twice')
  t.match(await refused.json(), { code: 'insufficient_balance' })
  const swept = await sweep()
  t.equal(swept.deposits, 1, 'the sweep released the used deposit')
  t.not((await holdsOf(payer))[0]?.released_at ?? null, null, 'released in Postgres')
  // a settled payment's delay: every process re-reads the balance (1 s here) before it stops counting
  const after = await until(
    'the deposit hold to stop counting',
    async () => {
      const s = await status(agent.key)
      return s.unsettled === '0' && s
    },
    8_000,
  )
  t.same(after, { ...after, balance: '100000', unsettled: '0', available: '100000' }, 'not short by the deposit twice')
  const paid = await payExact(agent.key)
  t.equal(paid.status, 201, 'a payment the wallet can cover is signed')
  t.match(await paid.json(), { scheme: 'exact', amount: '1000' })
})

t.test('a deposit signed and never used is counted after Redis lost the wallet, until it expires', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const payer = agent.address.toLowerCase()
  const signed = await (
    await fetch(`${p.webUrl}/v1/agent/payments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agent.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url, challenge }),
    })
  ).json()
  t.match(signed, { scheme: 'batch-settlement', deposit: '100000' }, 'signed, never sent')
  t.equal((await status(agent.key)).unsettled, '100000')

  // Redis loses the wallet's unsettled set: the next read rebuilds it from Postgres
  await deps.redis.del(
    deps.key('agent-unsettled', redisTag(payer), 'total'),
    deps.key('agent-unsettled', redisTag(payer), 'auths'),
  )
  const rebuilt = await status(agent.key)
  t.same(
    rebuilt,
    { ...rebuilt, balance: '1000000', unsettled: '100000', available: '900000' },
    'the rebuild counts the usable deposit authorization',
  )

  // unused and not expired: the sweep leaves it
  const [hold] = await holdsOf(payer)
  t.equal(await usedOnChain(payer, hold!.nonce), false)
  t.equal((await sweep()).deposits, 0)
  t.equal((await status(agent.key)).unsettled, '100000', 'still counted')
  t.equal((await holdsOf(payer))[0]!.released_at, null)

  // the chain past its validBefore, unused: released at once
  await p.chainTimeAtLeast(Number(hold!.valid_before) + 1)
  const later = await sweep(() => new Date(Date.now() + HOUR))
  t.ok(later.deposits >= 1, 'released at expiry')
  t.not((await holdsOf(payer))[0]!.released_at, null)
  t.equal((await status(agent.key)).unsettled, '0', 'no longer counted')
})
