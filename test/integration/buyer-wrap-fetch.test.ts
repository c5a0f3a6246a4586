import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../../src/chain/devnet.js'
import { usdcAbi } from '../../src/chain/usdc-abi.js'
import { PaymentRefusedError, wrapFetch } from '../../src/client.js'
import { startBuyerPlatform } from './buyer-fixtures.js'
import { startOfficialExpressServer } from './buyer-express-server.js'

t.test('wrapFetch pays our proxy (platform and local key), the official express server, and refuses by allowlist', async (t) => {
  const p = await startBuyerPlatform(t)
  const agent = await p.agent({ fund: 1_000_000n })
  const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key })
  const url = `${p.proxyUrl}/tollgate/toolbox/echo?msg=wrapped`

  const res = await pay(url)
  t.equal(res.status, 200)
  t.match(await res.json(), { echo: { msg: 'wrapped' } })
  t.match(res.payment, { success: true, amount: '1000', header: 'PAYMENT-SIGNATURE' })
  t.equal(res.payment!.payer.toLowerCase(), agent.address.toLowerCase())
  const row = await p.deps.db.selectFrom('agent_payments').selectAll().where('id', '=', res.payment!.agentPaymentId!).executeTakeFirstOrThrow()
  t.equal(row.status, 'accepted', 'the outcome was reported')
  const seller = await p.deps.db.selectFrom('payments').select(['status', 'value']).where('id', '=', res.payment!.paymentId!).executeTakeFirstOrThrow()
  t.equal(seller.value, '1000', 'the proxy recorded the payment from the agent wallet')

  const post = await pay(`${p.proxyUrl}/tollgate/toolbox/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ msg: 'posted' }) })
  t.equal(post.status, 200, 'a POST body survives the retry')
  t.equal((await p.deps.db.selectFrom('agent_payments').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n, '2', 'one payment per request')

  const free = await pay(`${p.proxyUrl}/nope`)
  t.not(free.status, 402, 'a non-402 answer passes through unpaid')

  // local key: no platform in the loop
  const key = generatePrivateKey()
  await mintUsdc(p.devnet.rpcUrl, privateKeyToAccount(key).address, 1_000_000n)
  const local = await wrapFetch(fetch, { privateKey: key })(url)
  t.equal(local.status, 200)
  t.equal(local.payment!.payer.toLowerCase(), privateKeyToAccount(key).address.toLowerCase())

  // allowlist: a namespace that is not ours → refused, nothing signed
  const picky = await p.agent({ fund: 1_000_000n, allow: [{ kind: 'namespace', value: 'someone-else' }] })
  const before = await p.deps.db.selectFrom('agent_payments').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
  const refused = await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: picky.key })(url).catch((e) => e)
  t.type(refused, PaymentRefusedError)
  t.equal(refused.code, 'seller_not_allowed')
  t.same(await p.deps.db.selectFrom('agent_payments').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(), before, 'nothing signed')
  const allowedNs = await p.agent({ fund: 1_000_000n, allow: [{ kind: 'namespace', value: 'tollgate' }] })
  t.equal((await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: allowedNs.key })(url)).status, 200, 'allowed namespace passes')

  // the official @x402/express server with an in-process facilitator on the same devnet
  const receiver = privateKeyToAccount(generatePrivateKey()).address
  const official = await startOfficialExpressServer(p.devnet, receiver, p.devnet.accounts.relayers[2]!.privateKey)
  t.teardown(() => official.close())
  const ex = await pay(official.url)
  t.equal(ex.status, 200, 'platform-signed payment accepted by @x402/express')
  t.match(await ex.json(), { weather: 'sunny' })
  t.match(ex.payment!.transaction, /^0x[0-9a-f]{64}$/, 'the facilitator settled it')
  // host allowlist against the official server called by name
  const byHost = await p.agent({ fund: 1_000_000n, allow: [{ kind: 'host', value: 'localhost' }] })
  const hostPay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: byHost.key })
  t.equal((await hostPay(official.url.replace('127.0.0.1', 'localhost'))).status, 200, 'allowed host passes')
  t.equal((await hostPay(url).catch((e) => e)).code, 'seller_not_allowed', 'another host is refused')
  const exLocal = await wrapFetch(fetch, { privateKey: key })(official.url)
  t.equal(exLocal.status, 200, 'local-key payment accepted by @x402/express')
  const bal = await p.deps.chain.readContract({ address: p.deps.config.chain.usdc.address, abi: usdcAbi, functionName: 'balanceOf', args: [receiver] })
  t.equal(bal, 3000n, 'all three settled on chain to the receiver')
  const exRow = await p.deps.db.selectFrom('agent_payments').select(['status', 'tx_hash']).where('id', '=', ex.payment!.agentPaymentId!).executeTakeFirstOrThrow()
  t.same(exRow, { status: 'accepted', tx_hash: ex.payment!.transaction })
})
