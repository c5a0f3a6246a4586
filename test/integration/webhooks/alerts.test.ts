import { randomUUID } from 'node:crypto'
import { simpleParser, type ParsedMail } from 'mailparser'
import { SMTPServer } from 'smtp-server'
import t from 'tap'
import { createLedgerWriter } from '../../../src/ledger/ledger-writer.js'
import { transition } from '../../../src/ledger/transitions.js'
import { sendPendingAlerts } from '../../../src/services/events/alert-mail.js'
import { createCapEvents } from '../../../src/services/events/cap-events.js'
import { derivePaymentEvents } from '../../../src/services/events/derive-payments.js'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'
import { paymentRow } from '../../helpers/payment-row.js'
import { until } from '../../helpers/until.js'

/** A local SMTP relay that records every message, parsed (as the email handler's tests do). */
async function smtpStandIn(t: { teardown(fn: () => unknown): void }) {
  const received: Array<{ rcptTo: string[]; mail: ParsedMail }> = []
  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, cb) {
      simpleParser(stream).then(
        (mail) => {
          received.push({ rcptTo: session.envelope.rcptTo.map((r) => r.address), mail })
          cb()
        },
        (err: Error) => cb(err),
      )
    },
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  return { received, url: `smtp://127.0.0.1:${(server.server.address() as { port: number }).port}` }
}

t.test('payment events derived from the ledger, cap alerts, alert emails', async (t) => {
  const smtp = await smtpStandIn(t)
  const { deps, app } = await accountsApp(t, {
    TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true',
    TOLLGATE_SMTP_URL: smtp.url,
    TOLLGATE_EMAIL_FROM: 'Tollgate <alerts@tollgate.test>',
    WEBHOOK_DERIVE_LAG_MS: '0',
  })
  const { db } = deps
  const seller = await userWithKey(deps)
  const buyer = await userWithKey(deps)
  // the seller's endpoint on this platform, and the buyer's agent
  const s = await db
    .insertInto('sellers')
    .values({ namespace: `ns${Date.now()}`, display_name: 'S', owner_user_id: seller.userId })
    .returning('id')
    .executeTakeFirstOrThrow()
  const sv = await db
    .insertInto('services')
    .values({ seller_id: s.id, name: 'svc', display_name: 'Svc', pay_to: '0x' + '1'.repeat(40) })
    .returning('id')
    .executeTakeFirstOrThrow()
  const ep = await db
    .insertInto('endpoints')
    .values({ service_id: sv.id, slug: 'e', methods: ['GET'], price: '1000', upstream_url: 'https://example.com/e' })
    .returning('id')
    .executeTakeFirstOrThrow()
  const agent = await deps.services.agents.create(buyer.userId, { name: 'bot', spend_caps: { daily: '1000000' } })
  const hook = (u: { auth: { authorization: string } }, events: string[]) =>
    app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: u.auth,
      payload: { url: 'http://127.0.0.1:9/h', events },
    })
  t.equal((await hook(seller, ['payment.served', 'revenue.settled', 'voucher.collected'])).statusCode, 201)
  t.equal((await hook(buyer, ['payment.settled'])).statusCode, 201)

  t.test('payment.* and revenue.settled from payment_events, once each', async (t) => {
    const writer = createLedgerWriter(db)
    const settled = paymentRow({ endpoint_id: ep.id, payer: agent.address })
    const failed = paymentRow({ endpoint_id: ep.id, payer: agent.address })
    await writer.record(settled, 'served')
    await writer.record(failed, 'served')
    await transition(db, [settled.id, failed.id], ['served'], 'settling')
    await transition(db, [settled.id], ['settling'], 'settled', { txHash: '0x' + 'a'.repeat(64), type: 'collected' })
    await transition(db, [failed.id], ['settling'], 'failed', { reason: 'expired' })
    await until('derived', async () => (await derivePaymentEvents(deps)) === 0 && (await count()) > 0)
    t.equal(await derivePaymentEvents(deps), 0, 'a second pass derives nothing again')
    const events = await db
      .selectFrom('webhook_events')
      .select(['user_id', 'type', 'data'])
      .where('type', 'like', '%.%')
      .where('type', 'not like', 'agent.%')
      .orderBy('type')
      .execute()
    const got = events.map((e) => `${e.user_id === seller.userId ? 'seller' : 'buyer'} ${e.type}`).sort()
    t.same(got, [
      'buyer payment.failed', // an alert: emitted without a subscription
      'buyer payment.settled',
      'seller payment.failed',
      'seller payment.served',
      'seller payment.served',
      'seller revenue.settled',
      'seller voucher.collected', // the settlement was a voucher collection
    ])
    const rev = events.find((e) => e.type === 'revenue.settled')!.data as Record<string, unknown>
    t.match(rev, { payment_id: settled.id, amount: '1000', role: 'seller', tx_hash: '0x' + 'a'.repeat(64) })
    const deliveries = await db.selectFrom('webhook_deliveries').select('event_id').execute()
    t.equal(deliveries.length, 5, 'deliveries only for subscribed types (not the failed ones)')
  })
  const count = async () => (await db.selectFrom('webhook_events').select('id').execute()).length

  t.test('cap_near at 80 % and cap_reached, each once per window', async (t) => {
    const caps = createCapEvents(db, (err) => t.error(err))
    const row = {
      id: randomUUID(),
      user_id: buyer.userId,
      address: agent.address,
      cap_daily: '1000000',
      cap_monthly: null,
    }
    const w = { day: '2026-11-28', month: '2026-11' }
    const ok = (day: bigint) => ({ kind: 'ok', day, month: day, unsettled: 0n }) as const
    caps.observe(row, w, 100_000n, ok(700_000n)) // 60 → 70 %: nothing
    caps.observe(row, w, 150_000n, ok(850_000n)) // 70 → 85 %: the 80 % alert
    caps.observe(row, w, 50_000n, ok(900_000n)) // past 80 already: nothing more
    caps.observe(row, w, 200_000n, { kind: 'over', cap: 'daily', day: 900_000n, month: 900_000n, unsettled: 0n })
    caps.observe(row, w, 200_000n, { kind: 'over', cap: 'daily', day: 900_000n, month: 900_000n, unsettled: 0n })
    const agentEvents = () =>
      db
        .selectFrom('webhook_events')
        .select(['type', 'data'])
        .where('type', 'like', 'agent.%')
        .orderBy('type')
        .execute()
    const got = await until('the cap events', async () => {
      const e = await agentEvents()
      return e.length >= 2 && e
    })
    t.same(
      got.map((e) => [e.type, (e.data as { percent?: number }).percent]),
      [
        ['agent.cap_near', 80],
        ['agent.cap_reached', undefined],
      ],
    )
  })

  t.test('alerts are emailed once and listed', async (t) => {
    await until('every alert sent', async () => (await sendPendingAlerts(deps)) === 0 && smtp.received.length >= 3)
    const to = smtp.received.map((m) => `${m.rcptTo.join(',')} ${m.mail.subject}`).sort()
    t.same(to.filter((x) => x.startsWith(buyer.email)).length, 3, 'payment.failed, cap_near, cap_reached to the buyer')
    t.ok(to.some((x) => x.startsWith(seller.email) && /failed to settle/.test(x)))
    t.ok(to.some((x) => /spent 80% of its daily cap/.test(x)))
    t.equal(smtp.received[0]!.mail.from?.value[0]?.address, 'alerts@tollgate.test')
    t.equal(await sendPendingAlerts(deps), 0, 'nothing sent twice')
    const listed = await app.inject({ method: 'GET', url: '/v1/alerts', headers: buyer.auth })
    t.same((listed.json().data as Array<{ type: string; emailed: boolean }>).map((a) => [a.type, a.emailed]).sort(), [
      ['agent.cap_near', true],
      ['agent.cap_reached', true],
      ['payment.failed', true],
    ])
  })
})
