import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { hyperliquidStandIn, startJsonStandIn } from '../../test/helpers/hyperliquid-stand-in.js'
import handler from './index.js'

const VAULT = '0xdfc24b077bc1425ad1dea75bcb6f8158e10df303'
const USER = '0x' + '1'.repeat(40)
const T0 = 1_734_000_000_000
const H = 3_600_000

// the documented vaultDetails shape: aggregates as numbers, histories as [ms, "decimal"] pairs
const details = {
  name: 'Test Vault',
  vaultAddress: VAULT,
  leader: '0x677d831aef5328190852e24f13c46cac05f984e7',
  description: 'market making',
  portfolio: [
    [
      'day',
      {
        accountValueHistory: [
          [T0, '1000000.0'],
          [T0 + 12 * H, '1010000.5'],
        ],
        pnlHistory: [
          [T0, '0.0'],
          [T0 + 12 * H, '10000.5'],
        ],
        vlm: '2500000.0',
      },
    ],
    [
      'week',
      {
        accountValueHistory: [
          [T0 - 6 * 24 * H, '900000.0'],
          [T0 + 12 * H, '1010000.5'],
        ],
        pnlHistory: [
          [T0, '0.0'],
          [T0 + 12 * H, '-500.25'],
        ],
        vlm: '9000000.0',
      },
    ],
    ['perpDay', { accountValueHistory: [[T0, '1.0']], pnlHistory: [], vlm: '1.0' }],
  ],
  apr: 0.3638712925909,
  followerState: {
    user: USER,
    vaultEquity: '5000.0',
    pnl: '120.0',
    allTimePnl: '300.0',
    daysFollowing: 40,
    vaultEntryTime: T0 - 40 * 24 * H,
    lockupUntil: T0 - 39 * 24 * H,
  },
  leaderFraction: 0.1,
  leaderCommission: 0,
  followers: [
    {
      user: '0x' + '2'.repeat(40),
      vaultEquity: '20000.0',
      pnl: '10.0',
      allTimePnl: '50.0',
      daysFollowing: 3,
      vaultEntryTime: T0,
      lockupUntil: T0 + 24 * H,
    },
    {
      user: '0x' + '3'.repeat(40),
      vaultEquity: '900000.0',
      pnl: '9000.0',
      allTimePnl: '20000.0',
      daysFollowing: 100,
      vaultEntryTime: T0 - 100 * 24 * H,
      lockupUntil: T0,
    },
    {
      user: USER,
      vaultEquity: '5000.0',
      pnl: '120.0',
      allTimePnl: '300.0',
      daysFollowing: 40,
      vaultEntryTime: T0 - 40 * 24 * H,
      lockupUntil: T0,
    },
  ],
  maxDistributable: 94856.16,
  maxWithdrawable: 7425.68,
  isClosed: false,
  relationship: { type: 'normal' },
  allowDeposits: true,
  alwaysCloseOnWithdraw: false,
}

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('a vault: figures, depositors, performance', async (t) => {
  const hl = await hyperliquidStandIn(t, { vaultDetails: details })
  const out = okBody(
    await runInline(
      handler,
      { vaultAddress: VAULT.toUpperCase().replace('0X', '0x'), user: USER, topFollowers: '2' },
      { from: 'query', providers: { HYPERLIQUID_API_URL: hl.url } },
    ),
  )
  t.same(hl.requests[0]!.body, { type: 'vaultDetails', vaultAddress: VAULT, user: USER })
  t.match(out, {
    found: true,
    name: 'Test Vault',
    leader: details.leader,
    isClosed: false,
    allowDeposits: true,
    tvlUsd: 1010000.5,
    apr: 0.3638712925909,
    aprPercent: 36.3871292591,
    leaderFraction: 0.1,
    maxWithdrawableUsd: 7425.68,
    relationship: 'normal',
  })
  t.equal(out.followersListed, 3)
  t.equal(out.followersListCapped, false)
  t.same(
    out.topFollowers.map((f: any) => [f.user, f.equityUsd]),
    [
      ['0x' + '3'.repeat(40), 900000],
      ['0x' + '2'.repeat(40), 20000],
    ],
    'largest equity first, limited',
  )
  t.match(out.followerState, { user: USER, equityUsd: 5000, pnlUsd: 120, allTimePnlUsd: 300, daysFollowing: 40 })
  t.same(out.performance.day, {
    from: new Date(T0).toISOString(),
    to: new Date(T0 + 12 * H).toISOString(),
    accountValueStartUsd: 1000000,
    accountValueEndUsd: 1010000.5,
    pnlUsd: 10000.5,
    volumeUsd: 2500000,
    points: 2,
  })
  t.equal(out.performance.week.pnlUsd, -500.25)
  t.notOk('perpDay' in out.performance, 'only the day/week/month/allTime summaries')
  t.notOk('month' in out.performance, 'a period Hyperliquid did not send is absent')
})

t.test('no user: no followerState asked', async (t) => {
  const hl = await hyperliquidStandIn(t, { vaultDetails: { ...details, followerState: null } })
  const out = okBody(await runInline(handler, { vaultAddress: VAULT }, { providers: { HYPERLIQUID_API_URL: hl.url } }))
  t.same(hl.requests[0]!.body, { type: 'vaultDetails', vaultAddress: VAULT })
  t.equal(out.followerState, null)
  t.equal(out.topFollowers.length, 3)
})

t.test('not a vault: found false', async (t) => {
  const hl = await hyperliquidStandIn(t, { vaultDetails: null })
  const out = okBody(await runInline(handler, { vaultAddress: USER }, { providers: { HYPERLIQUID_API_URL: hl.url } }))
  t.match(out, { found: false, vaultAddress: USER })
})

t.test('bad input names the field', async (t) => {
  const providers = { HYPERLIQUID_API_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'vaultAddress' })
  t.match(await runInline(handler, { vaultAddress: 'vault' }, { providers }), {
    ok: false,
    status: 400,
    field: 'vaultAddress',
  })
  t.match(await runInline(handler, { vaultAddress: VAULT, user: '0x1' }, { providers }), {
    ok: false,
    status: 400,
    field: 'user',
  })
  t.match(await runInline(handler, { vaultAddress: VAULT, topFollowers: 21 }, { providers }), {
    ok: false,
    status: 400,
    field: 'topFollowers',
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, { vaultAddress: VAULT }, { providers: {} }), { code: 'upstream_not_configured' })
  const down = await startJsonStandIn(t, () => ({ status: 500, raw: 'oops' }))
  await t.rejects(runInline(handler, { vaultAddress: VAULT }, { providers: { HYPERLIQUID_API_URL: down.url } }), {
    code: 'upstream_failed',
  })
  const wrong = await hyperliquidStandIn(t, { vaultDetails: { name: 'x' } })
  await t.rejects(runInline(handler, { vaultAddress: VAULT }, { providers: { HYPERLIQUID_API_URL: wrong.url } }), {
    code: 'upstream_failed',
    message: /unexpected shape/,
  })
})

t.test('odd history points (a time as a string, a null point) read as null instead of crashing', async (t) => {
  const odd = {
    ...details,
    portfolio: [['day', { accountValueHistory: [[String(T0), '1000.0'], null], pnlHistory: [null], vlm: '5.0' }]],
  }
  const hl = await hyperliquidStandIn(t, { vaultDetails: odd })
  const out = okBody(await runInline(handler, { vaultAddress: VAULT }, { providers: { HYPERLIQUID_API_URL: hl.url } }))
  t.same(out.performance.day, {
    from: null,
    to: null,
    accountValueStartUsd: 1000,
    accountValueEndUsd: null,
    pnlUsd: null,
    volumeUsd: 5,
    points: 2,
  })
  t.equal(out.tvlUsd, null)
})

t.test('null followers and null portfolio periods are skipped, not a crash', async (t) => {
  const hl = await hyperliquidStandIn(t, {
    vaultDetails: {
      ...details,
      portfolio: [null, ['week', null], ...details.portfolio],
      followers: [null, ...details.followers],
    },
  })
  const out = okBody(await runInline(handler, { vaultAddress: VAULT }, { providers: { HYPERLIQUID_API_URL: hl.url } }))
  t.equal(out.followersListed, 3)
  t.equal(out.topFollowers[0].equityUsd, 900000)
  t.equal(out.performance.week.pnlUsd, -500.25, 'the documented week period is still read')
})
