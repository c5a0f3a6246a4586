import t from 'tap'
import { userWithKey } from '../helpers/accounts.js'
import { startBuyerPlatform } from '../helpers/buyer.js'
import { logIn, openBrowser } from './browser.js'

// Issue 38 item 2 in a browser: an agent's payment above its approval amount waits (202); the
// owner sees it on the Approvals page, approves it there, and the agent's retry is signed once;
// a second one is denied there and its retry refused. The decision is audited as the session's.
t.test('in a browser: approve and deny held agent payments', async (t) => {
  const p = await startBuyerPlatform(t)
  const owner = await userWithKey(p.deps)
  const url = `${p.proxyUrl}/tollgate/toolbox/echo?msg=hi`
  const challenge = (await fetch(url)).headers.get('payment-required')!
  const agent = await p.agent({ user: owner.userId, fund: 1_000_000n })
  const policy = await p.web.inject({
    method: 'PATCH',
    url: `/v1/agents/${agent.address}`,
    headers: owner.auth,
    payload: { approval_policy: { above: '999' } },
  })
  t.equal(policy.statusCode, 200, policy.body)
  const pay = (extra: object = {}) =>
    p.web.inject({
      method: 'POST',
      url: '/v1/agent/payments',
      headers: agent.auth,
      payload: { url, challenge, ...extra },
    })

  const held = await pay()
  t.equal(held.statusCode, 202, held.body)
  const first = held.json().approval_id as string

  const { page, pageErrors, cspViolations } = await openBrowser(t)
  await logIn(page, { base: p.webUrl, email: owner.email, password: owner.password })
  // the overview's alerts list names the waiting payment
  await page.locator('#overview-alerts').getByText('waits for your decision').waitFor()
  await page.getByRole('link', { name: 'Approvals' }).click()
  await page.getByRole('heading', { name: 'Approvals', exact: true }).waitFor()
  const row = page.locator(`#approvals-pending tr[data-approval="${first}"]`)
  t.match(await row.textContent(), /0\.001 USDC/, 'the amount in USDC')
  t.match(await row.textContent(), /above the approval amount/)
  // the platform's endpoint is paid batch-settlement by default: the first voucher carries a deposit of 100 x the price
  t.match(
    await row.textContent(),
    /\+ 0\.1 USDC deposit into the channel \(refundable\)/,
    'and the deposit it would make',
  )
  await row.getByRole('button', { name: 'Approve' }).click()
  await page.locator(`#approvals-decided tr[data-approval="${first}"]`).getByText('approved').waitFor()
  t.equal(await page.locator('#approvals-pending').getByText('Nothing waits for your decision.').count(), 1)

  const signed = await pay({ approval_id: first })
  t.equal(signed.statusCode, 201, signed.body)
  const again = await pay({ approval_id: first })
  t.equal(again.json().id, signed.json().id, 'a second retry answers the same signed payment')

  // a second held payment, denied from the page
  const second = (await pay()).json().approval_id as string
  t.not(second, first)
  await page.reload()
  await page.getByRole('heading', { name: 'Approvals', exact: true }).waitFor()
  await page.locator(`#approvals-pending tr[data-approval="${second}"]`).getByRole('button', { name: 'Deny' }).click()
  await page.locator(`#approvals-decided tr[data-approval="${second}"]`).getByText('denied').waitFor()
  const refused = await pay({ approval_id: second })
  t.equal(refused.statusCode, 403, refused.body)
  t.match(refused.json(), { code: 'approval_denied' })

  const audit = await p.deps.db
    .selectFrom('approvals')
    .select(['id', 'decided_by', 'decided_via'])
    .where('id', 'in', [first, second])
    .execute()
  for (const a of audit)
    t.match(a, { decided_by: owner.userId, decided_via: 'session' }, `${a.id} audited as the session's`)
  t.same(pageErrors, [], 'no script errors')
  t.same(cspViolations, [], 'no CSP violations')
})
