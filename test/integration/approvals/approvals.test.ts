import t from 'tap'
import { sql } from 'kysely'
import { userWithKey } from '../../helpers/accounts.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'

t.test('human approval: 202, decisions, a retry signed once, refusals, caps, audit', async (t) => {
  const p = await startBuyerPlatform(t)
  const owner = await userWithKey(p.deps)
  const other = await userWithKey(p.deps)
  const url = `${p.proxyUrl}/tollgate/toolbox/echo?msg=hi`
  const challenge = (await fetch(url)).headers.get('payment-required')!
  const inject = (method: 'GET' | 'POST' | 'PATCH', path: string, headers: object, payload?: object) =>
    p.web.inject({ method, url: path, headers: { ...headers, 'user-agent': 'approvals-test/1' }, payload })

  async function heldAgent(policy: object, caps?: { daily?: string }) {
    const agent = await p.agent({ user: owner.userId, fund: 1_000_000n, caps })
    const r = await inject('PATCH', `/v1/agents/${agent.address}`, owner.auth, { approval_policy: policy })
    t.equal(r.statusCode, 200, r.body)
    return agent
  }
  // transfers (opted out of the hosted endpoint's batch-settlement): each signature its own payment, counted
  // against caps and rates though never sent (a channel voucher never sent is covered by the next one)
  const pay = (agent: { auth: object }, extra: object = {}) =>
    inject('POST', '/v1/agent/payments', agent.auth, { url, challenge, batch_settlement: false, ...extra })
  const signatures = async (agentId: string) =>
    (await p.deps.db.selectFrom('agent_payments').select('id').where('agent_id', '=', agentId).execute()).length

  t.test('policy: validated, shown, and below the amount nothing waits', async (t) => {
    const agent = await p.agent({ user: owner.userId, fund: 1_000_000n })
    const bad = await inject('PATCH', `/v1/agents/${agent.address}`, owner.auth, { approval_policy: { above: '1.5' } })
    t.equal(bad.statusCode, 400, 'a decimal USDC amount is refused with a hint')
    const put = await inject('PATCH', `/v1/agents/${agent.address}`, owner.auth, {
      approval_policy: { above: '1000', new_seller_calls_per_minute: null },
    })
    t.match(put.json(), { approval_policy: { above: '1000', new_seller_calls_per_minute: null } })
    const got = await inject('GET', `/v1/agents/${agent.address}/approval-policy`, owner.auth)
    t.match(got.json(), { object: 'approval_policy', above: '1000' })
    const r = await pay(agent)
    t.equal(r.statusCode, 201, 'the price 1000 is not above 1000: signed at once')
  })

  t.test('approve: the retry signs once, a second retry answers the same signature', async (t) => {
    const agent = await heldAgent({ above: '999' })
    const held = await pay(agent)
    t.equal(held.statusCode, 202, held.body)
    const a = held.json()
    t.match(a, { object: 'approval', status: 'pending', reason: 'amount', amount: '1000', scheme: 'exact' })
    t.ok(Date.parse(a.expires_at) > Date.now() + 9 * 60_000, 'ten minutes to decide')
    t.equal(await signatures(agent.id), 0, 'nothing signed while it waits')
    t.equal((await pay(agent)).json().approval_id, a.approval_id, 'asking again answers the same approval')
    const events = await p.deps.db
      .selectFrom('webhook_events')
      .select(['type', 'data'])
      .where('type', '=', 'approval.requested')
      .execute()
    const mine = events.filter((e) => (e.data as { id?: string }).id === a.approval_id)
    t.equal(mine.length, 1, 'one approval.requested event in the outbox, however often the agent asks')
    t.match(mine[0]?.data, { decide_url: /\/v1\/approvals\/.+\/decide\?token=/ }, 'carrying the signed decision link')

    const early = await pay(agent, { approval_id: a.approval_id })
    t.match(early.json(), { code: 'approval_pending' })
    t.equal(early.statusCode, 409)

    // the agent polls; the owner sees it in the list
    t.match((await inject('GET', `/v1/agent/approvals/${a.approval_id}`, agent.auth)).json(), { status: 'pending' })
    const list = await inject('GET', '/v1/approvals?status=pending', owner.auth)
    t.ok(
      list.json().data.some((x: { id: string }) => x.id === a.approval_id),
      'listed as pending for its owner',
    )
    t.equal((await inject('GET', '/v1/approvals', other.auth)).json().data.length, 0, 'not for another user')
    t.equal(
      (await inject('POST', `/v1/approvals/${a.approval_id}/approve`, other.auth)).statusCode,
      404,
      "another user cannot decide (it is not found, as another user's agent)",
    )
    // an agent key cannot approve its own payment
    const self = await inject('POST', `/v1/approvals/${a.approval_id}/approve`, agent.auth)
    t.equal(self.statusCode, 401, self.body)
    t.match(self.json(), { code: 'wrong_key_type' })

    const ok = await inject('POST', `/v1/approvals/${a.approval_id}/approve`, owner.auth)
    t.equal(ok.statusCode, 200, ok.body)
    t.match(ok.json(), {
      status: 'approved',
      decision: { by: owner.userId, via: 'api_key', ip: '127.0.0.1', user_agent: 'approvals-test/1' },
    })
    t.match((await inject('GET', `/v1/agent/approvals/${a.approval_id}`, agent.auth)).json(), { status: 'approved' })
    const deny = await inject('POST', `/v1/approvals/${a.approval_id}/deny`, owner.auth)
    t.match(deny.json(), { code: 'approval_decided' }, 'a decision is final')

    // two retries at once: one signature
    const [r1, r2] = await Promise.all([
      pay(agent, { approval_id: a.approval_id }),
      pay(agent, { approval_id: a.approval_id }),
    ])
    t.equal(r1.statusCode, 201, r1.body)
    t.equal(r2.statusCode, 201, r2.body)
    t.equal(r1.json().value, r2.json().value, 'the same signed payment')
    const r3 = await pay(agent, { approval_id: a.approval_id })
    t.equal(r3.json().payment_id, r1.json().payment_id, 'a later retry too')
    t.equal(await signatures(agent.id), 1, 'signed exactly once')
    // and it pays through the proxy
    const paid = await fetch(url, { headers: { [r1.json().header]: r1.json().value } })
    t.equal(paid.status, 200)
    t.match((await inject('GET', `/v1/approvals/${a.approval_id}`, owner.auth)).json(), {
      status: 'used',
      agent_payment_id: r1.json().payment_id,
    })
  })

  t.test('wrong terms on the retry are refused', async (t) => {
    const agent = await heldAgent({ above: '999' })
    const a = (await pay(agent)).json()
    await inject('POST', `/v1/approvals/${a.approval_id}/approve`, owner.auth)
    const otherUrl = `${p.proxyUrl}/tollgate/toolbox/echo?msg=other`
    const otherChallenge = (await fetch(otherUrl)).headers.get('payment-required')!
    const r = await inject('POST', '/v1/agent/payments', agent.auth, {
      url: otherUrl,
      challenge: otherChallenge,
      batch_settlement: false,
      approval_id: a.approval_id,
    })
    t.equal(r.statusCode, 409, r.body)
    t.match(r.json(), { code: 'approval_mismatch', message: /url .* is not the approved/ })
    t.equal(await signatures(agent.id), 0)
    const another = await heldAgent({ above: '999' })
    const foreign = await pay(another, { approval_id: a.approval_id })
    t.equal(foreign.statusCode, 404, "another agent cannot use this agent's approval")
    t.equal((await pay(agent, { approval_id: 'nope' })).statusCode, 400)
  })

  t.test('deny and expiry refuse clearly', async (t) => {
    const agent = await heldAgent({ above: '999' })
    const a = (await pay(agent)).json()
    t.equal((await inject('POST', `/v1/approvals/${a.approval_id}/deny`, owner.auth)).statusCode, 200)
    const denied = await pay(agent, { approval_id: a.approval_id })
    t.equal(denied.statusCode, 403)
    t.match(denied.json(), { code: 'approval_denied' })

    const b = (await pay(agent)).json()
    t.not(b.approval_id, a.approval_id, 'a denied approval is not answered again: a new one is asked')
    // ten minutes pass without a decision
    await p.deps.db
      .updateTable('approvals')
      .set({ expires_at: sql`now() - interval '1 second'` })
      .where('id', '=', b.approval_id)
      .execute()
    t.match((await inject('GET', `/v1/agent/approvals/${b.approval_id}`, agent.auth)).json(), { status: 'expired' })
    const late = await inject('POST', `/v1/approvals/${b.approval_id}/approve`, owner.auth)
    t.equal(late.statusCode, 409)
    t.match(late.json(), { code: 'approval_expired' })
    const expired = await pay(agent, { approval_id: b.approval_id })
    t.equal(expired.statusCode, 409)
    t.match(expired.json(), { code: 'approval_expired', message: /did not decide in time/ })
    t.equal(await signatures(agent.id), 0)
  })

  t.test('caps still apply when the approved payment is signed', async (t) => {
    const agent = await heldAgent({ above: '999' }, { daily: '1500' })
    const a = (await pay(agent)).json()
    const b = (
      await pay(agent, { challenge: (await fetch(`${url}x`)).headers.get('payment-required')!, url: `${url}x` })
    ).json()
    await inject('POST', `/v1/approvals/${a.approval_id}/approve`, owner.auth)
    await inject('POST', `/v1/approvals/${b.approval_id}/approve`, owner.auth)
    t.equal((await pay(agent, { approval_id: a.approval_id })).statusCode, 201)
    const capped = await inject('POST', '/v1/agent/payments', agent.auth, {
      url: `${url}x`,
      challenge: (await fetch(`${url}x`)).headers.get('payment-required')!,
      batch_settlement: false,
      approval_id: b.approval_id,
    })
    t.equal(capped.statusCode, 403, capped.body)
    t.match(capped.json(), { code: 'spend_cap_exceeded', cap: 'daily' })
    t.match((await inject('GET', `/v1/approvals/${b.approval_id}`, owner.auth)).json(), { status: 'approved' })
  })

  t.test('many calls a minute to a new seller wait', async (t) => {
    const agent = await heldAgent({ new_seller_calls_per_minute: 2 })
    t.equal((await pay(agent)).statusCode, 201)
    t.equal((await pay(agent)).statusCode, 201)
    const third = await pay(agent)
    t.equal(third.statusCode, 202, third.body)
    t.match(third.json(), { reason: 'new_seller_rate' })
  })

  t.test('a held batch-settlement payment shows the deposit it would make, and the retry makes it', async (t) => {
    const agent = await heldAgent({ above: '999' })
    // the platform's own endpoint: batch-settlement by default, the first voucher with a deposit of 100 x the price
    const held = await inject('POST', '/v1/agent/payments', agent.auth, { url, challenge })
    t.equal(held.statusCode, 202, held.body)
    const a = held.json()
    t.match(a, { scheme: 'batch-settlement', amount: '1000', deposit: '100000' }, 'the agent sees the deposit too')
    const view = (await inject('GET', `/v1/approvals/${a.approval_id}`, owner.auth)).json()
    t.match(view, { scheme: 'batch-settlement', amount: '1000', deposit: '100000' }, 'the owner sees what would move')
    const link = new URL(p.deps.services.agentPayments.approvals.link(a.approval_id, new Date(a.expires_at)))
    const page = await p.web.inject({
      method: 'GET',
      url: `${link.pathname}${link.search}`,
      headers: { accept: 'text/html' },
    })
    t.match(
      page.body,
      /<dt>Deposit<\/dt><dd>0\.100000 USDC into the agent's channel/,
      'and so does the signed link page',
    )
    t.equal((await inject('POST', `/v1/approvals/${a.approval_id}/approve`, owner.auth)).statusCode, 200)
    const signed = await inject('POST', '/v1/agent/payments', agent.auth, {
      url,
      challenge,
      approval_id: a.approval_id,
    })
    t.equal(signed.statusCode, 201, signed.body)
    const payload = JSON.parse(Buffer.from(signed.json().value, 'base64').toString('utf8')).payload
    t.equal(payload.type, 'deposit', 'the retry signed the voucher with its deposit')
    t.equal(String(payload.amount ?? payload.deposit?.amount), '100000', 'of the amount shown')

    // an exact payment's approval carries no deposit
    const exact = (await pay(agent)).json()
    t.equal(exact.deposit, undefined, 'no deposit in the 202 of a transfer')
    t.equal((await inject('GET', `/v1/approvals/${exact.approval_id}`, owner.auth)).json().deposit, null)
  })

  t.test('the signed link: confirm page, decision audited as link, tampering refused', async (t) => {
    const agent = await heldAgent({ above: '999' })
    const a = (await pay(agent)).json()
    const link = new URL(p.deps.services.agentPayments.approvals.link(a.approval_id, new Date(a.expires_at)))
    const path = `${link.pathname}${link.search}`
    const html = { accept: 'text/html,application/xhtml+xml' }
    const page = await p.web.inject({ method: 'GET', url: path, headers: html })
    t.equal(page.statusCode, 200)
    t.match(page.body, /Approve this payment\?/)
    t.match(page.body, /0\.001000 USDC/)
    const tampered = path.replace(/.$/, (c) => (c === '0' ? '1' : '0'))
    const invalid = await p.web.inject({ method: 'GET', url: tampered, headers: html })
    t.equal(invalid.statusCode, 403)
    t.match(invalid.body, /Link not valid/)
    const program = await p.web.inject({ method: 'GET', url: tampered })
    t.match(program.json(), { code: 'approval_link_invalid' }, 'a program gets the error body')
    const forged = await p.web.inject({
      method: 'POST',
      url: tampered,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'decision=approve',
    })
    t.equal(forged.statusCode, 403)
    const r = await p.web.inject({
      method: 'POST',
      url: path,
      headers: { ...html, 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'phone' },
      payload: 'decision=approve',
    })
    t.equal(r.statusCode, 200, r.body)
    t.match(r.body, /Payment approved/)
    t.match((await inject('GET', `/v1/approvals/${a.approval_id}`, owner.auth)).json(), {
      status: 'approved',
      decision: { by: owner.userId, via: 'link', user_agent: 'phone' },
    })
    const again = await p.web.inject({ method: 'GET', url: path, headers: html })
    t.match(again.body, /This payment is approved/, 'the page no longer offers a decision')
  })
})
