import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createDeps } from '../../../src/deps.js'
import { buildProxyApp } from '../../../src/http/proxy-app.js'
import { createPayerCredit } from '../../../src/ledger/payer-credit.js'
import { decodeRequired, signFor, v1Header, v2Header } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')

t.test('the paid hot path', async (t) => {
  // four threads so the three hostile handlers cannot occupy every worker at once
  const platform = await startTestPlatform(t, {
    proxy: { handlersDir: fixtures },
    env: { HANDLER_MAX_THREADS: '4', HANDLER_MEMORY_MB: '128', HANDLER_TIMEOUT_MS: '60000' },
  })
  const { deps, proxy } = platform
  const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)
  const echo = '/tollgate/toolbox/echo?msg=hello'
  const first = await proxy.inject({ method: 'GET', url: echo })
  const required = decodeRequired(first.headers['payment-required'] as string)
  const countPayments = async () =>
    Number(
      (
        await deps.db
          .selectFrom('payments')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    )
  const pay = async (headers: Record<string, string>, url = echo, method: 'GET' | 'POST' = 'GET', payload?: string) =>
    proxy.inject({
      method,
      url,
      headers: { ...headers, ...(payload ? { 'content-type': 'application/json' } : {}) },
      payload,
    })

  t.test('the 402 challenge carries v1 body and v2 header', async (t) => {
    t.equal(first.statusCode, 402)
    t.equal(first.headers['cache-control'], 'no-store')
    const body = first.json()
    t.equal(body.x402Version, 1)
    t.equal(body.accepts[0].maxAmountRequired, '1000')
    t.equal(body.accepts[0].network, 'base-sepolia')
    t.equal(body.accepts[0].resource, `${platform.proxyUrl}/tollgate/toolbox/echo`)
    t.equal(body.accepts[0].payTo.toLowerCase(), platform.devnet.accounts.receiver.address.toLowerCase())
    t.same(body.accepts[0].extra, { name: 'USDC', version: '2' })
    t.notMatch(first.body, /null/, 'no null optional fields')
    t.equal(required.x402Version, 2)
    t.equal(required.accepts[0].network, 'eip155:84532')
    t.equal(required.accepts[0].amount, '1000')
  })

  t.test('unknown path 404, wrong method 405 with Allow', async (t) => {
    const nf = await proxy.inject('/tollgate/toolbox/nope')
    t.equal(nf.statusCode, 404)
    t.equal(nf.json().code, 'not_found')
    const na = await proxy.inject({ method: 'DELETE', url: echo })
    t.equal(na.statusCode, 405)
    t.equal(na.headers.allow, 'GET, POST')
  })

  t.test('a valid v2 payment is served and recorded', async (t) => {
    const before = await countPayments()
    const r = await pay({ 'payment-signature': v2Header(required, await signFor(payer, required)) })
    t.equal(r.statusCode, 200, r.body)
    t.same(r.json(), { echo: { msg: 'hello' } })
    const resp = JSON.parse(Buffer.from(String(r.headers['payment-response']), 'base64').toString())
    t.equal(resp.success, true)
    t.equal(await countPayments(), before + 1)
    const row = await deps.db
      .selectFrom('payments')
      .selectAll()
      .where('id', '=', resp.paymentId)
      .executeTakeFirstOrThrow()
    t.equal(row.status, 'served')
    const events = await deps.db
      .selectFrom('payment_events')
      .select(['to_status'])
      .where('payment_id', '=', row.id)
      .orderBy('id')
      .execute()
    t.same(
      events.map((e) => e.to_status),
      ['served'],
      'a hosted call is recorded once, after its handler answered',
    )
    const lookup = await proxy.inject(`/_tollgate/payments/${row.id}`)
    t.equal(lookup.statusCode, 200)
    t.equal(lookup.json().status, 'served')
    t.equal((await proxy.inject('/_tollgate/payments/not-a-uuid')).statusCode, 400)
    t.equal((await proxy.inject(`/_tollgate/payments/${crypto.randomUUID()}`)).statusCode, 404)
  })

  t.test('bad input is a 400 naming the field and records nothing', async (t) => {
    const before = await countPayments()
    const r = await pay(
      { 'payment-signature': v2Header(required, await signFor(payer, required)) },
      '/tollgate/toolbox/echo?n=99',
    )
    t.equal(r.statusCode, 400)
    t.equal(r.json().param, 'msg')
    const r2 = await pay(
      { 'payment-signature': v2Header(required, await signFor(payer, required)) },
      '/tollgate/toolbox/echo',
      'POST',
      '{bad json',
    )
    t.equal(r2.statusCode, 400)
    t.equal(r2.json().param, 'body')
    t.equal(await countPayments(), before)
  })

  const now = () => Math.floor(Date.now() / 1000)
  const rejections: [string, () => Promise<Record<string, string>>, string][] = [
    [
      'wrong network (v1)',
      async () => ({ 'x-payment': v1Header('base', await signFor(payer, required)) }),
      'invalid_network',
    ],
    [
      'wrong payTo',
      async () => ({
        'x-payment': v1Header('base-sepolia', await signFor(payer, required, { to: '0x' + '9'.repeat(40) })),
      }),
      'invalid_exact_evm_payload_recipient_mismatch',
    ],
    [
      'value below price (v1)',
      async () => ({ 'x-payment': v1Header('base-sepolia', await signFor(payer, required, { value: 999n })) }),
      'invalid_exact_evm_payload_authorization_value',
    ],
    [
      'value above price (v2 needs equal)',
      async () => ({ 'payment-signature': v2Header(required, await signFor(payer, required, { value: 1001n })) }),
      'invalid_exact_evm_payload_authorization_value',
    ],
    [
      'validAfter in the future',
      async () => ({
        'payment-signature': v2Header(required, await signFor(payer, required, { validAfter: BigInt(now() + 60) })),
      }),
      'invalid_exact_evm_payload_authorization_valid_after',
    ],
    [
      'validBefore too soon',
      async () => ({
        'payment-signature': v2Header(required, await signFor(payer, required, { validBefore: BigInt(now() + 3) })),
      }),
      'invalid_exact_evm_payload_authorization_valid_before',
    ],
    // the echo handler may run 60 s here (HANDLER_TIMEOUT_MS): a payment must outlive the call, the batch pickup and the settler's margin
    [
      'validBefore too soon to settle after a 60 s call',
      async () => ({
        'payment-signature': v2Header(required, await signFor(payer, required, { validBefore: BigInt(now() + 80) })),
      }),
      'invalid_exact_evm_payload_authorization_valid_before',
    ],
    [
      'validBefore too far',
      async () => ({
        'payment-signature': v2Header(required, await signFor(payer, required, { validBefore: BigInt(now() + 86400) })),
      }),
      'authorization_window_too_long',
    ],
    [
      'signature by someone else',
      async () => {
        const other = privateKeyToAccount(generatePrivateKey())
        const signed = await signFor(other, required)
        return {
          'payment-signature': v2Header(required, {
            ...signed,
            authorization: { ...signed.authorization, from: payer.address },
          }),
        }
      },
      'invalid_exact_evm_payload_signature',
    ],
    [
      'signed for another chain',
      async () => ({ 'payment-signature': v2Header(required, await signFor(payer, required, { chainId: 8453 })) }),
      'invalid_exact_evm_payload_signature',
    ],
    [
      'accepted requirements changed',
      async () => ({
        'payment-signature': v2Header(required, await signFor(payer, required), {
          ...required.accepts[0],
          maxTimeoutSeconds: 1,
        }),
      }),
      'accepted_requirements_mismatch',
    ],
    [
      'asset changed',
      async () => ({
        'payment-signature': v2Header(required, await signFor(payer, required), {
          ...required.accepts[0],
          asset: '0x' + '1'.repeat(40),
        }),
      }),
      'asset_mismatch',
    ],
    [
      'payer without funds',
      async () => ({
        'payment-signature': v2Header(required, await signFor(privateKeyToAccount(generatePrivateKey()), required)),
      }),
      'invalid_exact_evm_insufficient_balance',
    ],
    ['not base64 JSON', async () => ({ 'payment-signature': '%%%not-base64%%%' }), ''],
    ['huge header', async () => ({ 'x-payment': 'A'.repeat(70_000) }), ''],
  ]
  for (const [name, make, reason] of rejections) {
    t.test(`rejected: ${name}`, async (t) => {
      const before = await countPayments()
      const r = await pay(await make())
      t.ok(r.statusCode === 402 || (r.statusCode >= 400 && r.statusCode < 500), `4xx (${r.statusCode})`)
      const body = r.json()
      if (reason) t.equal(body.error, reason, body.message)
      else t.ok(typeof body.error === 'string' || typeof body.code === 'string', 'a reason is given')
      t.equal(await countPayments(), before, 'no payment row written')
    })
  }

  t.test(
    'a validity window that covers the call and its settlement is accepted; the refusal says how long',
    async (t) => {
      const short = await pay({
        'payment-signature': v2Header(required, await signFor(payer, required, { validBefore: BigInt(now() + 80) })),
      })
      t.match(short.json().message, /at least 90 s ahead for this endpoint/)
      const enough = await pay({
        'payment-signature': v2Header(required, await signFor(payer, required, { validBefore: BigInt(now() + 95) })),
      })
      t.equal(enough.statusCode, 200)
    },
  )

  t.test('nonce reuse and blocked payer', async (t) => {
    const signed = await signFor(payer, required)
    const h = { 'payment-signature': v2Header(required, signed) }
    t.equal((await pay(h)).statusCode, 200)
    const again = await pay(h)
    t.equal(again.statusCode, 402)
    t.equal(again.json().error, 'invalid_exact_evm_nonce_already_used')

    // a funded payer, blocked: this proxy has no sync settlement, so it cannot take its payment
    const credit = createPayerCredit(deps)
    await credit.block(payer.address.toLowerCase(), 'test')
    const before = await countPayments()
    const r = await pay({ 'payment-signature': v2Header(required, await signFor(payer, required)) })
    t.equal(r.json().error, 'payer_blocked')
    t.equal(await countPayments(), before)
    await credit.unblock(payer.address.toLowerCase())
    t.equal(
      (await pay({ 'payment-signature': v2Header(required, await signFor(payer, required)) })).statusCode,
      200,
      'the reservation was given back: unblocked, it pays again',
    )
  })

  t.test('the same payment 200 times concurrently across two proxies is accepted once', async (t) => {
    const second = await platform.startProxy({ handlersDir: fixtures })
    const h = { 'payment-signature': v2Header(required, await signFor(payer, required)) }
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        fetch(`${i % 2 ? second.url : platform.proxyUrl}${echo}`, { headers: h }).then((r) => r.status),
      ),
    )
    t.equal(results.filter((s) => s === 200).length, 1, 'exactly one 200')
    t.equal(results.filter((s) => s === 402).length, 199, 'the rest are 402')
  })

  t.test('handler isolation: throwing, looping and hogging handlers fail alone', async (t) => {
    const good = Array.from({ length: 10 }, async () =>
      pay({ 'payment-signature': v2Header(required, await signFor(payer, required)) }),
    )
    const badOne = async (slug: string) => {
      const ch = decodeRequired((await proxy.inject(`/tollgate/toolbox/${slug}`)).headers['payment-required'] as string)
      return proxy.inject({
        method: 'GET',
        url: `/tollgate/toolbox/${slug}`,
        headers: { 'payment-signature': v2Header(ch, await signFor(payer, ch)) },
      })
    }
    const [thrown, looped, ...goods] = await Promise.all([badOne('throws'), badOne('loops'), ...good])
    // A heap-limit death stalls tasks queued in the same Piscina pool until the pool is replaced
    // (see handler-pool.ts), so the memory hog runs on its own here.
    const hogged = await badOne('hog')
    t.equal(thrown.statusCode, 502)
    t.equal(thrown.json().code, 'handler_failed')
    t.notMatch(thrown.body, 'internal detail', 'the error message stays inside')
    t.equal(looped.statusCode, 504, looped.body)
    t.equal(looped.json().code, 'handler_timeout')
    t.equal(hogged.statusCode, 502, hogged.body)
    for (const g of goods) t.equal(g.statusCode, 200, g.body.slice(0, 200))
    for (const r of [thrown, looped, hogged]) {
      const id = JSON.parse(Buffer.from(String(r.headers['payment-response'] ?? 'e30='), 'base64').toString()).paymentId
      t.notOk(id, 'no payment response header on failure')
    }
    const voided = await deps.db
      .selectFrom('payments as p')
      .innerJoin('endpoints as e', 'e.id', 'p.endpoint_id')
      .select(['e.slug', 'p.status'])
      .where('e.slug', 'in', ['throws', 'loops', 'hog'])
      .execute()
    t.equal(voided.length, 3)
    t.ok(
      voided.every((v) => v.status === 'voided'),
      'all three voided',
    )
    const after = await pay({ 'payment-signature': v2Header(required, await signFor(payer, required)) })
    t.equal(after.statusCode, 200, `the pool still serves: ${after.body}`)
  })

  t.test(
    'Postgres down: 503, nothing charged; no answer leaves, and a handler with effects does not run',
    async (t) => {
      const own = createDeps(deps.config)
      t.teardown(() => own.close())
      const app = await buildProxyApp(own, { logger: false, handlersDir: fixtures })
      t.teardown(() => app.close())
      const file = path.join(mkdtempSync(path.join(tmpdir(), 'tollgate-acts-')), 'effects.log')
      const acts = (line: string) => async () =>
        app.inject({
          method: 'POST',
          url: '/tollgate/toolbox/acts',
          headers: {
            'content-type': 'application/json',
            'payment-signature': v2Header(required, await signFor(payer, required)),
          },
          payload: { file, line },
        })
      const ok = await app.inject({
        method: 'GET',
        url: echo,
        headers: { 'payment-signature': v2Header(required, await signFor(payer, required)) },
      })
      t.equal(ok.statusCode, 200, 'works while Postgres is there')
      const acted = await acts('first')()
      t.equal(acted.statusCode, 200, acted.body)
      const receipt = JSON.parse(Buffer.from(acted.headers['payment-response'] as string, 'base64').toString())
      const events = await deps.db
        .selectFrom('payment_events')
        .select('to_status')
        .where('payment_id', '=', receipt.paymentId)
        .orderBy('id')
        .execute()
      t.same(
        events.map((e) => e.to_status),
        ['verified', 'served'],
        'a handler with effects is recorded before it runs',
      )
      await own.db.destroy() // this process loses its database
      const before = await countPayments()
      const r = await app.inject({
        method: 'GET',
        url: echo,
        headers: { 'payment-signature': v2Header(required, await signFor(payer, required)) },
      })
      t.equal(r.statusCode, 503)
      t.equal(r.json().code, 'payment_not_recorded')
      t.notMatch(r.body, 'hello', "the handler's answer is withheld")
      const refused = await acts('second')()
      t.equal(refused.statusCode, 503)
      t.equal(readFileSync(file, 'utf8'), 'first\n', 'the handler with effects did not run')
      t.equal(await countPayments(), before, 'nothing recorded, nothing charged')
    },
  )
})
