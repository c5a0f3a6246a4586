import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { standIn } from '../../test/helpers/provider-stand-in.js'
import { X_TOKEN, XDEV_POSTS, xStandIn } from '../../test/helpers/misc-x-stand-in.js'
import handler from './index.js'

t.test('against an X API stand-in', async (t) => {
  const p = await standIn(t, xStandIn)
  const providers = { X_API_URL: p.url, X_BEARER_TOKEN: X_TOKEN }
  const run = (input: unknown, from: 'query' | 'body' = 'body') => runInline(handler, input, { providers, from })

  t.test('the example: id lookup, then the timeline without replies', async (t) => {
    const out = okBody(await run(handler.example))
    t.same(out.user, { id: '2244994945', username: 'XDevelopers', name: 'Developers' })
    t.equal(out.count, 5)
    t.same(
      out.posts.map((x: any) => x.text),
      ['Post number 1', 'Post number 2', 'Post number 4', 'RT @XEng: new endpoint', 'Post number 6'],
    )
    t.same(out.posts[0], {
      id: XDEV_POSTS[0]!.id,
      text: 'Post number 1',
      createdAt: '2024-11-22T15:00:00.000Z',
      lang: 'en',
      url: `https://x.com/XDevelopers/status/${XDEV_POSTS[0]!.id}`,
      metrics: { reposts: 10, replies: 0, likes: 100, quotes: 1, bookmarks: 2, impressions: 5000 },
    })
    t.equal(out.nextToken, 'next-page-token')
    const [lookup, timeline] = p.received.slice(-2)
    t.equal(lookup!.path, '/2/users/by/username/XDevelopers')
    t.equal(timeline!.path, '/2/users/2244994945/tweets')
    t.equal(timeline!.headers.authorization, `Bearer ${X_TOKEN}`)
    t.equal(timeline!.query.get('max_results'), '5')
    t.equal(timeline!.query.get('exclude'), 'replies')
    t.equal(timeline!.query.get('tweet.fields'), 'created_at,public_metrics,lang')
  })

  t.test('replies and reposts both excluded; defaults from a query string', async (t) => {
    const out = okBody(
      await run({ username: '@XDevelopers', excludeReplies: 'true', excludeRetweets: 'true' }, 'query'),
    )
    t.same(
      out.posts.map((x: any) => x.text),
      ['Post number 1', 'Post number 2', 'Post number 4', 'Post number 6', 'Post number 7'],
    )
    t.equal(p.received.at(-1)!.query.get('exclude'), 'replies,retweets')
    t.equal(p.received.at(-1)!.query.get('max_results'), '10', 'default limit 10')
    const all = okBody(await run({ username: 'XDevelopers' }))
    t.equal(all.count, 7)
    t.equal(p.received.at(-1)!.query.get('exclude'), null)
  })

  t.test(
    'a limit under X’s minimum of 5 asks for 5 and returns the limit, with no token that would skip posts',
    async (t) => {
      const out = okBody(await run({ username: 'XDevelopers', limit: 2 }))
      t.equal(out.count, 2)
      t.equal(p.received.at(-1)!.query.get('max_results'), '5')
      t.equal(out.nextToken, null)
    },
  )

  t.test('pagination token is passed through', async (t) => {
    const out = okBody(await run({ username: 'XDevelopers', paginationToken: 'next-page-token' }))
    t.equal(out.posts[0].text, 'Post number 4')
    t.equal(p.received.at(-1)!.query.get('pagination_token'), 'next-page-token')
  })

  t.test('no posts, a protected account, unknown and suspended users', async (t) => {
    t.match(okBody(await run({ username: 'quietuser' })), { found: true, posts: [], count: 0, nextToken: null })
    t.match(okBody(await run({ username: 'lockeduser' })), { found: true, posts: [], reason: /protected/ })
    t.same(okBody(await run({ username: 'ghost_account' })), {
      found: false,
      username: 'ghost_account',
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
    t.match(await run({ username: 'bad name!' }), { ok: false, status: 400, field: 'username' })
    t.match(await run({ username: 'XDevelopers', limit: 0 }), { ok: false, status: 400, field: 'limit' })
    t.match(await run({ username: 'XDevelopers', limit: 101 }), { ok: false, status: 400, field: 'limit' })
    t.match(await run({ username: 'XDevelopers', excludeReplies: 'maybe' }), {
      ok: false,
      status: 400,
      field: 'excludeReplies',
    })
    t.match(await run({ username: 'XDevelopers', paginationToken: 'a&b=c' }), {
      ok: false,
      status: 400,
      field: 'paginationToken',
    })
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), {
    code: 'upstream_not_configured',
    message: /X_API_URL/,
  })
  const lookupOnly = await standIn(t, (req) =>
    req.path.includes('/by/username/') ? xStandIn(req) : { status: 503, json: { title: 'Service Unavailable' } },
  )
  await t.rejects(
    runInline(handler, handler.example, { providers: { X_API_URL: lookupOnly.url, X_BEARER_TOKEN: X_TOKEN } }),
    { code: 'upstream_failed', message: /503/ },
  )
  const oddTimeline = await standIn(t, (req) =>
    req.path.includes('/by/username/') ? xStandIn(req) : { json: { meta: {} } },
  )
  await t.rejects(
    runInline(handler, handler.example, { providers: { X_API_URL: oddTimeline.url, X_BEARER_TOKEN: X_TOKEN } }),
    { code: 'upstream_failed', message: /without posts/ },
  )
  // X's 400 for a pagination token it does not take (https://docs.x.com/x-api: invalid-request problem)
  const staleToken = await standIn(t, (req) =>
    req.query.get('pagination_token') === 'stale-token'
      ? {
          status: 400,
          json: {
            errors: [
              {
                parameters: { pagination_token: ['stale-token'] },
                message: 'The `pagination_token` query parameter value [stale-token] is not valid',
              },
            ],
            title: 'Invalid Request',
            detail: 'One or more parameters to your request was invalid.',
            type: 'https://api.twitter.com/2/problems/invalid-request',
          },
        }
      : req.path.includes('/tweets')
        ? {
            status: 400,
            json: {
              title: 'Invalid Request',
              detail: 'One or more parameters to your request was invalid.',
              type: 'https://api.twitter.com/2/problems/invalid-request',
            },
          }
        : xStandIn(req),
  )
  const staleProviders = { X_API_URL: staleToken.url, X_BEARER_TOKEN: X_TOKEN }
  t.match(
    await runInline(
      handler,
      { username: 'XDevelopers', paginationToken: 'stale-token' },
      { providers: staleProviders },
    ),
    { ok: false, status: 400, field: 'paginationToken' },
  )
  await t.rejects(runInline(handler, { username: 'XDevelopers' }, { providers: staleProviders }), {
    code: 'upstream_failed',
    message: /400/,
  })
  const p = await standIn(t, xStandIn)
  const err = await runInline(handler, handler.example, {
    providers: { X_API_URL: p.url, X_BEARER_TOKEN: 'wrong-bearer-1' },
  }).catch((e) => e)
  t.match(err, { code: 'upstream_failed', message: /401/ })
  t.notMatch(err.message, /wrong-bearer-1/)
})
