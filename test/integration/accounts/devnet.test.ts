import t from 'tap'
import { createPublicClient, createTestClient, http, parseEther, type Address } from 'viem'
import { mintUsdc } from '../../../src/chain/devnet.js'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { createRelayerLock } from '../../../src/chain/relayer.js'
import { mintTestUsdc } from '../../../src/services/wallets/faucet.js'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'
import { withDevnet } from '../../helpers/devnet.js'

// Balances and the dev faucet against a real chain (v1-agents.test.ts covers the chain-less cases).
const devnet = await withDevnet(t)
const chainEnv = {
  RPC_URL: devnet.rpcUrl,
  RELAYER_PRIVATE_KEYS: devnet.accounts.relayers.map((r) => r.privateKey).join(','),
}
const chain = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl) })
const usdcOf = (a: string) =>
  chain.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [a as Address] })

t.test('agent balances read through the API match the chain after funding', async (t) => {
  const { deps, app } = await accountsApp(t, chainEnv)
  const u = await userWithKey(deps)
  const agent = (
    await app.inject({ method: 'POST', url: '/v1/agents', headers: u.auth, payload: { name: 'funded' } })
  ).json()

  const empty = await app.inject({ method: 'GET', url: `/v1/agents/${agent.address}/balance`, headers: u.auth })
  t.equal(empty.statusCode, 200)
  t.match(empty.json(), { object: 'balance', address: agent.address, usdc: '0', eth: '0' })

  await mintUsdc(devnet.rpcUrl, agent.address, 12_345_678n)
  await createTestClient({ mode: 'anvil', transport: http(devnet.rpcUrl) }).setBalance({
    address: agent.address,
    value: parseEther('0.25'),
  })
  const res = await app.inject({ method: 'GET', url: `/v1/agents/${agent.address}/balance`, headers: u.auth })
  t.equal(res.statusCode, 200)
  const b = res.json()
  const block = BigInt(b.block_number)
  t.equal(b.usdc, '12345678')
  t.equal(b.eth, parseEther('0.25').toString())
  // the same numbers the chain reports at the block the API read
  t.equal(
    b.usdc,
    (
      await chain.readContract({
        address: devnet.usdcAddress,
        abi: usdcAbi,
        functionName: 'balanceOf',
        args: [agent.address],
        blockNumber: block,
      })
    ).toString(),
  )
  t.equal(b.eth, (await chain.getBalance({ address: agent.address, blockNumber: block })).toString())

  // another user's agent stays invisible, even with a balance
  const other = await userWithKey(deps)
  const hidden = await app.inject({ method: 'GET', url: `/v1/agents/${agent.address}/balance`, headers: other.auth })
  t.equal(hidden.statusCode, 404)
})

t.test('the dev-chain faucet funds the funding wallet by the documented amount', async (t) => {
  const { deps, app } = await accountsApp(t, chainEnv)
  const u = await userWithKey(deps)
  const fw = await app.inject({ method: 'GET', url: '/v1/funding-wallet', headers: u.auth })
  t.equal(fw.statusCode, 200)
  const wallet = fw.json()
  t.match(wallet, { object: 'funding_wallet', faucet_available: true, balance: { usdc: '0' } })
  const address = wallet.address as Address

  // default: 100 USDC
  const before = await usdcOf(address)
  const minted = await app.inject({ method: 'POST', url: '/v1/funding-wallet/faucet', headers: u.auth, payload: {} })
  t.equal(minted.statusCode, 201)
  t.match(minted.json(), { object: 'faucet_mint', address, amount: '100000000', tx_hash: /^0x[0-9a-f]{64}$/ })
  t.equal(await usdcOf(address), before + 100_000_000n, 'on chain: +100 USDC')
  const receipt = await chain.getTransactionReceipt({ hash: minted.json().tx_hash })
  t.equal(receipt.status, 'success')

  // an explicit amount, and the balance the API shows agrees with the chain
  const some = await app.inject({
    method: 'POST',
    url: '/v1/funding-wallet/faucet',
    headers: u.auth,
    payload: { amount: '2500000' },
  })
  t.equal(some.statusCode, 201)
  t.equal(await usdcOf(address), before + 102_500_000n)
  t.equal(
    (await app.inject({ method: 'GET', url: '/v1/funding-wallet', headers: u.auth })).json().balance.usdc,
    (before + 102_500_000n).toString(),
  )

  // past the documented maximum (1,000 USDC) or not an amount: 400, nothing minted
  for (const amount of ['1000000001', '-5', '1.5', '0']) {
    const bad = await app.inject({
      method: 'POST',
      url: '/v1/funding-wallet/faucet',
      headers: u.auth,
      payload: { amount },
    })
    t.equal(bad.statusCode, 400, `amount ${amount} refused`)
  }
  t.equal(await usdcOf(address), before + 102_500_000n, 'refused calls minted nothing')
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/v1/funding-wallet/faucet',
        headers: u.auth,
        payload: { amount: '1000000000' },
      })
    ).statusCode,
    201,
    'exactly the maximum is allowed',
  )
  t.equal(await usdcOf(address), before + 1_102_500_000n)

  // the faucet needs an authenticated user
  t.equal((await app.inject({ method: 'POST', url: '/v1/funding-wallet/faucet', payload: {} })).statusCode, 401)
})

// Mints and the settlement worker send with the same relayer key from different processes: a mint
// waits for the relayer's lock (held here as the worker would hold it), so their nonces never collide.
t.test('a mint waits while another process holds the relayer', async (t) => {
  const { deps, app } = await accountsApp(t, chainEnv)
  const u = await userWithKey(deps)
  const address = (await app.inject({ method: 'GET', url: '/v1/funding-wallet', headers: u.auth })).json()
    .address as Address
  const lock = createRelayerLock(deps.redis, deps.key)
  const relayer = devnet.accounts.relayers[0]!.address
  const token = await lock.acquire(relayer)
  t.ok(token, 'the test holds the relayer, as a settling worker would')
  const before = await usdcOf(address)
  let done = false
  const minting = app
    .inject({ method: 'POST', url: '/v1/funding-wallet/faucet', headers: u.auth, payload: { amount: '7000000' } })
    .then((r) => ((done = true), r))
  await new Promise((r) => setTimeout(r, 700))
  t.equal(done, false, 'no answer while the relayer is held')
  t.equal(await usdcOf(address), before, 'nothing sent meanwhile')
  await lock.release(relayer, token!)
  const res = await minting
  t.equal(res.statusCode, 201)
  t.equal(await usdcOf(address), before + 7_000_000n, 'minted once the relayer was free')

  // held for longer than a mint waits: 503 with a reason, nothing minted
  const again = await lock.acquire(relayer)
  t.teardown(() => lock.release(relayer, again!))
  const err = await mintTestUsdc(deps, address, 1n, 300).catch((e: unknown) => e)
  t.match(err, { statusCode: 503, code: 'service_unavailable', message: /relayer stayed busy/ })
  t.equal(await usdcOf(address), before + 7_000_000n)
})

t.test('the faucet is refused on a non-dev deployment, even when the chain would accept a mint', async (t) => {
  const cases = {
    // production pointed at this very devnet: the deployment alone decides
    production: {
      ...chainEnv,
      TOLLGATE_DEPLOYMENT: 'production',
      TOLLGATE_RECEIVER_ADDRESS: devnet.accounts.receiver.address,
    },
    // sandbox on a public Base Sepolia RPC (the real USDC has no mint)
    'sandbox on a public RPC': { ...chainEnv, RPC_URL: 'https://sepolia.base.org' },
  }
  for (const [label, env] of Object.entries(cases)) {
    const { deps, app } = await accountsApp(t, env)
    const u = await userWithKey(deps)
    const fw = (await app.inject({ method: 'GET', url: '/v1/funding-wallet', headers: u.auth })).json()
    t.equal(fw.faucet_available, false, `${label}: not offered`)
    const before = await usdcOf(fw.address)
    const res = await app.inject({ method: 'POST', url: '/v1/funding-wallet/faucet', headers: u.auth, payload: {} })
    t.equal(res.statusCode, 403, `${label}: 403`)
    t.match(res.json(), {
      statusCode: 403,
      code: 'faucet_unavailable',
      message: /sandbox deployment with the embedded dev chain/,
    })
    t.equal(await usdcOf(fw.address), before, `${label}: nothing minted`)
  }
})
