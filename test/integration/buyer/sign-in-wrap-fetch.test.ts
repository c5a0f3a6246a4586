import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../../../src/chain/devnet.js'
import { wrapFetch, type FetchLike } from '../../../src/client.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { until } from '../../helpers/until.js'
import { endAccessGrants } from '../../helpers/access-grants.js'

const p = await startBuyerPlatform(t)
const db = p.deps.db
const echo = `${p.proxyUrl}/tollgate/toolbox/echo`
await db.updateTable('endpoints').set({ access_minutes: 10 }).where('slug', '=', 'echo').execute()
await announceRegistryChange(p.deps, {})
await until('the proxy to offer sign-in on echo', async () => {
  const res = await fetch(`${echo}?msg=x`)
  return decodeRequired(res.headers.get('payment-required')).extensions?.['sign-in-with-x'] !== undefined
})

const payments = (payer: string) =>
  db.selectFrom('payments').select(['id', 'status']).where('payer', '=', payer.toLowerCase()).execute()

/** A funded local key and a fetch that logs which x402 headers each request carried. */
async function buyer() {
  const privateKey = generatePrivateKey()
  const account = privateKeyToAccount(privateKey)
  await mintUsdc(p.devnet.rpcUrl, account.address, 1_000_000n)
  const sent: string[] = []
  const f: FetchLike = async (input, init) => {
    const req = new Request(input, init)
    sent.push(
      req.headers.has('payment-signature') || req.headers.has('x-payment')
        ? 'pay'
        : req.headers.has('sign-in-with-x')
          ? 'sign-in'
          : 'plain',
    )
    return fetch(req)
  }
  return { privateKey, account, sent, f }
}

t.test('a local key pays once, then signs in on the next call instead of paying', async (t) => {
  const b = await buyer()
  const pay = wrapFetch(b.f, { privateKey: b.privateKey })
  const first = await pay(`${echo}?msg=one`)
  t.equal(first.status, 200)
  t.ok(first.payment, 'paid')
  t.equal(first.signedIn, undefined)
  const second = await pay(`${echo}?msg=two`)
  t.equal(second.status, 200)
  t.same(await second.json(), { echo: { msg: 'two' } })
  t.equal(second.payment, undefined, 'no payment')
  t.same(second.signedIn, { payer: b.account.address, uri: echo })
  t.same(b.sent, ['plain', 'pay', 'plain', 'sign-in'], 'the second call sent a sign-in, never a payment')
  t.equal((await payments(b.account.address)).length, 1, 'one payment in the ledger')
})

t.test('an access that ran out: the sign-in is refused and the call is paid', async (t) => {
  const b = await buyer()
  const pay = wrapFetch(b.f, { privateKey: b.privateKey })
  t.ok((await pay(`${echo}?msg=one`)).payment)
  await endAccessGrants(p.deps, b.account.address)
  const res = await pay(`${echo}?msg=two`)
  t.equal(res.status, 200)
  t.ok(res.payment, 'paid again')
  t.same(b.sent, ['plain', 'pay', 'plain', 'sign-in', 'pay'])
  t.equal((await payments(b.account.address)).length, 2)
  const third = await pay(`${echo}?msg=three`)
  t.ok(third.signedIn, 'the new payment gave a new access')
})

t.test(
  "signIn: 'never' pays every time; 'always' tries the sign-in first, even for a wallet that never paid",
  async (t) => {
    const b = await buyer()
    const never = wrapFetch(b.f, { privateKey: b.privateKey, signIn: 'never' })
    t.ok((await never(`${echo}?msg=a`)).payment)
    t.ok((await never(`${echo}?msg=b`)).payment)
    t.same(b.sent, ['plain', 'pay', 'plain', 'pay'])
    const c = await buyer()
    const always = wrapFetch(c.f, { privateKey: c.privateKey, signIn: 'always' })
    t.ok((await always(`${echo}?msg=a`)).payment, 'refused sign-in, then paid')
    t.ok(
      (await wrapFetch(c.f, { privateKey: c.privateKey, signIn: 'always' })(`${echo}?msg=b`)).signedIn,
      'a new wrapped fetch (a new process) signs in',
    )
    t.same(c.sent, ['plain', 'sign-in', 'pay', 'plain', 'sign-in'])
  },
)

t.test('endpoints without paid access are paid every time', async (t) => {
  const b = await buyer()
  const pay = wrapFetch(b.f, { privateKey: b.privateKey, signIn: 'always' })
  const url = `${p.proxyUrl}/tollgate/toolbox/naps?msg=x&ms=1`
  t.ok((await pay(url)).payment)
  t.ok((await pay(url)).payment)
  t.same(b.sent, ['plain', 'pay', 'plain', 'pay'])
})

t.test(
  'platform mode: the agent wallet pays once, then the platform signs the sign-in and nothing more is spent',
  async (t) => {
    const agent = await p.agent({ fund: 1_000_000n })
    const sent: string[] = []
    const f: FetchLike = async (input, init) => {
      const req = new Request(input, init)
      const u = new URL(req.url)
      sent.push(
        u.origin === p.webUrl
          ? u.pathname
          : req.headers.has('payment-signature') || req.headers.has('x-payment')
            ? 'pay'
            : req.headers.has('sign-in-with-x')
              ? 'sign-in'
              : 'plain',
      )
      return fetch(req)
    }
    const pay = wrapFetch(f, { baseUrl: p.webUrl, agentKey: agent.key })
    const first = await pay(`${echo}?msg=one`)
    t.equal(first.status, 200)
    t.ok(first.payment?.agentPaymentId, 'paid from the agent wallet')
    const second = await pay(`${echo}?msg=two`)
    t.equal(second.status, 200)
    t.same(await second.json(), { echo: { msg: 'two' } })
    t.equal(second.payment, undefined)
    t.same(second.signedIn, { payer: agent.address, uri: echo })
    t.same(
      sent.filter((s) => !s.startsWith('/v1/agent/payments/')),
      ['plain', '/v1/agent/payments', 'pay', 'plain', '/v1/agent/sign-in', 'sign-in'],
    )
    t.equal((await payments(agent.address)).length, 1, 'one payment in the ledger')
    const agentPayments = await db.selectFrom('agent_payments').select('id').where('agent_id', '=', agent.id).execute()
    t.equal(agentPayments.length, 1, 'one agent payment: the sign-in spent nothing')

    const refused = await fetch(`${p.webUrl}/v1/agent/sign-in`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agent.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        url: 'http://elsewhere.example/tollgate/toolbox/echo',
        challenge: (await fetch(`${echo}?msg=x`)).headers.get('payment-required'),
      }),
    })
    t.equal(refused.status, 400, 'a challenge bound to another origin is never signed')
    t.match(await refused.json(), { code: 'invalid_parameter' })
  },
)
