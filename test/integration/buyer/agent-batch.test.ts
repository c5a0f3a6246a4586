/**
 * Agent wallets pay `batch-settlement` (issue #34 item 8) through POST /v1/agent/payments and
 * wrapFetch on the platform's hosted endpoints: one deposit from the agent wallet, then a
 * cumulative voucher per call on the same channel; the caps count each call's price and refuse the
 * call that would pass them; the deposit is bounded by the owner's `spend_caps.channel_deposit`
 * (default 100 x the price), shown in the preview; a caller cannot make the platform sign a
 * deposit or voucher for another receiver, price, receiverAuthorizer, withdrawal delay or token;
 * and a cooperative refund of the channel (agent key, or the owner's API key) comes back to the
 * agent wallet, the caps letting go of the vouchers nothing can claim any more once it landed.
 */
import t from 'tap'
import { sql } from 'kysely'
import { erc20Abi, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { PaymentRefusedError, wrapFetch } from '../../../src/client.js'
import { BATCH_SETTLEMENT_ADDRESS } from '../../../src/chain/batch-settlement/addresses.js'
import { createAgents } from '../../../src/services/accounts/agents.js'
import { createApiKeys } from '../../../src/services/accounts/api-keys.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { MASTER_KEY, startBuyerPlatform } from '../../helpers/buyer.js'
import { decodeRequired } from '../../helpers/pay.js'

const p = await startBuyerPlatform(t)
const { deps, devnet } = p
const db = deps.db
const url = `${p.proxyUrl}/tollgate/toolbox/echo?msg=hi`
const challenge = (await fetch(url)).headers.get('payment-required')!
const offer = decodeRequired(challenge).accepts.find((a) => a.scheme === 'batch-settlement')
if (!offer) throw new Error('the hosted endpoint offers no batch-settlement')

const balance = (a: Address) =>
  deps.chain.readContract({ address: devnet.usdcAddress, abi: erc20Abi, functionName: 'balanceOf', args: [a] })
const payApi = (key: string, body: Record<string, unknown>) =>
  fetch(`${p.webUrl}/v1/agent/payments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
const spentOf = async (key: string) =>
  (
    (await (await fetch(`${p.webUrl}/v1/agent/`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
      spent: { daily: string }
    }
  ).spent.daily

t.test('20 calls on one channel, the cap refusing the call that would pass it', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n, caps: { daily: '20500' } })
  const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, batchSettlement: true })

  // the preview shows the deposit before it happens: 100 x the price by default
  const preview = await (await payApi(agent.key, { url, challenge, batch_settlement: true, dry_run: true })).json()
  t.match(preview, { would_pay: { scheme: 'batch-settlement', amount: '1000', deposit: '100000' }, refusal: null })

  for (let i = 1; i <= 20; i++) {
    const res = await pay(url)
    if (res.status !== 200) t.fail(`call ${i}: ${res.status} ${await res.text()}`)
    if (i === 1) t.match(res.payment, { scheme: 'batch-settlement', amount: '1000', deposit: '100000' })
    else if (res.payment?.scheme !== 'batch-settlement' || res.payment.deposit !== undefined)
      t.fail(`call ${i}: ${JSON.stringify(res.payment)}`)
  }
  const channels = await db.selectFrom('agent_channels').selectAll().where('agent_id', '=', agent.id).execute()
  t.equal(channels.length, 1, 'one channel')
  const ch = channels[0]!
  t.match(ch, { deposited: '100000', signed_max_claimable: '20000', payer: agent.address.toLowerCase() })
  const server = await db
    .selectFrom('batch_channels')
    .selectAll()
    .where('channel_id', '=', ch.channel_id)
    .executeTakeFirstOrThrow()
  t.match(server, { charged: '20000', balance: '100000', payer: agent.address.toLowerCase() }, 'the proxy charged 20')
  t.equal(await balance(agent.address), 900_000n, 'the wallet paid one deposit, nothing per call')
  t.equal(
    await balance(BATCH_SETTLEMENT_ADDRESS),
    100_000n + (await otherDeposits(ch.channel_id)),
    'held by the contract',
  )
  const rows = await db
    .selectFrom('agent_payments')
    .select(['scheme', 'status', 'amount', 'voucher_id', 'value_aggregate'])
    .where('agent_id', '=', agent.id)
    .orderBy('created_at')
    .execute()
  t.equal(rows.length, 20)
  t.ok(
    rows.every(
      (r, i) =>
        r.scheme === 'batch-settlement' &&
        r.amount === '1000' &&
        r.voucher_id === ch.channel_id &&
        r.value_aggregate === String((i + 1) * 1000) &&
        ['reserved', 'accepted'].includes(r.status),
    ),
    'one counted row per call, its cumulative voucher kept',
  )
  t.equal(await spentOf(agent.key), '20000', 'the caps count each call')

  // the 21st would pass the daily cap: refused, nothing signed
  const over = await pay(url).catch((e: unknown) => e)
  t.ok(over instanceof PaymentRefusedError, 'refused')
  t.match(over, { code: 'spend_cap_exceeded', details: { cap: 'daily' } })
  t.equal(
    (await db.selectFrom('agent_payments').select('id').where('agent_id', '=', agent.id).execute()).length,
    20,
    'no voucher signed for it',
  )

  // the owner and the agent see the channel
  const listed = await (
    await fetch(`${p.webUrl}/v1/agent/channels`, { headers: { authorization: `Bearer ${agent.key}` } })
  ).json()
  t.match(listed, {
    object: 'list',
    data: [
      { channel_id: ch.channel_id, balance: '100000', charged: '20000', refundable: '80000', deposited: '100000' },
    ],
  })
})

t.test('a voucher signed but never used is covered by the next, not counted twice', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const first = await (await payApi(agent.key, { url, challenge, batch_settlement: true })).json()
  t.match(first, { scheme: 'batch-settlement', deposit: '100000', channel: { max_claimable: '1000' } })
  // never sent: the next payment is the same cumulative voucher, with the deposit again (nothing arrived)
  const second = await (await payApi(agent.key, { url, challenge, batch_settlement: true })).json()
  t.match(second, { channel: { id: first.channel.id, max_claimable: '1000' } }, JSON.stringify(second))
  t.equal(await spentOf(agent.key), '1000', 'one call counted: the first voucher is covered by the second')
  const res = await fetch(url, { headers: { [second.header]: second.value } })
  t.equal(res.status, 200, await res.clone().text())
  const third = await (await payApi(agent.key, { url, challenge, batch_settlement: true })).json()
  t.match(third, { channel: { id: first.channel.id, max_claimable: '2000' } })
  t.notOk(third.deposit, 'no deposit: the channel holds it')
  t.equal(await spentOf(agent.key), '2000')
})

t.test('the deposit is bounded by the owner’s setting', async (t) => {
  // a bound below the price: nothing can be deposited, refused (and shown so in the preview)
  const tiny = await p.agent({ fund: 1_000_000n, caps: { channel_deposit: '500' } })
  const refused = await payApi(tiny.key, { url, challenge, batch_settlement: true })
  t.equal(refused.status, 403)
  t.match(await refused.json(), { code: 'spend_cap_exceeded', cap: 'channel_deposit', limit: '500' })
  const preview = await (await payApi(tiny.key, { url, challenge, batch_settlement: true, dry_run: true })).json()
  t.match(preview, { would_pay: null, refusal: { code: 'spend_cap_exceeded', cap: 'channel_deposit' } })
  t.equal(await balance(tiny.address), 1_000_000n, 'nothing left the wallet')

  // a bound of 5 calls: each deposit is 5,000, topped up when the channel runs short
  const small = await p.agent({ fund: 1_000_000n, caps: { channel_deposit: '5000' } })
  const asked = await payApi(small.key, { url, challenge, batch_settlement: true, deposit_amount: '6000' })
  t.equal(asked.status, 403, 'asking for more than the bound is refused')
  const preview2 = await (await payApi(small.key, { url, challenge, batch_settlement: true, dry_run: true })).json()
  t.match(preview2, { would_pay: { deposit: '5000' } })
  const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: small.key, batchSettlement: true })
  const deposits: string[] = []
  for (let i = 1; i <= 7; i++) {
    const res = await pay(url)
    t.equal(res.status, 200, `call ${i}`)
    if (res.payment?.deposit) deposits.push(res.payment.deposit)
  }
  t.same(deposits, ['5000', '5000'], 'deposited on the first call and on the sixth')
  t.equal(await balance(small.address), 990_000n)
  const [row] = await db.selectFrom('agent_channels').selectAll().where('agent_id', '=', small.id).execute()
  t.match(row, { deposited: '10000', signed_max_claimable: '7000' })

  // the owner changes the bound (PATCH /v1/agents/:address's service)
  const { user_id } = await db
    .selectFrom('agents')
    .select('user_id')
    .where('id', '=', small.id)
    .executeTakeFirstOrThrow()
  const agents = createAgents({ db, masterKey: () => Buffer.from(MASTER_KEY, 'hex') })
  const patched = await agents.update(user_id, small.address, { spend_caps: { channel_deposit: '20000' } })
  t.match(patched, { spend_caps: { channel_deposit: '20000' } })
  await t.rejects(
    agents.update(user_id, small.address, { spend_caps: { channel_deposit: '-1' } }),
    { code: 'invalid_parameter' },
    'a bad bound is a 400',
  )
})

t.test('a caller cannot make the platform sign for other terms', async (t) => {
  const agent = await p.agent({ fund: 1_000_000n })
  const attacker = privateKeyToAccount(generatePrivateKey()).address
  const raw = JSON.parse(Buffer.from(challenge, 'base64').toString()) as {
    accepts: Array<Record<string, unknown> & { extra: Record<string, unknown> }>
  }
  const batch = raw.accepts.find((a) => a.scheme === 'batch-settlement')!
  const tampered = (change: (r: typeof batch) => void) => {
    const r = structuredClone(batch)
    change(r)
    return Buffer.from(JSON.stringify({ ...raw, accepts: [r] })).toString('base64')
  }
  for (const [what, change, status, code] of [
    ['another receiver', (r: typeof batch) => (r.payTo = attacker), 409, 'requirement_mismatch'],
    ['another price', (r: typeof batch) => (r.amount = '1'), 409, 'requirement_mismatch'],
    [
      'another receiverAuthorizer',
      (r: typeof batch) => (r.extra.receiverAuthorizer = attacker),
      409,
      'requirement_mismatch',
    ],
    ['another withdrawal delay', (r: typeof batch) => (r.extra.withdrawDelay = 86_400), 409, 'requirement_mismatch'],
    ['another token', (r: typeof batch) => (r.asset = attacker), 422, 'unsupported_requirements'],
    ['another network', (r: typeof batch) => (r.network = 'eip155:1'), 422, 'unsupported_requirements'],
  ] as const) {
    const res = await payApi(agent.key, { url, challenge: tampered(change), batch_settlement: true })
    t.equal(res.status, status, what)
    t.match(await res.json(), { code }, what)
  }
  // a seller elsewhere offering batch-settlement: never paid by the platform (its terms cannot be checked)
  const elsewhere = 'http://127.0.0.1:9/paid'
  const foreign = Buffer.from(JSON.stringify({ ...raw, resource: { url: elsewhere }, accepts: [batch] })).toString(
    'base64',
  )
  const res = await payApi(agent.key, { url: elsewhere, challenge: foreign, batch_settlement: true })
  t.equal(res.status, 422, 'another origin')
  t.equal(
    (await db.selectFrom('agent_payments').select('id').where('agent_id', '=', agent.id).execute()).length,
    0,
    'nothing signed',
  )
  t.equal(
    (await db.selectFrom('agent_channels').select('channel_id').where('agent_id', '=', agent.id).execute()).length,
    0,
    'no channel opened',
  )
})

t.test(
  'a refund of the agent’s channel comes back to the agent wallet; the caps let go of it once it landed',
  async (t) => {
    const users = createUsers({ db })
    const apiKeys = createApiKeys({ db, deployment: 'sandbox' })
    const owner = await users.create(`ref${Date.now()}@example.com`, 'correct horse battery')
    const stranger = await users.create(`ref2${Date.now()}@example.com`, 'correct horse battery')
    const agent = await p.agent({ user: owner.id, fund: 1_000_000n })
    const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, batchSettlement: true })
    for (let i = 0; i < 3; i++) t.equal((await pay(url)).status, 200, `call ${i + 1}`)
    // a voucher signed and never sent: counted by the caps until nothing can claim it
    const unsent = await (await payApi(agent.key, { url, challenge, batch_settlement: true })).json()
    t.match(unsent, { channel: { max_claimable: '4000' } })
    t.equal(await spentOf(agent.key), '4000')
    const channelId = unsent.channel.id as string
    t.equal(await balance(agent.address), 900_000n, 'one deposit of 100000')

    const refund = (id: string, body: unknown, auth = agent.auth) =>
      fetch(`${p.webUrl}/v1/agent/channels/${id}/refund`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    t.equal((await refund(`0x${'ab'.repeat(32)}`, {})).status, 404, 'a channel the agent does not have')
    const bad = await refund(channelId, { amount: '-5' })
    t.equal(bad.status, 400)
    t.match(await bad.json(), { code: 'invalid_parameter', param: 'amount' })
    const tooMuch = await refund(channelId, { amount: '97001' })
    t.equal(tooMuch.status, 409)
    t.match(await tooMuch.json(), {
      code: 'channel_refund_refused',
      reason: 'invalid_batch_settlement_evm_refund_amount_invalid',
    })
    t.equal(await spentOf(agent.key), '4000', 'a refused refund releases nothing')

    // partial, by the agent key
    const part = await refund(channelId, { amount: '7000' })
    t.equal(part.status, 200, await part.clone().text())
    t.match(await part.json(), {
      object: 'agent_channel_refund',
      channel_id: channelId,
      refunded: '7000',
      charged: '3000',
      transaction: /^0x[0-9a-f]{64}$/,
      channel: { balance: '93000', charged: '3000', claimed: '3000', refundable: '90000' },
    })
    t.equal(await balance(agent.address), 907_000n, 'back in the agent wallet')
    t.equal(await spentOf(agent.key), '3000', 'the unsent voucher stopped counting once the refund landed')

    // the rest, by the owner's API key; a stranger's key finds no agent
    const ownerKey = { authorization: `Bearer ${(await apiKeys.create(owner.id, 'k')).secret}` }
    const strangerKey = { authorization: `Bearer ${(await apiKeys.create(stranger.id, 'k')).secret}` }
    const byOwner = (auth: Record<string, string>) =>
      fetch(`${p.webUrl}/v1/agents/${agent.address}/channels/${channelId}/refund`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: '{}',
      })
    t.equal((await byOwner(strangerKey)).status, 404)
    const rest = await byOwner(ownerKey)
    t.equal(rest.status, 200, await rest.clone().text())
    t.match(await rest.json(), { refunded: '90000', channel: { balance: '3000', refundable: '0' } })
    t.equal(await balance(agent.address), 997_000n, 'everything not charged came back')
    const again = await refund(channelId, {})
    t.equal(again.status, 409)
    t.match(await again.json(), {
      code: 'channel_refund_refused',
      reason: 'invalid_batch_settlement_evm_refund_no_balance',
    })

    // the next call tops the channel up again and is served
    const next = await pay(url)
    t.equal(next.status, 200, await next.clone().text())
    t.match(next.payment, { scheme: 'batch-settlement', deposit: '100000' })
  },
)

/** What other tests' channels deposited into the shared contract (the contract holds them all). */
async function otherDeposits(except: string): Promise<bigint> {
  const rows = await db.selectFrom('batch_channels').select(['channel_id', 'balance', 'total_claimed']).execute()
  return rows
    .filter((r) => r.channel_id !== except)
    .reduce((s, r) => s + BigInt(r.balance) - BigInt(r.total_claimed), 0n)
}

t.test(
  'two callers refunding one channel at once: one refund lands, the other is refused; caps let go once',
  async (t) => {
    const users = createUsers({ db })
    const apiKeys = createApiKeys({ db, deployment: 'sandbox' })
    const owner = await users.create(`race${Date.now()}@example.com`, 'correct horse battery')
    const agent = await p.agent({ user: owner.id, fund: 1_000_000n })
    const pay = wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, batchSettlement: true })
    for (let i = 0; i < 2; i++) t.equal((await pay(url)).status, 200, `call ${i + 1}`)
    const unsent = await (await payApi(agent.key, { url, challenge, batch_settlement: true })).json()
    const channelId = unsent.channel.id as string
    t.equal(await spentOf(agent.key), '3000', 'two calls and a voucher signed but never sent')
    const before = await balance(agent.address)

    // the agent's key and the owner's API key ask at the same moment; each asks again on a 503
    const ownerKey = { authorization: `Bearer ${(await apiKeys.create(owner.id, 'k')).secret}` }
    const refundBy = async (path: string, auth: Record<string, string>) => {
      for (;;) {
        const res = await fetch(`${p.webUrl}${path}`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: '{}',
        })
        if (res.status !== 503) return { status: res.status, body: (await res.json()) as Record<string, unknown> }
        await res.arrayBuffer()
      }
    }
    const answers = await Promise.all([
      refundBy(`/v1/agent/channels/${channelId}/refund`, agent.auth),
      refundBy(`/v1/agents/${agent.address}/channels/${channelId}/refund`, ownerKey),
    ])
    const landed = answers.filter((a) => a.status === 200)
    const refused = answers.filter((a) => a.status !== 200)
    t.equal(landed.length, 1, `exactly one refund landed: ${JSON.stringify(answers)}`)
    t.match(landed[0]?.body, { refunded: '98000', charged: '2000', channel: { refundable: '0' } })
    t.match(refused[0], {
      status: 409,
      body: { code: 'channel_refund_refused', reason: 'invalid_batch_settlement_evm_refund_no_balance' },
    })
    t.equal(await balance(agent.address), before + 98_000n, 'the unclaimed rest came back once')
    t.equal(await spentOf(agent.key), '2000', 'the caps let go of the unsent voucher once, not twice')
    const refunds = await db
      .selectFrom('batch_transactions')
      .select(['status'])
      .where('kind', '=', 'refund')
      .where(sql<boolean>`channels @> ${JSON.stringify([{ channelId }])}::jsonb`)
      .execute()
    t.same(
      refunds.map((r) => r.status),
      ['confirmed'],
      'one refund transaction for the channel',
    )
  },
)
