import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../../../src/chain/devnet.js'
import { wrapFetch, type FetchLike } from '../../../src/client.js'
import { until } from '../../helpers/until.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'

/** What `fetch` throws when the connection is reset under a request (undici). */
const connectionReset = () =>
  new TypeError('fetch failed', { cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) })

/**
 * The network between the client and the proxy: every paid request reaches the proxy, and the
 * answers to the paid requests whose (1-based) numbers are in `lost` are lost on the way back.
 */
function lossyNetwork(lost: number[]): { f: FetchLike; sent: string[] } {
  const sent: string[] = []
  const f: FetchLike = async (input, init) => {
    const req = new Request(input, init)
    const header = req.headers.get('payment-signature')
    if (header) sent.push(header)
    const res = await fetch(req)
    if (header && lost.includes(sent.length)) {
      await res.arrayBuffer()
      throw connectionReset()
    }
    return res
  }
  return { f, sent }
}

t.test(
  'wrapFetch asks once more for a lost answer with the same payment and payment-identifier: the kept answer, one charge',
  async (t) => {
    const p = await startBuyerPlatform(t)
    const payments = (payer: string) =>
      p.deps.db.selectFrom('payments').select(['id', 'status']).where('payer', '=', payer.toLowerCase()).execute()

    t.test('platform mode: the answer is lost after the proxy served it', async (t) => {
      const agent = await p.agent({ fund: 1_000_000n })
      // the first paid answer arrives at the proxy's side and is lost on the way back
      const { f, sent } = lossyNetwork([1])
      // exact (opted out of the hosted endpoint's batch-settlement): one transfer, recorded once by the proxy
      const res = await wrapFetch(f, { baseUrl: p.webUrl, agentKey: agent.key, batchSettlement: false })(
        `${p.proxyUrl}/tollgate/toolbox/echo?msg=again`,
      )
      t.equal(res.status, 200)
      t.same(await res.json(), { echo: { msg: 'again' } })
      t.equal(res.headers.get('x-tollgate-replayed'), 'true', 'answered from the kept answer')
      t.match(res.payment, {
        success: true,
        retried: true,
        header: 'PAYMENT-SIGNATURE',
        paymentIdentifier: /^pay_[0-9a-f]{32}$/,
      })
      t.equal(sent.length, 2)
      t.equal(sent[1], sent[0], 'the same payment, byte for byte')
      const rows = await payments(agent.address)
      t.equal(rows.length, 1, 'one payment recorded')
      t.equal(res.payment!.paymentId, rows[0]!.id)
      t.equal(
        (await p.deps.db.selectFrom('agent_payments').select('status').where('agent_id', '=', agent.id).execute())
          .length,
        1,
        'one payment signed',
      )
    })

    t.test('platform mode, batch-settlement (the default): the answer of a voucher is lost', async (t) => {
      const agent = await p.agent({ fund: 1_000_000n })
      // the first paid answer (a deposit and voucher) and the third (a voucher alone) are lost on the way back
      const { f, sent } = lossyNetwork([1, 3])
      const pay = wrapFetch(f, { baseUrl: p.webUrl, agentKey: agent.key })
      for (const msg of ['first', 'second']) {
        const res = await pay(`${p.proxyUrl}/tollgate/toolbox/echo?msg=${msg}`)
        t.equal(res.status, 200)
        t.same(await res.json(), { echo: { msg } })
        t.equal(res.headers.get('x-tollgate-replayed'), 'true', `${msg}: answered from the kept answer`)
        t.match(res.payment, { success: true, retried: true, scheme: 'batch-settlement' })
      }
      t.equal(sent.length, 4)
      t.equal(sent[1], sent[0], 'the deposit and voucher sent again byte for byte')
      t.equal(sent[3], sent[2], 'the second voucher too')
      const rows = await payments(agent.address)
      t.equal(rows.length, 2, 'two calls recorded by the proxy, not four')
      const vouchers = await p.deps.db
        .selectFrom('agent_payments')
        .select(['scheme', 'amount', 'value_aggregate'])
        .where('agent_id', '=', agent.id)
        .orderBy('created_at')
        .execute()
      t.same(
        vouchers.map((v) => [v.scheme, v.amount, v.value_aggregate]),
        [
          ['batch-settlement', '1000', '1000'],
          ['batch-settlement', '1000', '2000'],
        ],
        'two vouchers signed, cumulative 1000 then 2000: the lost answers charged nothing twice',
      )
    })

    t.test('local key: the connection drops while the handler runs; the retry waits out "in progress"', async (t) => {
      const key = generatePrivateKey()
      const payer = privateKeyToAccount(key).address
      await mintUsdc(p.devnet.rpcUrl, payer, 1_000_000n)
      const statuses: number[] = []
      let dropped = false
      const f: FetchLike = async (input, init) => {
        const req = new Request(input, init)
        if (req.headers.has('payment-signature') && !dropped) {
          dropped = true
          const ac = new AbortController()
          const pending = fetch(req, { signal: ac.signal }).catch(() => undefined)
          await until('the call to claim its id', async () =>
            p.deps.db
              .selectFrom('payment_identifiers')
              .select('payer')
              .where('payer', '=', payer.toLowerCase())
              .executeTakeFirst(),
          )
          ac.abort()
          await pending
          throw connectionReset()
        }
        const res = await fetch(req)
        if (req.headers.has('payment-signature')) statuses.push(res.status)
        return res
      }
      const res = await wrapFetch(f, { privateKey: key })(`${p.proxyUrl}/tollgate/toolbox/naps?msg=slow&ms=1500`)
      t.equal(res.status, 200)
      t.same(await res.json(), { echo: { msg: 'slow', ms: 1500 } })
      t.equal(res.payment!.retried, true)
      t.ok(statuses.includes(409), `"in progress" was waited through (${statuses.join(', ')})`)
      const rows = await payments(payer)
      t.same(
        rows.map((r) => r.status),
        ['served'],
        'one run, one payment',
      )
    })

    t.test(
      'POST /v1/agent/payments: payment_identifier goes into a v2 payment that declares the extension, and is checked',
      async (t) => {
        const agent = await p.agent({ fund: 1_000_000n })
        const url = `${p.proxyUrl}/tollgate/toolbox/echo?msg=api`
        const challenge = await fetch(url)
        const header = challenge.headers.get('payment-required')!
        const v1Body = await challenge.json()
        const pay = (body: Record<string, unknown>) =>
          p.web.inject({ method: 'POST', url: '/v1/agent/payments', headers: agent.auth, payload: { url, ...body } })
        // an exact transfer (opted out of the hosted endpoint's batch-settlement)
        const v2 = await pay({
          challenge: header,
          batch_settlement: false,
          payment_identifier: 'pay_0123456789abcdef0123456789abcdef',
        })
        t.equal(v2.statusCode, 201)
        t.match(v2.json(), { header: 'PAYMENT-SIGNATURE', payment_identifier: 'pay_0123456789abcdef0123456789abcdef' })
        const sent = JSON.parse(Buffer.from(v2.json().value, 'base64').toString('utf8'))
        t.equal(
          sent.extensions['payment-identifier'].info.id,
          'pay_0123456789abcdef0123456789abcdef',
          'in the payment, where the extension puts it',
        )
        const v1 = await pay({ challenge: v1Body, payment_identifier: 'pay_0123456789abcdef0123456789abcdef' })
        t.equal(v1.statusCode, 201)
        t.notOk('payment_identifier' in v1.json(), 'a v1 payment cannot carry it: not claimed')
        const bad = await pay({ challenge: header, payment_identifier: 'short' })
        t.equal(bad.statusCode, 400)
        t.match(bad.json(), { code: 'invalid_parameter', param: 'payment_identifier' })
      },
    )

    t.test("the caller's own abort is not retried", async (t) => {
      const agent = await p.agent({ fund: 1_000_000n })
      const ac = new AbortController()
      let paid = 0
      const f: FetchLike = async (input, init) => {
        const req = new Request(input, init)
        if (req.headers.has('payment-signature')) {
          paid++
          ac.abort()
          req.signal.throwIfAborted()
        }
        return fetch(req)
      }
      const err = await wrapFetch(f, { baseUrl: p.webUrl, agentKey: agent.key })(
        `${p.proxyUrl}/tollgate/toolbox/echo?msg=x`,
        { signal: ac.signal },
      ).catch((e: Error) => e)
      t.equal((err as Error).name, 'AbortError')
      t.equal(paid, 1, 'sent once')
    })
  },
)
