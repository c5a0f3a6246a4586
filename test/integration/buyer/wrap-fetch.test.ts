import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../../../src/chain/devnet.js'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { PaymentRefusedError, wrapFetch } from '../../../src/client.js'
import { buildChallenge } from '../../../src/x402/challenge.js'
import { decodePaymentHeader } from '../../../src/x402/decode-payment.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { startOfficialExpressServer } from './express-server.js'

t.test(
  'wrapFetch pays our proxy with PAYMENT-SIGNATURE and a payment-identifier (platform and local key), the v2-only official express server with PAYMENT-SIGNATURE, and refuses by allowlist',
  async (t) => {
    // the host allowlist entry below is checked by the platform fetching the local express server's own 402
    const p = await startBuyerPlatform(t, { env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true' } })
    const agent = await p.agent({ fund: 1_000_000n })
    // exact (opted out of the hosted endpoint's batch-settlement): a v2 transfer with an id, recorded by the proxy
    const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, batchSettlement: false })
    const url = `${p.proxyUrl}/tollgate/toolbox/echo?msg=wrapped`

    const res = await pay(url)
    t.equal(res.status, 200)
    t.match(await res.json(), { echo: { msg: 'wrapped' } })
    // our proxy offers v1 and v2 and declares payment-identifier in v2: the client pays v2 with an id (safe retries)
    t.match(res.payment, {
      success: true,
      amount: '1000',
      header: 'PAYMENT-SIGNATURE',
      network: 'eip155:84532',
      paymentIdentifier: /^pay_[0-9a-f]{32}$/,
    })
    t.equal(res.payment!.payer.toLowerCase(), agent.address.toLowerCase())
    t.ok(res.headers.get('payment-response'), 'the proxy answered a v2 payment with PAYMENT-RESPONSE')
    const row = await p.deps.db
      .selectFrom('agent_payments')
      .selectAll()
      .where('id', '=', res.payment!.agentPaymentId!)
      .executeTakeFirstOrThrow()
    t.equal(row.status, 'accepted', 'the outcome was reported')
    const seller = await p.deps.db
      .selectFrom('payments')
      .select(['status', 'value'])
      .where('id', '=', res.payment!.paymentId!)
      .executeTakeFirstOrThrow()
    t.equal(seller.value, '1000', 'the proxy recorded the payment from the agent wallet')
    t.equal(
      (
        await p.deps.db
          .selectFrom('payments')
          .select('x402_version')
          .where('id', '=', res.payment!.paymentId!)
          .executeTakeFirstOrThrow()
      ).x402_version,
      2,
      'the proxy took it as x402 v2',
    )

    const post = await pay(`${p.proxyUrl}/tollgate/toolbox/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ msg: 'posted' }),
    })
    t.equal(post.status, 200, 'a POST body survives the retry')
    t.equal(
      (
        await p.deps.db
          .selectFrom('agent_payments')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
      '2',
      'one payment per request',
    )

    const free = await pay(`${p.proxyUrl}/nope`)
    t.not(free.status, 402, 'a non-402 answer passes through unpaid')

    // local key: no platform in the loop
    const key = generatePrivateKey()
    await mintUsdc(p.devnet.rpcUrl, privateKeyToAccount(key).address, 1_000_000n)
    const local = await wrapFetch(fetch, { privateKey: key })(url)
    t.equal(local.status, 200)
    t.equal(local.payment!.payer.toLowerCase(), privateKeyToAccount(key).address.toLowerCase())
    t.equal(
      local.payment!.header,
      'PAYMENT-SIGNATURE',
      'a local key pays our proxy with PAYMENT-SIGNATURE and an id too',
    )
    t.match(local.payment!.paymentIdentifier, /^pay_[0-9a-f]{32}$/)

    // allowlist: a namespace that is not ours → refused, nothing signed
    const picky = await p.agent({ fund: 1_000_000n, allow: [{ kind: 'namespace', value: 'someone-else' }] })
    const before = await p.deps.db
      .selectFrom('agent_payments')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow()
    const refused = await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: picky.key })(url).catch((e) => e)
    t.type(refused, PaymentRefusedError)
    t.equal(refused.code, 'seller_not_allowed')
    t.same(
      await p.deps.db
        .selectFrom('agent_payments')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow(),
      before,
      'nothing signed',
    )
    const allowedNs = await p.agent({ fund: 1_000_000n, allow: [{ kind: 'namespace', value: 'tollgate' }] })
    t.equal(
      (await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: allowedNs.key })(url)).status,
      200,
      'allowed namespace passes',
    )

    // the official @x402/express server with an in-process facilitator on the same devnet
    const receiver = privateKeyToAccount(generatePrivateKey()).address
    const official = await startOfficialExpressServer(p.devnet, receiver, p.devnet.accounts.relayers[2]!.privateKey)
    t.teardown(() => official.close())
    const ex = await pay(official.url)
    t.equal(ex.status, 200, 'platform-signed payment accepted by @x402/express')
    t.match(
      ex.payment,
      { header: 'PAYMENT-SIGNATURE', network: 'eip155:84532' },
      'a v2-only server is paid with PAYMENT-SIGNATURE',
    )
    t.match(await ex.json(), { weather: 'sunny' })
    t.match(ex.payment!.transaction, /^0x[0-9a-f]{64}$/, 'the facilitator settled it')
    // host allowlist against the official server called by name
    const byHost = await p.agent({ fund: 1_000_000n, allow: [{ kind: 'host', value: 'localhost' }] })
    const hostPay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: byHost.key })
    t.equal((await hostPay(official.url.replace('127.0.0.1', 'localhost'))).status, 200, 'allowed host passes')
    t.equal((await hostPay(url).catch((e) => e)).code, 'seller_not_allowed', 'another host is refused')
    const exLocal = await wrapFetch(fetch, { privateKey: key })(official.url)
    t.equal(exLocal.status, 200, 'local-key payment accepted by @x402/express')
    t.equal(exLocal.payment!.header, 'PAYMENT-SIGNATURE')
    const bal = await p.deps.chain.readContract({
      address: p.deps.config.chain.usdc.address,
      abi: usdcAbi,
      functionName: 'balanceOf',
      args: [receiver],
    })
    t.equal(bal, 3000n, 'all three settled on chain to the receiver')
    const exRow = await p.deps.db
      .selectFrom('agent_payments')
      .select(['status', 'tx_hash'])
      .where('id', '=', ex.payment!.agentPaymentId!)
      .executeTakeFirstOrThrow()
    t.same(exRow, { status: 'accepted', tx_hash: ex.payment!.transaction })
  },
)

t.test('wrapFetch pays the v2 requirement when the v1 one is on a network it cannot pay', async (t) => {
  const p = await startBuyerPlatform(t)
  const agent = await p.agent({ fund: 1_000_000n })
  const chain = p.deps.config.chain
  // a seller stand-in: its v1 body asks for Base mainnet (this sandbox platform pays Base Sepolia only),
  // its v2 header for Base Sepolia; it takes PAYMENT-SIGNATURE and refuses X-PAYMENT
  const sent: string[] = []
  const server = createServer((req, res) => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${req.url}`
    const terms = {
      resourceUrl: url,
      description: 'quote',
      mimeType: 'application/json',
      payTo: p.devnet.accounts.receiver.address,
      amount: 1000n,
      maxTimeoutSeconds: 60,
      method: 'GET',
    }
    const v2 = buildChallenge({
      ...terms,
      chain: { chainId: chain.chainId, network: chain.network, caip2: chain.caip2, usdc: chain.usdc },
    })
    const v1 = buildChallenge({
      ...terms,
      chain: {
        chainId: 8453,
        network: 'base',
        caip2: 'eip155:8453',
        usdc: { address: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', name: 'USD Coin', version: '2' },
      },
    })
    const signature = req.headers['payment-signature']
    sent.push(signature ? 'PAYMENT-SIGNATURE' : req.headers['x-payment'] ? 'X-PAYMENT' : 'none')
    const d = typeof signature === 'string' ? decodePaymentHeader({ paymentSignature: signature }, 8192) : undefined
    if (d?.ok && d.version === 2 && d.accepted.network === chain.caip2) {
      const payer = d.payload.payload.authorization.from
      res.writeHead(200, {
        'content-type': 'application/json',
        'payment-response': Buffer.from(
          JSON.stringify({ success: true, transaction: '', network: chain.caip2, payer }),
        ).toString('base64'),
      })
      return res.end('{"quote":1}')
    }
    res.writeHead(402, { 'content-type': 'application/json', 'payment-required': v2.v2HeaderValue })
    res.end(v1.v1BodyJson)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/quote`

  const viaPlatform = await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key })(url)
  t.equal(viaPlatform.status, 200)
  t.match(viaPlatform.payment, { success: true, header: 'PAYMENT-SIGNATURE', network: chain.caip2, amount: '1000' })
  t.same(sent, ['none', 'PAYMENT-SIGNATURE'], 'one payment, with the v2 header')
  const row = await p.deps.db
    .selectFrom('agent_payments')
    .select(['x402_version', 'status'])
    .where('id', '=', viaPlatform.payment!.agentPaymentId!)
    .executeTakeFirstOrThrow()
  t.same(row, { x402_version: 2, status: 'accepted' }, 'the platform signed the v2 requirement, once')

  sent.length = 0
  const key = generatePrivateKey()
  const local = await wrapFetch(fetch, { privateKey: key, chainIds: [chain.chainId] })(url)
  t.equal(local.status, 200)
  t.match(local.payment, { header: 'PAYMENT-SIGNATURE', payer: privateKeyToAccount(key).address })
  t.same(sent, ['none', 'PAYMENT-SIGNATURE'])
})
