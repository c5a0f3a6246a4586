/**
 * The timed withdrawal of an agent's batch-settlement channel (issue #34 item 8) through
 * POST /v1/agent/channels/:id/withdraw (and the owner's route), on a real anvil: without ETH for
 * gas it is refused and names the cooperative refund; the first call sends initiateWithdraw from the
 * agent wallet for what is unclaimed (two calls at once: one transaction), a repeat sends nothing
 * more and says when it is due, the proxy's worker claims the served calls once it sees the
 * withdrawal, and after the delay (anvil time travel) finalizeWithdraw returns the rest to the
 * wallet; the agent pays through a new channel after it, and the caps let go of the voucher nothing
 * can claim any more.
 */
import t from 'tap'
import { createTestClient, erc20Abi, http, parseEther, type Address } from 'viem'
import { wrapFetch } from '../../../src/client.js'
import { createApiKeys } from '../../../src/services/accounts/api-keys.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { BatchClaimer } from '../../../src/services/batch-claim/claimer.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'

const p = await startBuyerPlatform(t)
const { deps, devnet } = p
const db = deps.db
const url = `${p.proxyUrl}/tollgate/toolbox/echo?msg=hi`
const challenge = (await fetch(url)).headers.get('payment-required')!
const anvil = createTestClient({ chain: devnet.chain, mode: 'anvil', transport: http(devnet.rpcUrl) })

const usdc = (a: Address) =>
  deps.chain.readContract({ address: devnet.usdcAddress, abi: erc20Abi, functionName: 'balanceOf', args: [a] })
const post = (path: string, auth: Record<string, string>, body: unknown = {}) =>
  fetch(`${p.webUrl}${path}`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
const spentOf = async (key: string) =>
  (
    (await (await fetch(`${p.webUrl}/v1/agent/`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
      spent: { daily: string }
    }
  ).spent.daily
const quiet = { info() {}, warn() {}, error() {} }

// first: the other test moves the chain's clock past the wall clock (deposits' authorizations expire then)
t.test('two calls at once send one initiateWithdraw; the channel is not used for new vouchers', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, batchSettlement: true })
  t.equal((await pay(url)).status, 200)
  const [row] = await db.selectFrom('agent_channels').select('channel_id').where('agent_id', '=', agent.id).execute()
  await anvil.setBalance({ address: agent.address, value: parseEther('0.01') })
  // two calls at once: one sends initiateWithdraw, the other finds it recorded and sends nothing
  const both = await Promise.all(
    [0, 1].map(async () => (await post(`/v1/agent/channels/${row!.channel_id}/withdraw`, agent.auth)).json()),
  )
  t.same(both.map((b) => b.action).sort(), ['initiated', 'none'], JSON.stringify(both))
  for (const b of both) t.match(b, { status: /^(initiating|waiting)$/, amount: '100000' })
  t.equal(await deps.chain.getTransactionCount({ address: agent.address }), 1, 'one transaction')
  const next = await (await post('/v1/agent/payments', agent.auth, { url, challenge, batch_settlement: true })).json()
  t.not(next.channel.id, row!.channel_id, 'a new channel')
  t.match(next, { deposit: '100000', channel: { max_claimable: '1000' } })
})

t.test('initiate, not due, claimed by the worker, finalized after the delay', async (t) => {
  const users = createUsers({ db })
  const owner = await users.create(`wd${Date.now()}@example.com`, 'correct horse battery')
  const stranger = await users.create(`wd2${Date.now()}@example.com`, 'correct horse battery')
  const apiKeys = createApiKeys({ db, deployment: 'sandbox' })
  const ownerKey = { authorization: `Bearer ${(await apiKeys.create(owner.id, 'k')).secret}` }
  const strangerKey = { authorization: `Bearer ${(await apiKeys.create(stranger.id, 'k')).secret}` }
  const agent = await p.agent({ user: owner.id, fund: 1_000_000n })
  const other = await p.agent({ fund: 1_000_000n })
  const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, batchSettlement: true })
  for (let i = 0; i < 3; i++) t.equal((await pay(url)).status, 200, `call ${i + 1}`)
  // a voucher signed and never sent: counted until nothing can claim it
  const unsent = await (await post('/v1/agent/payments', agent.auth, { url, challenge, batch_settlement: true })).json()
  const id = unsent.channel.id as string
  t.equal(await spentOf(agent.key), '4000')
  const path = `/v1/agent/channels/${id}/withdraw`

  // not the agent's channel: 404 for another agent's key, and for a stranger's API key
  t.equal((await post(path, other.auth)).status, 404, "another agent's channel")
  t.equal((await post(`/v1/agents/${agent.address}/channels/${id}/withdraw`, strangerKey)).status, 404)
  t.equal((await post(`/v1/agent/channels/0x${'ab'.repeat(32)}/withdraw`, agent.auth)).status, 404)

  // no ETH for gas: a clear refusal naming what is needed and the refund, nothing recorded or sent
  const poor = await post(path, agent.auth)
  t.equal(poor.status, 409)
  const refusal = await poor.json()
  t.match(refusal, {
    code: 'channel_withdraw_needs_gas',
    message: /holds 0 ETH and initiateWithdraw needs up to [0-9.]+ ETH of gas.*tollgate channels refund.*needs no gas/,
    channel_id: id,
    needed_wei: /^[1-9][0-9]*$/,
    balance_wei: '0',
  })
  t.equal(
    (await db.selectFrom('agent_channel_withdrawals').selectAll().execute()).filter((r) => r.channel_id === id).length,
    0,
  )

  // with a little ETH: initiateWithdraw for everything unclaimed (100000 deposited, nothing claimed)
  await anvil.setBalance({ address: agent.address, value: parseEther('0.01') })
  const started = await post(path, agent.auth)
  t.equal(started.status, 200, await started.clone().text())
  const s = await started.json()
  t.match(s, {
    object: 'agent_channel_withdrawal',
    channel_id: id,
    action: 'initiated',
    status: 'waiting',
    amount: '100000',
    due: false,
    initiate_transaction: /^0x[0-9a-f]{64}$/,
    finalize_transaction: null,
    channel: { withdraw_requested_at: /Z$/, withdrawal: { status: 'waiting', amount: '100000' } },
  })
  const finalizeAfter = Date.parse(s.finalize_after) / 1000
  t.equal(finalizeAfter - Date.parse(s.initiated_at) / 1000, deps.config.batchSettlement.withdrawDelay)
  const nonce = await deps.chain.getTransactionCount({ address: agent.address })
  t.equal(nonce, 1, 'one transaction from the agent wallet')

  // again before the delay, by the owner: nothing sent, when it is due
  const early = await post(`/v1/agents/${agent.address}/channels/${id}/withdraw`, ownerKey)
  t.equal(early.status, 200)
  t.match(await early.json(), { action: 'none', status: 'waiting', due: false, finalize_after: s.finalize_after })
  t.equal(await deps.chain.getTransactionCount({ address: agent.address }), nonce, 'no second transaction')

  // the proxy's worker sees the withdrawal and claims the served calls before it can be finalized
  await new BatchClaimer(deps, { log: quiet }).runOnce()
  const served = await db
    .selectFrom('batch_channels')
    .select(['total_claimed', 'charged'])
    .where('channel_id', '=', id)
    .executeTakeFirstOrThrow()
  t.same(served, { total_claimed: '3000', charged: '3000' }, 'the 3 served calls claimed')

  // after the delay: finalizeWithdraw returns the unclaimed rest to the wallet
  const before = await usdc(agent.address)
  await p.chainTimeAtLeast(finalizeAfter)
  const done = await post(path, agent.auth)
  t.equal(done.status, 200, await done.clone().text())
  t.match(await done.json(), {
    action: 'finalized',
    status: 'withdrawn',
    amount: '100000',
    withdrawn: '97000',
    finalize_transaction: /^0x[0-9a-f]{64}$/,
    channel: { balance: '3000', claimed: '3000', withdraw_requested_at: null, withdrawal: { status: 'withdrawn' } },
  })
  t.equal(await usdc(agent.address), before + 97_000n, 'the unclaimed rest came back to the agent wallet')
  t.equal(await spentOf(agent.key), '3000', 'the unsent voucher stopped counting')
  const again = await post(path, agent.auth)
  t.match(await again.json(), { action: 'none', status: 'withdrawn', withdrawn: '97000' })
  t.equal(await deps.chain.getTransactionCount({ address: agent.address }), nonce + 1, 'two transactions in all')

  // the next payment signs for another channel: the withdrawn one is not paid through again
  const next = await (await post('/v1/agent/payments', agent.auth, { url, challenge, batch_settlement: true })).json()
  t.not(next.channel.id, id, 'a new channel')
  t.match(next, { deposit: '100000', channel: { max_claimable: '1000' } })
})
