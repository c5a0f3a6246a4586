/**
 * An agent wallet's escrow (deferred): GET /v1/agent/escrow shows its own accounts only (balance,
 * thawing, outstanding vouchers); `tollgate escrow`, `thaw` and `withdraw` (flushWithAuthorization
 * through the platform's relayer) with the errors that say what to do.
 */
import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { createPublicClient, createTestClient, getAddress, http, type Address } from 'viem'
import { DEVNET_ESCROW_THAWING_PERIOD } from '../../../src/chain/devnet.js'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { runCli, type Io } from '../../../src/cli/main.js'
import { wrapFetch } from '../../../src/client.js'
import { createApiKeys } from '../../../src/services/accounts/api-keys.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { until } from '../../helpers/until.js'

const ECHO = '/tollgate/toolbox/echo?msg=hi'
const p = await startBuyerPlatform(t)
const { deps, proxy, devnet } = p
const seller = getAddress(devnet.accounts.receiver.address)
const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl) })
const walletBalance = (who: Address) =>
  pub.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [who] })

await deps.db
  .updateTable('endpoints')
  .set({ schemes: ['exact', 'deferred'] })
  .where('slug', '=', 'echo')
  .execute()
await announceRegistryChange(deps)
await until(
  'the proxy offers deferred',
  async () => decodeRequired((await proxy.inject(ECHO)).headers['payment-required'] as string).accepts.length === 2,
)

const cli = async (agentKey: string, args: string[]) => {
  const out: string[] = []
  const err: string[] = []
  const io: Io = {
    stdout: (c) => void out.push(String(c)),
    stderr: (l) => void err.push(l),
    env: { TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agentKey },
    home: mkdtempSync(path.join(os.tmpdir(), 'tg-escrow-')),
    hostname: 'testbox',
    progressAfterMs: 0,
  }
  const code = await runCli(args, io)
  return { code, out: out.join(''), err: err.join('') }
}
const escrowOf = async (key: string) =>
  (await fetch(`${p.webUrl}/v1/agent/escrow`, { headers: { authorization: `Bearer ${key}` } })).json()

t.test('the dashboard route: a user sees the escrow of its own agents only', async (t) => {
  const users = createUsers({ db: deps.db })
  const apiKeys = createApiKeys({ db: deps.db, deployment: 'sandbox' })
  const owner = await users.create(`esc${Date.now()}@example.com`, 'correct horse battery')
  const stranger = await users.create(`esc2${Date.now()}@example.com`, 'correct horse battery')
  const agent = await p.agent({ user: owner.id, fund: 1_000_000n })
  t.equal((await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key })(`${p.proxyUrl}${ECHO}`)).status, 200)
  const get = async (userId: string) => {
    const k = await apiKeys.create(userId, 'k')
    return fetch(`${p.webUrl}/v1/agents/${agent.address}/escrow`, { headers: { authorization: `Bearer ${k.secret}` } })
  }
  const mine = await get(owner.id)
  t.equal(mine.status, 200)
  t.match(await mine.json(), {
    object: 'agent_escrow',
    accounts: [{ seller, balance: '100000', outstanding: '1000', vouchers: [{ nonce: '0' }] }],
  })
  t.equal((await get(stranger.id)).status, 404, "another user's agent is not found")
})

t.test('tollgate escrow deposit: from the agent wallet, gasless; more than the wallet holds is refused', async (t) => {
  const agent = await p.agent({ fund: 100_000n })
  const d = await cli(agent.key, ['--json', 'escrow', 'deposit', seller, '0.05'])
  t.equal(d.code, 0, d.out + d.err)
  t.match(JSON.parse(d.out), {
    object: 'agent_escrow_deposit',
    deposited: '50000',
    account: { seller, balance: '50000', available: '50000' },
  })
  t.equal(await walletBalance(agent.address), 50_000n, 'taken from the agent wallet')
  const over = await cli(agent.key, ['escrow', 'deposit', seller, '1'])
  t.equal(over.code, 3, 'the API refused it (exit 3)')
  t.match(over.err + over.out, /insufficient_balance/)
  t.equal(await walletBalance(agent.address), 50_000n, 'nothing moved')
  const bad = await cli(agent.key, ['escrow', 'deposit', 'bob', '1'])
  t.match(bad.err + bad.out, /not an address/)
})

// last: it moves the chain's clock a day ahead
t.test('an agent sees its own escrow accounts only; thaw, then withdraw after the thawing period', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const other = await p.agent({ fund: 1_000_000n })
  const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key })
  for (let i = 0; i < 3; i++) t.equal((await pay(`${p.proxyUrl}${ECHO}`)).status, 200)

  const mine = await escrowOf(agent.key)
  t.match(mine, {
    object: 'agent_escrow',
    address: getAddress(agent.address),
    accounts: [
      { seller, balance: '100000', thawing_amount: '0', thaw_ends_at: null, available: '100000', outstanding: '3000' },
    ],
  })
  t.match(mine.accounts[0].vouchers, [{ nonce: '2', value_aggregate: '3000', collected: '0', outstanding: '3000' }])
  t.same((await escrowOf(other.key)).accounts, [], "another agent's key sees none of it")
  t.equal((await fetch(`${p.webUrl}/v1/agent/escrow`)).status, 401, 'no key, no escrow')
  const flushOther = await fetch(`${p.webUrl}/v1/agent/escrow/flush`, {
    method: 'POST',
    headers: { authorization: `Bearer ${other.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ seller }),
  })
  t.equal(flushOther.status, 400, "another agent cannot flush this one's account: its own is empty")

  const listed = await cli(agent.key, ['escrow'])
  t.equal(listed.code, 0, listed.err)
  t.match(listed.out, /seller 0x[0-9a-fA-F]{40}\n {2}balance {6}0\.1 USDC/)
  t.match(listed.out, /outstanding {2}0\.003 USDC in 1 voucher not collected yet/)

  const early = await cli(agent.key, ['escrow', 'withdraw', seller])
  t.equal(early.code, 1)
  t.match(early.err + early.out, /nothing is thawing .*run tollgate escrow thaw/)

  const thaw = await cli(agent.key, ['--json', 'escrow', 'thaw', seller])
  t.equal(thaw.code, 0, thaw.out + thaw.err)
  const thawed = JSON.parse(thaw.out)
  t.match(thawed, {
    object: 'agent_escrow_flush',
    withdrawn: '0',
    account: { thawing_amount: '100000', available: '0' },
  })
  const stillThawing = await cli(agent.key, ['escrow', 'withdraw', seller])
  t.match(stillThawing.err + stillThawing.out, /is thawing until .*run this again after that/)

  await createTestClient({ chain: devnet.chain, mode: 'anvil', transport: http(devnet.rpcUrl) }).increaseTime({
    seconds: Number(DEVNET_ESCROW_THAWING_PERIOD) + 1,
  })
  await createTestClient({ chain: devnet.chain, mode: 'anvil', transport: http(devnet.rpcUrl) }).mine({ blocks: 1 })
  const before = await walletBalance(agent.address)
  const withdraw = await cli(agent.key, ['escrow', 'withdraw', seller])
  t.equal(withdraw.code, 0, withdraw.err)
  t.match(withdraw.out, /withdrew 0\.1 USDC to the agent wallet/)
  t.equal((await walletBalance(agent.address)) - before, 100_000n, 'back in the agent wallet')
  t.match(
    (await escrowOf(agent.key)).accounts[0],
    { balance: '0', outstanding: '3000' },
    'the vouchers are still owed (the seller collects what the account holds)',
  )
})
