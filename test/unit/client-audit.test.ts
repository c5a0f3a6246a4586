import t from 'tap'
import { PaidCallFailedError } from '../../src/client/errors.js'
import { wrapFetch, type FetchLike } from '../../src/client/wrap-fetch.js'

// A seller that always asks for 0.001 USDC (x402 v1) and serves a paid retry, and a stand-in for
// the platform's agent payment API, both behind one fetch: what the wrapper sends where.
const API = 'http://api.test'
const SELLER = 'http://seller.test/paid'
const challenge = {
  x402Version: 1,
  accepts: [
    {
      scheme: 'exact',
      network: 'base-sepolia',
      maxAmountRequired: '1000',
      resource: SELLER,
      payTo: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
      maxTimeoutSeconds: 300,
      asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
      extra: { name: 'USDC', version: '2' },
    },
  ],
}
const signed = {
  object: 'agent_payment',
  payment_id: '00000000-0000-4000-8000-000000000001',
  header: 'X-PAYMENT',
  value: 'cGFpZA==',
  amount: '1000',
  pay_to: challenge.accepts[0]!.payTo,
  payer: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  network: 'base-sepolia',
}

function world(
  opts: {
    platform?: (init: RequestInit | undefined) => Promise<Response> | Response
    after402?: () => void
    paidRetry?: () => Response
  } = {},
) {
  const calls: Array<{ url: string; headers: Headers }> = []
  const outcomes: Array<{ url: string; body: unknown }> = []
  const f: FetchLike = async (input, init) => {
    const req = new Request(input, init)
    calls.push({ url: req.url, headers: req.headers })
    if (req.url === `${API}/v1/agent/payments`)
      return opts.platform ? opts.platform(init) : Response.json(signed, { status: 201 })
    if (req.url.startsWith(`${API}/v1/agent/payments/`)) {
      outcomes.push({ url: req.url, body: await req.json() })
      return Response.json({}, { status: 200 })
    }
    req.signal.throwIfAborted()
    if (req.url === 'http://seller.test/free') return new Response('free')
    const text = await req.text()
    if (!req.headers.has('x-payment')) {
      opts.after402?.()
      return Response.json(challenge, { status: 402 })
    }
    if (opts.paidRetry) return opts.paidRetry()
    return new Response(`served${text ? `: ${text}` : ''}`)
  }
  return {
    f,
    calls,
    outcomes,
    signs: () => calls.filter((c) => c.url === `${API}/v1/agent/payments`).length,
    sellerCalls: () => calls.filter((c) => c.url === SELLER).length,
  }
}

t.test('wrapFetch: an aborted call has nothing signed for it', async (t) => {
  const ac = new AbortController()
  const w = world({ after402: () => ac.abort() })
  const pay = wrapFetch(w.f, { baseUrl: API, agentKey: 'ak_test_x' })
  await t.rejects(pay(SELLER, { signal: ac.signal }), { name: 'AbortError' })
  t.equal(w.signs(), 0, 'aborted after the 402: the platform is not asked to sign')
  t.equal(w.sellerCalls(), 1, 'no paid retry')
})

t.test('wrapFetch: the signal reaches the platform signing call', async (t) => {
  const ac = new AbortController()
  let seen: AbortSignal | null | undefined
  const w = world({
    platform: (init) => {
      seen = init?.signal
      ac.abort()
      init?.signal?.throwIfAborted()
      return Response.json(signed, { status: 201 })
    },
  })
  const pay = wrapFetch(w.f, { baseUrl: API, agentKey: 'ak_test_x' })
  await t.rejects(pay(SELLER, { signal: ac.signal }), { name: 'AbortError' })
  t.ok(seen, 'the signing request carries the caller signal')
  t.equal(w.sellerCalls(), 1, 'no paid retry after the abort')
})

t.test(
  'wrapFetch: a 2xx from baseUrl that is not a signed payment is a clear error, not a retry with a junk header',
  async (t) => {
    const w = world({
      platform: () =>
        new Response('<!doctype html><title>dashboard</title>', {
          status: 200,
          headers: { 'content-type': 'text/html' },
        }),
    })
    const pay = wrapFetch(w.f, { baseUrl: API, agentKey: 'ak_test_secret' })
    const err = await pay(SELLER).then(
      () => undefined,
      (e: Error) => e,
    )
    t.ok(err, 'rejects')
    t.match(err?.message, /http:\/\/api\.test answered 200 without a signed payment/)
    t.notMatch(err?.message, /ak_test_secret/, 'no key in the message')
    t.equal(w.sellerCalls(), 1, 'the seller is not called again')
    t.notOk(
      w.calls.some((c) => c.headers.has('undefined')),
      'no "undefined" header sent anywhere',
    )
  },
)

t.test('wrapFetch: a non-402 answer is returned as is; a stream body is sent intact on the paid retry', async (t) => {
  const w = world()
  const pay = wrapFetch(w.f, { baseUrl: API, agentKey: 'ak_test_x' })
  const free = await pay('http://seller.test/free')
  t.equal(free.status, 200)
  t.equal(await free.text(), 'free')
  t.equal(w.signs(), 0, 'nothing signed for a free answer')
  const enc = new TextEncoder()
  const body = new ReadableStream({
    start(c) {
      c.enqueue(enc.encode('part one, '))
      c.enqueue(enc.encode('part two'))
      c.close()
    },
  })
  const res = await pay(SELLER, { method: 'POST', body, duplex: 'half' } as RequestInit)
  t.equal(await res.text(), 'served: part one, part two')
  t.equal(w.signs(), 1)
})

t.test(
  'wrapFetch: a paid retry that gets no answer is a PaidCallFailedError naming the signed payment, reported as error',
  async (t) => {
    const w = world({
      paidRetry: () => {
        throw new TypeError('fetch failed', {
          cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
        })
      },
    })
    const pay = wrapFetch(w.f, { baseUrl: API, agentKey: 'ak_test_x' })
    const err = await pay(SELLER).then(
      () => undefined,
      (e: unknown) => e,
    )
    t.type(err, PaidCallFailedError)
    const e = err as PaidCallFailedError
    t.match(e.payment, {
      success: false,
      agentPaymentId: signed.payment_id,
      amount: '1000',
      payTo: signed.pay_to,
      header: 'X-PAYMENT',
    })
    t.match(e.message, /the call failed after a payment was signed: fetch failed/)
    t.type(e.cause, TypeError)
    t.same(
      w.outcomes,
      [
        {
          url: `${API}/v1/agent/payments/${signed.payment_id}/outcome`,
          body: { status: 'error', payment_response: null },
        },
      ],
      'the outcome is reported',
    )
  },
)

t.test('wrapFetch: an agentKey with a line break is refused when wrapping, without quoting it', async (t) => {
  const w = world()
  let err: Error | undefined
  try {
    await wrapFetch(w.f, { baseUrl: API, agentKey: 'ak_test_SECRETSECRET\nX' })(SELLER)
  } catch (e) {
    err = e as Error
  }
  t.type(err, TypeError)
  t.match(err?.message, /agentKey must be an agent key/)
  t.notMatch(err?.message, /SECRETSECRET/, 'the key is not in the message')
  t.equal(w.signs(), 0)
})
