import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

// issue 22 part 4: guessing is slowed, and nobody else's failures lock the owner out. With
// loginPerMinute 3: 3 a minute per address, 3 per 15 min per (email, address), 9 per 15 min per
// email from browsers that have not logged in to it, 3 per 15 min per (email, known browser).

const WRONG = 'not the password'

function login(app: FastifyInstance, email: string, password: string, from: string, device?: string) {
  return app.inject({
    method: 'POST',
    url: '/v1/session',
    remoteAddress: from,
    headers: device ? { cookie: `tollgate_device=${device}` } : {},
    payload: { email, password },
  })
}

/** The tollgate_device value a login answer sets. */
function deviceOf(res: { headers: Record<string, unknown> }): string {
  const all = [res.headers['set-cookie']].flat().map(String)
  const c = all.find((h) => h.startsWith('tollgate_device='))
  if (!c) throw new Error(`no device cookie in ${all.join(' | ')}`)
  return c.split(';')[0]!.slice('tollgate_device='.length)
}

t.test(
  'a stranger guessing from many addresses: untrusted clients are throttled, the owner still gets in',
  async (t) => {
    const { deps, app } = await accountsApp(t, {}, { v1: { loginPerMinute: 3 } })
    const owner = await userWithKey(deps)
    const first = await login(app, owner.email, owner.password, '10.0.0.1')
    t.equal(first.statusCode, 200, 'the owner logs in once from their browser')
    const setCookies = [first.headers['set-cookie']].flat().map(String)
    const device = setCookies.find((c) => c.startsWith('tollgate_device='))!
    t.match(
      device,
      /^tollgate_device=dev_[0-9A-Za-z]{43}; Max-Age=15552000; Path=\/v1\/session; HttpOnly; SameSite=Strict$/,
      'an httpOnly cookie only the login route gets',
    )
    let token = deviceOf(first)

    // the attack: wrong passwords from address after address (3 each: the per-address limits)
    const codes: string[] = []
    for (let a = 0; a < 4; a++) {
      for (let i = 0; i < 3; i++) codes.push((await login(app, owner.email, WRONG, `192.0.2.${a}`)).json().code)
    }
    // the owner's first login, from a browser not yet known, was the first of the 9
    t.same(
      codes,
      [...Array(8).fill('invalid_credentials'), ...Array(4).fill('login_throttled')],
      'after 9 tries on this email from unknown browsers, no more are checked',
    )
    const throttled = await login(app, owner.email, WRONG, '198.51.100.7')
    t.equal(throttled.statusCode, 429)
    t.equal(
      throttled.json().message,
      `too many login attempts for this email from browsers that have not logged in to it before; retry after ${throttled.headers['retry-after']} s, or log in from a browser that has`,
    )
    t.ok(
      Number(throttled.headers['retry-after']) > 60 && Number(throttled.headers['retry-after']) <= 900,
      'the per-email brake is the slow one (15 min)',
    )
    // guessing is slowed: even the right password from a stranger's address is not checked now
    t.equal((await login(app, owner.email, owner.password, '198.51.100.8')).json().code, 'login_throttled')

    // the owner's browser is not caught: from home, and even from an address the attacker used up
    for (const from of ['10.0.0.1', '192.0.2.0']) {
      const res = await login(app, owner.email, owner.password, from, token)
      t.equal(res.statusCode, 200, `the owner logs in from ${from} with the device cookie`)
      const next = deviceOf(res)
      t.not(next, token, 'a new device token on every login')
      token = next
    }
    // an older token is spent; a made-up one is nobody's
    t.equal(
      (await login(app, owner.email, owner.password, '10.0.0.1', deviceOf(first))).json().code,
      'login_throttled',
      'the first token no longer counts',
    )
    t.equal(
      (await login(app, owner.email, owner.password, '10.0.0.1', `dev_${'A'.repeat(43)}`)).json().code,
      'login_throttled',
      'nor a made-up one',
    )
    // the session it got works
    const again = await login(app, owner.email, owner.password, '10.0.0.1', token)
    const session = [again.headers['set-cookie']]
      .flat()
      .map(String)
      .find((c) => c.startsWith('tollgate_session='))!
      .split(';')[0]!
    t.equal(
      (await app.inject({ method: 'GET', url: '/v1/session', headers: { cookie: session } })).json().user.id,
      owner.userId,
    )
  },
)

t.test(
  "a device cookie counts only for the accounts it logged in to; a known browser's own guessing is limited",
  async (t) => {
    const { deps, app } = await accountsApp(t, {}, { v1: { loginPerMinute: 3 } })
    const victim = await userWithKey(deps)
    const attacker = await userWithKey(deps)
    const own = deviceOf(await login(app, attacker.email, attacker.password, '192.0.2.50'))
    // the attacker's browser knows the attacker's account, not the victim's: the stranger's limits apply
    const codes: string[] = []
    for (let i = 0; i < 4; i++) codes.push((await login(app, victim.email, WRONG, '192.0.2.51', own)).json().code)
    t.same(codes, ['invalid_credentials', 'invalid_credentials', 'invalid_credentials', 'rate_limited'])

    // a browser that knows the account (or a stolen device cookie): 3 per 15 min for (email, browser)
    const token = deviceOf(await login(app, victim.email, victim.password, '10.0.0.2'))
    const mine: number[] = []
    for (let i = 0; i < 3; i++) mine.push((await login(app, victim.email, WRONG, '10.0.0.2', token)).statusCode)
    const fourth = await login(app, victim.email, victim.password, '10.0.0.2', token)
    t.same([...mine, fourth.statusCode], [401, 401, 401, 429], 'guessing with a known browser is slowed too')
    t.equal(fourth.json().code, 'rate_limited')
    t.ok(Number(fourth.headers['retry-after']) > 60, 'over 15 minutes')
    t.equal(
      (await login(app, victim.email, victim.password, '10.0.0.9')).statusCode,
      200,
      "that is the browser's limit, not the account's",
    )
    // logging in to another account with that cookie renews the token but not the device: its limit on the victim holds
    const renewed = deviceOf(await login(app, attacker.email, attacker.password, '10.0.0.3', token))
    t.not(renewed, token)
    t.equal(
      (await login(app, victim.email, victim.password, '10.0.0.3', renewed)).json().code,
      'rate_limited',
      'a new token does not start a new count',
    )
  },
)

t.test(
  'one address is limited per minute, and per email over 15 minutes; it alone cannot raise the per-email brake',
  async (t) => {
    const { deps, app } = await accountsApp(t, {}, { v1: { loginPerMinute: 3 } })
    const u = await userWithKey(deps)
    const from = '203.0.113.9'
    const codes: string[] = []
    for (let i = 0; i < 4; i++) codes.push((await login(app, u.email, WRONG, from)).json().code)
    t.same(codes, ['invalid_credentials', 'invalid_credentials', 'invalid_credentials', 'rate_limited'])
    // a minute later (the per-address window ended: its counter is dropped here rather than waited for)
    t.equal(
      await deps.redis.del(deps.key('ratelimit', 'login-ip', from)),
      1,
      'the per-address counter is where the limiter keeps it',
    )
    const later = await login(app, u.email, u.password, from)
    t.equal(later.statusCode, 429, 'this address has had its 3 tries on this email for 15 minutes')
    t.equal(later.json().code, 'rate_limited')
    t.ok(Number(later.headers['retry-after']) > 60)
    t.equal(
      (await login(app, `other-${u.email}`, WRONG, from)).json().code,
      'invalid_credentials',
      'another email from the same address is still checked',
    )
    // the per-email brake has seen 3 of its 9: the owner on a new browser elsewhere still gets in
    t.equal((await login(app, u.email, u.password, '10.9.9.9')).statusCode, 200)
  },
)
