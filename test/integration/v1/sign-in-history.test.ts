/**
 * Calls served on an x402 sign-in-with-x access grant (issue #27) in the history: each one is
 * recorded (access_uses) and listed to the buyer and to the seller by /v1/transactions and its
 * exports as a `sign_in` entry of amount 0 naming the payment whose grant served it and the grant's
 * scope; nothing is charged. The use is committed before the answer leaves (no buffer to lose).
 */
import pg from 'pg'
import t from 'tap'
import { wrapFetch } from '../../../src/client.js'
import { createPublishing } from '../../../src/services/publishing/publishing.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { userWithKey } from '../../helpers/accounts.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { startCrashProxy } from '../../helpers/crash-proxy.js'
import { meteredUpstream } from '../../helpers/metered.js'
import { decodeRequired } from '../../helpers/pay.js'
import { TEST_DATABASE_URL } from '../../helpers/test-env.js'
import { until } from '../../helpers/until.js'

const N = 3

t.test(
  'N calls signed in after one payment: N sign_in entries for the buyer and the seller, nothing charged',
  async (t) => {
    const origin = await meteredUpstream(t)
    const p = await startBuyerPlatform(t, {
      env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true' },
      proxy: { allowPrivateNetwork: true },
    })
    const { deps, devnet } = p
    const seller = await userWithKey(deps)
    const buyer = await userWithKey(deps)
    const pub = createPublishing(deps)
    await pub.claimNamespace({ userId: seller.userId }, { namespace: 'siwx-hist', display_name: 'S' })
    await pub.createService({ userId: seller.userId }, 'siwx-hist', {
      name: 'svc',
      pay_to: devnet.accounts.receiver.address,
    })
    const endpoint = (await pub.createEndpoint({ userId: seller.userId }, 'siwx-hist', 'svc', {
      slug: 'doc',
      methods: ['GET'],
      price: '2000',
      upstream_url: origin,
      access_minutes: 10,
    })) as { id: string }
    await announceRegistryChange(deps)
    const url = `${p.proxyUrl}/siwx-hist/svc/doc`
    await until('the proxy offers sign-in', async () => {
      const h = (await fetch(url)).headers.get('payment-required')
      return h !== null && decodeRequired(h).extensions?.['sign-in-with-x'] !== undefined
    })

    const agent = await p.agent({ user: buyer.userId, fund: 1_000_000n })
    const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key })
    // another connection than the proxy's: what it sees is committed
    const reader = new pg.Client({
      connectionString: TEST_DATABASE_URL,
      options: `-c search_path=${deps.config.databaseSchema}`,
    })
    await reader.connect()
    t.teardown(() => reader.end())
    const uses = async () =>
      Number((await reader.query<{ n: string }>('select count(*) as n from access_uses')).rows[0]!.n)

    const paid = await pay(`${url}?n=0`)
    t.equal(paid.status, 200)
    const paymentId = paid.payment!.paymentId ?? paid.headers.get('x-payment-id')
    const [payment] = await deps.db
      .selectFrom('payments')
      .select(['id', 'value'])
      .where('payer', '=', agent.address.toLowerCase())
      .execute()
    t.ok(payment, 'one payment')
    if (paymentId) t.equal(paymentId, payment!.id)
    t.equal(await uses(), 0, 'a paid call is no sign-in use')

    for (let i = 1; i <= N; i++) {
      const res = await pay(`${url}?n=${i}`)
      t.equal(res.status, 200)
      t.ok(res.signedIn, `call ${i} served on the sign-in`)
      t.equal(res.payment, undefined, 'nothing paid')
      // no drain, no wait: the answer left after its use was committed
      t.equal(await uses(), i, `call ${i}'s use is committed when its answer arrives`)
    }
    // a refused proof records nothing
    const forged = await fetch(url, { headers: { 'sign-in-with-x': 'not-a-proof' } })
    t.equal(forged.status, 402)
    t.equal(await uses(), N, 'a refused sign-in is no use')

    // Redis losing its keys (the sign-in count for /metrics) loses no recorded use
    const keys = await deps.redis.keys(deps.key('*'))
    if (keys.length) await deps.redis.del(...keys)
    t.equal(await uses(), N, 'the uses are in Postgres, not Redis')

    t.equal(
      (await deps.db.selectFrom('payments').select('id').where('payer', '=', agent.address.toLowerCase()).execute())
        .length,
      1,
      'nothing charged for the sign-ins: one payment in the ledger',
    )
    t.equal(
      (await deps.db.selectFrom('agent_payments').select('id').where('agent_id', '=', agent.id).execute()).length,
      1,
      'and one signed by the agent wallet',
    )

    const list = async (auth: { authorization: string }, q = '') => {
      const r = await fetch(`${p.webUrl}/v1/transactions?limit=100${q}`, { headers: auth })
      t.equal(r.status, 200)
      return ((await r.json()) as { data: Record<string, unknown>[] }).data
    }
    const signIns = (rows: Record<string, unknown>[]) => rows.filter((r) => r.kind === 'sign_in')
    const expected = {
      object: 'transaction',
      kind: 'sign_in',
      scheme: 'sign-in-with-x',
      status: 'served',
      value: '0',
      payer: agent.address.toLowerCase(),
      pay_to: devnet.accounts.receiver.address.toLowerCase(),
      endpoint_id: endpoint.id,
      grant_payment_id: payment!.id,
      grant_scope_id: endpoint.id,
      method: 'GET',
      tx_hash: null,
      settled_at: null,
    }
    for (const [who, auth] of [
      ['buyer', buyer.auth],
      ['seller', seller.auth],
    ] as const) {
      const rows = await list(auth)
      t.equal(rows.length, N + 1, `${who}: the payment and the ${N} sign-ins`)
      t.equal(signIns(rows).length, N)
      for (const r of signIns(rows)) t.match(r, expected, `${who}: a sign_in entry of amount 0 naming the grant`)
      t.match(
        rows.find((r) => r.kind === 'payment'),
        { id: payment!.id, value: '2000', grant_payment_id: null },
      )
      t.equal(signIns(await list(auth, '&kind=sign_in')).length, N, `${who}: kind=sign_in`)
      t.same(signIns(await list(auth, '&kind=payment')), [], `${who}: kind=payment leaves them out`)
      t.equal(signIns(await list(auth, `&role=${who}`)).length, N, `${who}: role=${who}`)
      t.same(signIns(await list(auth, '&status=settled')), [], 'status=settled leaves them out (never settled)')
      t.equal(signIns(await list(auth, `&agent=${agent.address}&order=desc`)).length, N, 'the agent filter')
    }
    t.same(signIns(await list(seller.auth, '&role=buyer')), [], 'the seller bought none of them')

    // pages: a cursor walks through sign-ins as through payments
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const r = await fetch(`${p.webUrl}/v1/transactions?limit=1${cursor ? `&cursor=${cursor}` : ''}`, {
        headers: buyer.auth,
      })
      const b = (await r.json()) as { data: { id: string }[]; next_cursor: string | null }
      seen.push(...b.data.map((x) => x.id))
      cursor = b.next_cursor
    } while (cursor)
    t.equal(new Set(seen).size, N + 1, 'every entry once, page by page')

    // the exports
    const csv = await (await fetch(`${p.webUrl}/v1/transactions?format=csv`, { headers: buyer.auth })).text()
    const [header, ...lines] = csv.trim().split('\r\n')
    const cols = header!.split(',')
    t.ok(cols.includes('grant_payment_id') && cols.includes('grant_scope_id'), 'the CSV names the grant')
    const csvSignIns = lines.map((l) => l.split(',')).filter((f) => f[cols.indexOf('kind')] === 'sign_in')
    t.equal(csvSignIns.length, N, `${N} sign_in lines in the buyer's CSV`)
    for (const f of csvSignIns) {
      t.equal(f[cols.indexOf('value')], '0')
      t.equal(f[cols.indexOf('grant_payment_id')], payment!.id)
    }
    const ndjson = await (await fetch(`${p.webUrl}/v1/transactions?format=ndjson`, { headers: seller.auth })).text()
    const entries = ndjson
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    t.equal(signIns(entries).length, N, `${N} sign_in entries in the seller's NDJSON`)
    for (const e of signIns(entries)) t.match(e, expected)
    t.same(
      signIns(
        (
          (await (await fetch(`${p.webUrl}/v1/payment-events?limit=100`, { headers: buyer.auth })).json()) as {
            data: Record<string, unknown>[]
          }
        ).data,
      ),
      [],
      'the payment events list is about payments alone',
    )
  },
)

t.test('a proxy killed as it begins a sign-in answer has recorded the use already', async (t) => {
  const p = await startBuyerPlatform(t)
  await p.deps.db.updateTable('endpoints').set({ access_minutes: 10 }).where('slug', '=', 'echo').execute()
  await announceRegistryChange(p.deps, {})
  const agent = await p.agent({ fund: 1_000_000n })
  await until('the proxy offers sign-in on echo', async () => {
    const h = (await fetch(`${p.proxyUrl}/tollgate/toolbox/echo?msg=x`)).headers.get('payment-required')
    return h !== null && decodeRequired(h).extensions?.['sign-in-with-x'] !== undefined
  })
  // the access, bought from the platform's own proxy with a transfer (opted out of batch-settlement): its payment row
  const paid = await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, batchSettlement: false })(
    `${p.proxyUrl}/tollgate/toolbox/echo?msg=paid`,
  )
  t.equal(paid.status, 200)
  const payment = await p.deps.db
    .selectFrom('payments')
    .select('id')
    .where('payer', '=', agent.address.toLowerCase())
    .executeTakeFirstOrThrow()

  // another proxy process, which dies (SIGKILL) as it starts writing a sign-in's answer
  const { origin, exited } = await startCrashProxy(t, p.env, { CRASH_BEFORE_SIGN_IN_ANSWER: '1' })
  const err = await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, signIn: 'always' })(
    `${origin}/tollgate/toolbox/echo?msg=lost`,
  ).catch((e: unknown) => e)
  t.type(err, Error, 'the sign-in got no answer')
  t.same(await exited, { code: null, signal: 'SIGKILL' }, 'the proxy died of SIGKILL as it began the answer')
  const rows = await p.deps.db.selectFrom('access_uses').select(['payer', 'payment_id', 'resource']).execute()
  t.same(
    rows,
    [{ payer: agent.address.toLowerCase(), payment_id: payment.id, resource: `${origin}/tollgate/toolbox/echo` }],
    'the use was committed before the answer began: a killed process loses none',
  )
  t.equal((await p.deps.db.selectFrom('payments').select('id').execute()).length, 1, 'and nothing was charged for it')
})
