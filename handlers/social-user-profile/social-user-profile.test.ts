import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { standIn } from '../../test/helpers/provider-stand-in.js'
import { X_TOKEN, xStandIn } from '../../test/helpers/misc-x-stand-in.js'
import handler from './index.js'

t.test('against an X API stand-in', async (t) => {
  const p = await standIn(t, xStandIn)
  const providers = { X_API_URL: p.url, X_BEARER_TOKEN: X_TOKEN }
  const run = (input: unknown, from: 'query' | 'body' = 'body') => runInline(handler, input, { providers, from })

  t.test('the example maps the profile and its public metrics', async (t) => {
    const out = okBody(await run(handler.example))
    t.same(out, {
      found: true,
      id: '2244994945',
      username: 'XDevelopers',
      name: 'Developers',
      description: 'The voice of the X Developer Platform',
      location: 'Internet',
      url: 'https://t.co/3ZX3TNiZCY',
      profileImageUrl: 'https://pbs.twimg.com/profile_images/1683501992314798080/xl1POYLw_normal.jpg',
      createdAt: '2013-12-14T04:35:55.000Z',
      protected: false,
      verified: true,
      verifiedType: 'business',
      pinnedPostId: '1722701605825642574',
      metrics: { followers: 583423, following: 2048, posts: 14052, listed: 1672, likes: 2129 },
      profileUrl: 'https://x.com/XDevelopers',
    })
    const sent = p.received.at(-1)!
    t.equal(sent.path, '/2/users/by/username/XDevelopers')
    t.equal(sent.headers.authorization, `Bearer ${X_TOKEN}`)
    t.match(sent.query.get('user.fields'), /public_metrics/)
    t.match(sent.query.get('user.fields'), /created_at/)
  })

  t.test('an @handle or a profile URL is reduced to the username', async (t) => {
    t.equal(okBody(await run({ username: '@xdevelopers' }, 'query')).id, '2244994945')
    t.equal(p.received.at(-1)!.path, '/2/users/by/username/xdevelopers')
    t.equal(okBody(await run({ username: 'https://twitter.com/XDevelopers?lang=en' })).id, '2244994945')
  })

  t.test('missing metrics are null, not zero', async (t) => {
    const out = okBody(await run({ username: 'quietuser' }))
    t.same(out.metrics, { followers: 0, following: 0, posts: 0, listed: 0, likes: null })
    t.equal(out.description, null)
  })

  t.test('unknown and suspended users (X answers 200 with errors) are found:false', async (t) => {
    t.same(okBody(await run({ username: 'nosuchuser_123' })), {
      found: false,
      username: 'nosuchuser_123',
      reason: 'no account has this username',
    })
    t.same(okBody(await run({ username: 'suspendeduser' })), {
      found: false,
      username: 'suspendeduser',
      reason: 'the account is suspended',
    })
  })

  t.test('bad input: 400 naming the field', async (t) => {
    t.match(await run({}), { ok: false, status: 400, field: 'username' })
    t.match(await run({ username: '' }), { ok: false, status: 400, field: 'username' })
    t.match(await run({ username: 'has space' }), { ok: false, status: 400, field: 'username' })
    t.match(await run({ username: 'a_very_long_username' }), { ok: false, status: 400, field: 'username' })
    t.match(await run({ username: '../../2/tweets' }), { ok: false, status: 400, field: 'username' })
    t.match(await run({ username: 'x'.repeat(61) }), { ok: false, status: 400, field: 'username' })
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), {
    code: 'upstream_not_configured',
    message: /X_API_URL/,
  })
  const p = await standIn(t, xStandIn)
  await t.rejects(runInline(handler, handler.example, { providers: { X_API_URL: p.url } }), {
    code: 'upstream_not_configured',
    message: /X_BEARER_TOKEN/,
  })
  const err = await runInline(handler, handler.example, {
    providers: { X_API_URL: p.url, X_BEARER_TOKEN: 'bad-token-qq' },
  }).catch((e) => e)
  t.match(err, { code: 'upstream_failed', message: /401/ })
  t.notMatch(err.message, /bad-token-qq/)
  const limited = await standIn(t, () => ({
    status: 429,
    json: { title: 'Too Many Requests', detail: 'Too Many Requests', type: 'about:blank', status: 429 },
  }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { X_API_URL: limited.url, X_BEARER_TOKEN: X_TOKEN } }),
    { code: 'upstream_failed', message: /429/ },
  )
  const empty = await standIn(t, () => ({ json: {} }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { X_API_URL: empty.url, X_BEARER_TOKEN: X_TOKEN } }),
    { code: 'upstream_failed', message: /neither/ },
  )
  const garbage = await standIn(t, () => ({ text: '<html>' }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { X_API_URL: garbage.url, X_BEARER_TOKEN: X_TOKEN } }),
    { code: 'upstream_failed' },
  )
})
