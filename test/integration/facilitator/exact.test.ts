import type { Server } from 'node:http'
import express from 'express'
import t from 'tap'
import { erc20Abi } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { HTTPFacilitatorClient } from '@x402/core/server'
import { paymentMiddleware, x402ResourceServer } from '@x402/express'
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server'
import { ExactEvmScheme } from '@x402/evm'
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch'
import { DEVNET_USDC_ADDRESS, mintUsdc } from '../../../src/chain/devnet.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { MASTER_KEY, userWithKey } from '../../helpers/accounts.js'
import { evmClients } from '../../helpers/evm-chain.js'
import { decodeRequired, signFor } from '../../helpers/pay.js'
import { closeListening, freePort, startTestPlatform } from '../../helpers/platform.js'

const NETWORK = 'eip155:84532'

t.test('facilitator mode: the official express middleware verifies and settles exact through Tollgate', async (t) => {
  const platform = await startTestPlatform(t, { env: { TOLLGATE_MASTER_KEY: MASTER_KEY } })
  const { deps, devnet } = platform
  const web = await buildWebApp(deps, { logger: false })
  await web.listen({ host: '127.0.0.1', port: await freePort() })
  t.teardown(() => closeListening(web))
  const webUrl = `http://127.0.0.1:${(web.server.address() as { port: number }).port}`
  const facilitatorUrl = `${webUrl}/facilitator`
  const seller = await userWithKey(deps)
  const { pub: publicClient } = await evmClients(devnet)
  const usdcOf = (a: `0x${string}`) =>
    publicClient.readContract({ address: DEVNET_USDC_ADDRESS, abi: erc20Abi, functionName: 'balanceOf', args: [a] })

  // the seller's own server: the official middleware, unmodified, with Tollgate as its facilitator
  const payTo = privateKeyToAccount(generatePrivateKey()).address
  const facilitator = new HTTPFacilitatorClient({
    url: facilitatorUrl,
    createAuthHeaders: async () => {
      const h = { Authorization: `Bearer ${seller.apiKey}` }
      return { verify: h, settle: h, supported: h }
    },
  })
  const resourceServer = new x402ResourceServer(facilitator).register(NETWORK, new ExactEvmServerScheme())
  const app = express()
  app.use(
    paymentMiddleware(
      {
        'GET /weather': {
          accepts: { scheme: 'exact', price: '$0.001', network: NETWORK, payTo, maxTimeoutSeconds: 60 },
          description: 'weather',
        },
      },
      resourceServer,
    ),
  )
  app.get('/weather', (_req, res) => {
    res.json({ weather: 'sunny' })
  })
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/weather`

  const buyerKey = generatePrivateKey()
  const buyer = privateKeyToAccount(buyerKey)
  await mintUsdc(devnet.rpcUrl, buyer.address, 1_000_000n)
  const auth = { authorization: `Bearer ${seller.apiKey}` }
  const post = (path: string, body: unknown, headers: Record<string, string> = auth) =>
    fetch(`${facilitatorUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    })

  let paidHeader = ''
  t.test('@x402/fetch pays the seller: 200, the funds moved on the chain, gas accounted to the seller', async (t) => {
    const recording: typeof fetch = async (input, init) => {
      const req = new Request(input, init)
      paidHeader = req.headers.get('payment-signature') ?? paidHeader
      return fetch(req)
    }
    const pay = wrapFetchWithPaymentFromConfig(recording, {
      schemes: [{ network: NETWORK, client: new ExactEvmScheme(buyer) }],
    })
    const res = await pay(url)
    t.equal(res.status, 200, await res.clone().text())
    t.same(await res.json(), { weather: 'sunny' })
    t.ok(paidHeader, 'the client sent PAYMENT-SIGNATURE')
    const receipt = JSON.parse(Buffer.from(res.headers.get('payment-response')!, 'base64').toString('utf8'))
    t.match(receipt, { success: true, network: NETWORK, transaction: /^0x[0-9a-f]{64}$/ })
    t.equal(receipt.payer.toLowerCase(), buyer.address.toLowerCase())
    const mined = await publicClient.getTransactionReceipt({ hash: receipt.transaction })
    t.equal(mined.status, 'success', 'the settle transaction is mined')
    t.equal(await usdcOf(payTo), 1000n, 'the seller received $0.001')
    t.equal(await usdcOf(buyer.address), 999_000n, 'the buyer paid it')
    const row = await deps.db.selectFrom('facilitator_settlements').selectAll().executeTakeFirstOrThrow()
    t.equal(row.user_id, seller.userId, 'the settle is the seller’s (its key asked)')
    t.equal(row.status, 'settled')
    t.equal(row.tx_hash, receipt.transaction)
    t.ok(BigInt(row.gas_used!) > 0n, 'the gas used is recorded')
  })

  t.test('replay: the same payment again is refused, no second transfer', async (t) => {
    const again = await fetch(url, { headers: { 'payment-signature': paidHeader } })
    t.equal(again.status, 402, 'the middleware refuses the replay (verify: nonce used)')
    const payload = JSON.parse(Buffer.from(paidHeader, 'base64').toString('utf8'))
    const verify = await (
      await post('/verify', { x402Version: 2, paymentPayload: payload, paymentRequirements: payload.accepted })
    ).json()
    t.match(verify, { isValid: false, invalidReason: 'invalid_exact_evm_nonce_already_used' })
    // a second settle of the same authorization answers the first one's result
    const first = await deps.db.selectFrom('facilitator_settlements').select('tx_hash').executeTakeFirstOrThrow()
    const settle = await post('/settle', {
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: payload.accepted,
    })
    t.equal(settle.status, 200)
    t.match(await settle.json(), { success: true, transaction: first.tx_hash, network: NETWORK })
    t.equal(await usdcOf(payTo), 1000n, 'still one transfer')
    t.equal(await usdcOf(buyer.address), 999_000n)
  })

  t.test('tampered payloads are refused', async (t) => {
    const required = decodeRequired((await fetch(url)).headers.get('payment-required'))
    const accepted = required.accepts[0]!
    const signed = await signFor(buyer, required)
    const payload = (p: object, a: object = accepted) => ({
      x402Version: 2,
      resource: required.resource,
      accepted: a,
      payload: p,
    })
    // the value raised after signing
    const raised = { ...signed, authorization: { ...signed.authorization, value: '5000' } }
    const header = Buffer.from(JSON.stringify(payload(raised))).toString('base64')
    t.equal((await fetch(url, { headers: { 'payment-signature': header } })).status, 402, 'the middleware refuses it')
    const cheaper = { ...accepted, amount: '5000' }
    const v = await (
      await post('/verify', { x402Version: 2, paymentPayload: payload(raised, cheaper), paymentRequirements: cheaper })
    ).json()
    t.match(v, { isValid: false, invalidReason: 'invalid_exact_evm_payload_signature' })
    // the recipient changed after signing
    const other = privateKeyToAccount(generatePrivateKey()).address
    const redirected = { ...accepted, payTo: other }
    const moved = { ...signed, authorization: { ...signed.authorization, to: other } }
    const s = await post('/settle', {
      x402Version: 2,
      paymentPayload: payload(moved, redirected),
      paymentRequirements: redirected,
    })
    t.equal(s.status, 200)
    t.match(await s.json(), { success: false, errorReason: 'invalid_exact_evm_payload_signature', transaction: '' })
    // a payment for other requirements than those sent
    const mismatch = await (
      await post('/verify', { x402Version: 2, paymentPayload: payload(signed), paymentRequirements: cheaper })
    ).json()
    t.equal(mismatch.isValid, false)
    t.equal(mismatch.invalidReason, 'invalid_exact_evm_payload_authorization_value')
    // the untampered one is still good (verify moves nothing)
    t.match(
      await (
        await post('/verify', { x402Version: 2, paymentPayload: payload(signed), paymentRequirements: accepted })
      ).json(),
      {
        isValid: true,
      },
    )
    t.equal(await usdcOf(other), 0n)
    t.equal(await usdcOf(buyer.address), 999_000n, 'nothing moved')
  })

  t.test('two settles of one authorization at once: one transfer, one answer', async (t) => {
    const required = decodeRequired((await fetch(url)).headers.get('payment-required'))
    const signed = await signFor(buyer, required)
    const body = {
      x402Version: 2,
      paymentPayload: { x402Version: 2, resource: required.resource, accepted: required.accepts[0], payload: signed },
      paymentRequirements: required.accepts[0],
    }
    const [a, b] = await Promise.all([post('/settle', body), post('/settle', body)])
    const [ja, jb] = [await a.json(), await b.json()]
    t.equal(a.status, 200)
    t.equal(b.status, 200)
    t.match(ja, { success: true, transaction: /^0x/ })
    t.same(jb, ja, 'the second answer is the first')
    t.equal(await usdcOf(payTo), 2000n, 'one more transfer, not two')
  })

  t.test('authentication: 401 without a seller key', async (t) => {
    const required = decodeRequired((await fetch(url)).headers.get('payment-required'))
    const body = { x402Version: 2, paymentPayload: {}, paymentRequirements: required.accepts[0] }
    for (const path of ['/verify', '/settle']) {
      const none = await post(path, body, {})
      t.equal(none.status, 401, `${path} without a key`)
      t.equal((await none.json()).code, 'facilitator_key_required')
      t.equal(none.headers.get('www-authenticate'), 'Bearer')
      const wrong = await post(path, body, { authorization: 'Bearer sk_test_nope' })
      t.equal(wrong.status, 401, `${path} with an unknown key`)
      t.equal((await wrong.json()).code, 'invalid_api_key')
    }
  })

  t.test('bad input: 400 with the spec reason, never 5xx', async (t) => {
    const required = decodeRequired((await fetch(url)).headers.get('payment-required'))
    const accepted = required.accepts[0]!
    const signed = await signFor(buyer, required)
    const good = { x402Version: 2, resource: required.resource, accepted, payload: signed }
    const cases: Array<[string, unknown, string]> = [
      ['an empty object', {}, 'invalid_x402_version'],
      ['an array', [1, 2], 'invalid_payload'],
      ['no paymentPayload', { x402Version: 2, paymentRequirements: accepted }, 'invalid_payload'],
      ['no requirements', { x402Version: 2, paymentPayload: good }, 'invalid_payment_requirements'],
      [
        'a bad amount',
        { x402Version: 2, paymentPayload: good, paymentRequirements: { ...accepted, amount: '-1' } },
        'invalid_payment_requirements',
      ],
      [
        'a bad payTo',
        { x402Version: 2, paymentPayload: good, paymentRequirements: { ...accepted, payTo: 'me' } },
        'invalid_payment_requirements',
      ],
      [
        'a payload of strings',
        { x402Version: 2, paymentPayload: 'x', paymentRequirements: accepted },
        'invalid_payload',
      ],
      [
        'a bad signature',
        {
          x402Version: 2,
          paymentPayload: { ...good, payload: { ...signed, signature: 'zz' } },
          paymentRequirements: accepted,
        },
        'invalid_payload',
      ],
      ['x402 v1', { x402Version: 1, paymentPayload: good, paymentRequirements: accepted }, 'invalid_x402_version'],
    ]
    for (const [what, body, reason] of cases) {
      const v = await post('/verify', body)
      t.equal(v.status, 400, `verify, ${what}`)
      t.match(
        await v.json(),
        { isValid: false, invalidReason: reason, code: reason, statusCode: 400 },
        `verify, ${what}`,
      )
      const s = await post('/settle', body)
      t.equal(s.status, 400, `settle, ${what}`)
      t.match(await s.json(), { success: false, errorReason: reason, transaction: '' }, `settle, ${what}`)
    }
    // well formed but not for this facilitator: 200 and the reason
    const otherChain = { ...accepted, network: 'eip155:1' }
    t.match(
      await (
        await post('/verify', {
          x402Version: 2,
          paymentPayload: { ...good, accepted: otherChain },
          paymentRequirements: otherChain,
        })
      ).json(),
      {
        isValid: false,
        invalidReason: 'invalid_network',
      },
    )
    const upto = { ...accepted, scheme: 'upto' }
    t.match(
      await (
        await post('/verify', {
          x402Version: 2,
          paymentPayload: { ...good, accepted: upto },
          paymentRequirements: upto,
        })
      ).json(),
      {
        isValid: false,
        invalidReason: 'unsupported_scheme',
      },
    )
    const poor = privateKeyToAccount(generatePrivateKey())
    const poorSigned = { ...good, payload: await signFor(poor, required) }
    t.match(
      await (
        await post('/verify', { x402Version: 2, paymentPayload: poorSigned, paymentRequirements: accepted })
      ).json(),
      {
        isValid: false,
        invalidReason: 'invalid_exact_evm_insufficient_balance',
      },
    )
    const expired = {
      ...good,
      payload: await signFor(buyer, required, { validBefore: BigInt(Math.floor(Date.now() / 1000) - 1) }),
    }
    t.match(
      await (await post('/settle', { x402Version: 2, paymentPayload: expired, paymentRequirements: accepted })).json(),
      {
        success: false,
        errorReason: 'invalid_exact_evm_payload_authorization_valid_before',
      },
    )
  })

  t.test('/supported, read by the official facilitator client', async (t) => {
    const supported = await new HTTPFacilitatorClient({ url: facilitatorUrl }).getSupported()
    t.match(supported.kinds, [{ x402Version: 2, scheme: 'exact', network: NETWORK }])
    t.same(
      supported.signers['eip155:*'],
      devnet.accounts.relayers.map((r) => r.address),
      'the relayers that send the transfers',
    )
  })
})
