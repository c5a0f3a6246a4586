import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { clearinghouseFixture, hyperliquidStandIn, startJsonStandIn } from '../../test/helpers/hyperliquid-stand-in.js'
import handler from './index.js'

const A = '0x' + 'a'.repeat(40)
const B = '0x' + 'b'.repeat(40)
const C = '0x' + 'c'.repeat(40)

const accounts: Record<string, unknown> = {
  [A]: clearinghouseFixture(
    [
      ['BTC', '10.0', '1000000.0', { liquidationPx: '80000.0' }],
      ['ETH', '-100.0', '400000.0'],
    ],
    '500000.0',
  ),
  [B]: clearinghouseFixture(
    [
      ['BTC', '-25.0', '2500000.0'],
      ['SOL', '50.0', '9000.0'],
    ],
    '1200000.0',
  ),
  [C]: clearinghouseFixture([], '0.0'),
}

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('all coins: ranked by notional across the given wallets', async (t) => {
  const hl = await hyperliquidStandIn(t, { clearinghouseState: (b: any) => accounts[b.user] })
  const out = okBody(
    await runInline(
      handler,
      { addresses: [A, B.toUpperCase().replace('0X', '0x'), C, A] },
      { providers: { HYPERLIQUID_API_URL: hl.url } },
    ),
  )
  t.equal(hl.requests.length, 3, 'duplicates read once')
  t.same(hl.requests.map((r) => r.body.user).sort(), [A, B, C])
  t.match(out.scope, /3 address\(es\) given/)
  t.equal(out.addressesScanned, 3)
  t.same(out.addressesFailed, [])
  t.equal(out.positionsFound, 4)
  t.same(
    out.positions.map((p: any) => [p.rank, p.address, p.coin, p.side, p.notionalUsd]),
    [
      [1, B, 'BTC', 'short', 2500000],
      [2, A, 'BTC', 'long', 1000000],
      [3, A, 'ETH', 'short', 400000],
      [4, B, 'SOL', 'long', 9000],
    ],
  )
  t.match(out.positions[1], {
    size: 10,
    liquidationPx: 80000,
    leverage: { type: 'cross', value: 10 },
    entryPx: 100,
    unrealizedPnlUsd: 12.5,
  })
  t.same(out.totals, { longNotionalUsd: 1009000, shortNotionalUsd: 2900000, netNotionalUsd: -1891000 })
  t.same(
    out.accounts.find((a: any) => a.address === B),
    { address: B, accountValueUsd: 1200000, positions: 2 },
  )
})

t.test('one coin, a notional floor and a limit', async (t) => {
  const hl = await hyperliquidStandIn(t, { clearinghouseState: (b: any) => accounts[b.user] })
  const out = okBody(
    await runInline(
      handler,
      { addresses: JSON.stringify([A, B]), coin: 'btc', minNotionalUsd: '1500000', limit: 5 },
      { from: 'query', providers: { HYPERLIQUID_API_URL: hl.url } },
    ),
  )
  t.equal(out.coin, 'btc')
  t.same(
    out.positions.map((p: any) => [p.address, p.coin, p.notionalUsd]),
    [[B, 'BTC', 2500000]],
  )
  t.same(out.totals, { longNotionalUsd: 0, shortNotionalUsd: 2500000, netNotionalUsd: -2500000 })
})

t.test('a failing address is reported, the rest answered', async (t) => {
  const hl = await startJsonStandIn(t, (r) =>
    r.body.user === B ? { status: 500, raw: 'boom' } : { json: accounts[r.body.user] },
  )
  const out = okBody(await runInline(handler, { addresses: [A, B] }, { providers: { HYPERLIQUID_API_URL: hl.url } }))
  t.equal(out.addressesScanned, 1)
  t.same(
    out.addressesFailed.map((f: any) => f.address),
    [B],
  )
  t.match(out.addressesFailed[0].reason, /HTTP 500/)
  t.equal(out.positionsFound, 2)
})

t.test('bad input names the field', async (t) => {
  const providers = { HYPERLIQUID_API_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'addresses' })
  t.match(await runInline(handler, { addresses: [] }, { providers }), { ok: false, status: 400, field: 'addresses' })
  t.match(
    await runInline(
      handler,
      { addresses: Array.from({ length: 21 }, (_, i) => '0x' + i.toString(16).padStart(40, '0')) },
      { providers },
    ),
    { ok: false, status: 400, field: 'addresses' },
  )
  t.match(await runInline(handler, { addresses: ['0x12'] }, { providers }), {
    ok: false,
    status: 400,
    field: 'addresses.0',
  })
  t.match(await runInline(handler, { addresses: [A], coin: 'BTC-PERP' }, { providers }), {
    ok: false,
    status: 400,
    field: 'coin',
  })
  t.match(await runInline(handler, { addresses: [A], minNotionalUsd: -1 }, { providers }), {
    ok: false,
    status: 400,
    field: 'minNotionalUsd',
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, { addresses: [A] }, { providers: {} }), { code: 'upstream_not_configured' })
  const down = await startJsonStandIn(t, () => ({ status: 503, raw: 'down' }))
  await t.rejects(runInline(handler, { addresses: [A, B] }, { providers: { HYPERLIQUID_API_URL: down.url } }), {
    code: 'upstream_failed',
    message: /every address/,
  })
  const wrong = await hyperliquidStandIn(t, { clearinghouseState: { positions: [] } })
  await t.rejects(runInline(handler, { addresses: [A] }, { providers: { HYPERLIQUID_API_URL: wrong.url } }), {
    code: 'upstream_failed',
  })
})
