import t from 'tap'
import { createDeps } from '../../../src/deps.js'
import { AppError } from '../../../src/errors.js'
import { createAgentPayments } from '../../../src/services/agent-payments/agent-payments.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'

const count = async (db: ReturnType<typeof createDeps>['db'], agentId: string) =>
  Number(
    (
      await db
        .selectFrom('agent_payments')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('agent_id', '=', agentId)
        .executeTakeFirstOrThrow()
    ).n,
  )

t.test(
  'caps hold under concurrency across processes, reset at UTC boundaries, and bad input signs nothing',
  async (t) => {
    const p = await startBuyerPlatform(t)
    const url = `${p.proxyUrl}/tollgate/toolbox/echo`
    // the hosted endpoint offers batch-settlement beside exact: these are caps on transfers (each signed
    // authorization counted until it settles or expires), so every payment here opts out of it
    const challenge = (await fetch(url)).headers.get('payment-required')!
    // two "processes": separate Postgres pools and Redis connections on the same stores
    const deps2 = createDeps(p.deps.config)
    t.teardown(() => deps2.close())
    const services = [createAgentPayments(p.deps), createAgentPayments(deps2)]
    t.teardown(() => Promise.all(services.map((s) => s.close())))

    async function storm(agentId: string, n = 200) {
      const results = await Promise.allSettled(
        Array.from({ length: n }, (_, i) => services[i % 2]!.pay(agentId, { url, challenge, batch_settlement: false })),
      )
      const ok = results.filter((r) => r.status === 'fulfilled').length
      const codes = new Set(
        results
          .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
          .map((r) => (r.reason as AppError).code ?? String(r.reason)),
      )
      return { ok, codes: [...codes] }
    }

    for (const [name, caps, expected] of [
      ['per-transaction below the price', { per_transaction: '999' }, 0],
      ['per-transaction at the price', { per_transaction: '1000' }, 200],
      ['daily', { daily: '50000' }, 50],
      ['monthly', { monthly: '50000' }, 50],
    ] as const) {
      const agent = await p.agent({ fund: 1_000_000n, caps })
      const r = await storm(agent.id)
      t.equal(r.ok, expected, `${name}: exactly ${expected} of 200 signed`)
      t.same(
        r.codes,
        expected === 200 ? [] : ['spend_cap_exceeded'],
        `${name}: the rest refused with spend_cap_exceeded`,
      )
      t.equal(await count(p.deps.db, agent.id), expected, `${name}: ${expected} reservations recorded`)
    }

    // the refusal says which cap and what is left
    const capped = await p.agent({ fund: 1_000_000n, caps: { daily: '2500', monthly: '100000' } })
    await services[0]!.pay(capped.id, { url, challenge, batch_settlement: false })
    await services[0]!.pay(capped.id, { url, challenge, batch_settlement: false })
    const over = await services[0]!.pay(capped.id, { url, challenge, batch_settlement: false }).catch((e) => e)
    t.match(over, {
      code: 'spend_cap_exceeded',
      statusCode: 403,
      details: { cap: 'daily', limit: '2500', spent: '2000', remaining: '500', amount: '1000' },
    })
    // the per-transaction refusal speaks USDC; the details keep atomic units
    const small = await p.agent({ fund: 1_000_000n, caps: { per_transaction: '999' } })
    t.match(await services[0]!.pay(small.id, { url, challenge, batch_settlement: false }).catch((e) => e), {
      code: 'spend_cap_exceeded',
      message: /the price 0\.001 USDC is above the per-transaction cap of 0\.000999 USDC$/,
      details: { cap: 'per_transaction', limit: '999', amount: '1000' },
    })

    t.test('insufficient_balance counts unsettled payments signed by every process', async (t) => {
      const agent = await p.agent({ fund: 2500n })
      await services[0]!.pay(agent.id, { url, challenge, batch_settlement: false })
      await services[1]!.pay(agent.id, { url, challenge, batch_settlement: false })
      // each process alone has seen one payment of 1000 against 2500; together they have signed 2000
      const refused = await services[0]!.pay(agent.id, { url, challenge, batch_settlement: false }).catch((e) => e)
      t.match(refused, {
        code: 'insufficient_balance',
        details: { balance: '2500', unsettled: '2000', available: '500', needed: '1000' },
      })
      t.match(
        await services[1]!.pay(agent.id, { url, challenge, batch_settlement: false }).catch((e) => e),
        { code: 'insufficient_balance' },
        'the other process agrees',
      )
      t.match(await services[1]!.pay(agent.id, { url, challenge, batch_settlement: false, dry_run: true }), {
        would_pay: null,
        refusal: { code: 'insufficient_balance', unsettled: '2000' },
      })
      t.equal(await count(p.deps.db, agent.id), 2, 'nothing more signed')
      // a rejection of a payment the proxy never recorded (the platform takes its nonce) releases its amount at once, on every process
      const [first] = await p.deps.db
        .selectFrom('agent_payments')
        .select('id')
        .where('agent_id', '=', agent.id)
        .execute()
      await services[1]!.outcome(agent.id, first!.id, { status: 'rejected' })
      t.match(
        await services[0]!.pay(agent.id, { url, challenge, batch_settlement: false }),
        { object: 'agent_payment' },
        'paid after the release',
      )
    })

    t.test('UTC day and month boundaries with an injected clock; expiry releases', async (t) => {
      let clock = new Date('2026-11-29T23:59:58Z')
      const svc = createAgentPayments({ ...p.deps, now: () => clock })
      t.teardown(() => svc.close())
      const agent = await p.agent({ fund: 1_000_000n, caps: { daily: '2000', monthly: '3000' } })
      const pay = () => svc.pay(agent.id, { url, challenge, batch_settlement: false })
      await pay()
      await pay()
      t.match(await pay().catch((e) => e), { code: 'spend_cap_exceeded', details: { cap: 'daily' } }, 'day full')
      clock = new Date('2026-11-30T00:00:01Z')
      await pay()
      t.match(
        await pay().catch((e) => e),
        { code: 'spend_cap_exceeded', details: { cap: 'monthly', remaining: '0' } },
        'new day, but the month is full',
      )
      const preview = await svc.pay(agent.id, { url, challenge, batch_settlement: false, dry_run: true })
      t.match(preview, {
        would_pay: null,
        refusal: { code: 'spend_cap_exceeded', cap: 'monthly' },
        spent: { daily: '1000', monthly: '3000' },
      })
      clock = new Date('2026-12-01T00:00:00Z')
      const fresh = await pay()
      t.match(fresh, { headroom: { daily: '1000', monthly: '2000' } }, 'both reset at the month boundary')

      // unused reservations expire after validBefore and are released (nothing on chain used them)
      clock = new Date(clock.getTime() + 3600_000)
      await p.chainTimeAtLeast(Math.floor(clock.getTime() / 1000)) // the chain's clock decides, not ours
      const swept = await svc.sweep(5000)
      t.ok(swept.expired >= 1)
      const row = await p.deps.db
        .selectFrom('agent_payments')
        .select('status')
        .where('id', '=', (fresh as { payment_id: string }).payment_id)
        .executeTakeFirstOrThrow()
      t.equal(row.status, 'expired')
      t.match(
        await svc.pay(agent.id, { url, challenge, batch_settlement: false, dry_run: true }),
        { spent: { daily: '0', monthly: '0' } },
        'released',
      )
    })

    t.test('bad inputs: 4xx, nothing signed', async (t) => {
      const agent = await p.agent({ fund: 1_000_000n })
      const v2 = JSON.parse(Buffer.from(challenge, 'base64').toString())
      const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64')
      const cases: Array<[string, unknown, number, string]> = [
        ['garbage string', { url, challenge: 'not base64 at all!' }, 400, 'invalid_parameter'],
        ['empty object', { url, challenge: {} }, 400, 'invalid_parameter'],
        [
          'accepts of junk',
          { url, challenge: { x402Version: 1, accepts: [{ scheme: 'exact' }] } },
          400,
          'invalid_parameter',
        ],
        ['array', { url, challenge: [1, 2] }, 400, 'invalid_parameter'],
        ['no url', { challenge }, 400, 'invalid_parameter'],
        ['relative url', { url: '/tollgate/toolbox/echo', challenge }, 400, 'invalid_parameter'],
        ['mismatched url', { url: `${p.proxyUrl}/tollgate/toolbox/other`, challenge }, 400, 'invalid_parameter'],
        [
          'unknown network',
          { url, challenge: b64({ ...v2, accepts: [{ ...v2.accepts[0], network: 'eip155:1' }] }) },
          422,
          'unsupported_requirements',
        ],
        [
          'other asset',
          { url, challenge: b64({ ...v2, accepts: [{ ...v2.accepts[0], asset: '0x' + '11'.repeat(20) }] }) },
          422,
          'unsupported_requirements',
        ],
        ['huge body', { url, challenge: 'A'.repeat(200_000) }, 413, 'payload_too_large'],
        ['huge challenge', { url, challenge: 'A'.repeat(40_000) }, 400, 'invalid_parameter'],
      ]
      for (const [name, payload, status, code] of cases) {
        const res = await p.web.inject({
          method: 'POST',
          url: '/v1/agent/payments',
          headers: { ...agent.auth, 'content-type': 'application/json' },
          payload: JSON.stringify(payload),
        })
        t.equal(res.statusCode, status, `${name}: ${res.body.slice(0, 200)}`)
        t.equal(res.json().code, code, name)
      }
      const poor = await p.agent({ fund: 500n })
      const res = await p.web.inject({
        method: 'POST',
        url: '/v1/agent/payments',
        headers: poor.auth,
        payload: { url, challenge, batch_settlement: false },
      })
      t.match(res.json(), { statusCode: 402, code: 'insufficient_balance', balance: '500', needed: '1000' })
      t.equal(await count(p.deps.db, agent.id), 0, 'nothing signed')
      t.equal(await count(p.deps.db, poor.id), 0, 'nothing signed')
    })
  },
)
