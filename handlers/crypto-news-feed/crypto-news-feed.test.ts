import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { marketStandIn } from '../../test/helpers/market-stand-in.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import handler from './index.js'

// the documented shape of https://cryptopanic.com/developers/api/ (v2 posts)
const posts = {
  next: 'https://cryptopanic.com/api/developer/v2/posts/?page=2',
  previous: null,
  results: [
    {
      id: 21712345,
      slug: 'Bitcoin-ETFs-see-record-inflows',
      title: 'Bitcoin ETFs see record inflows',
      description: 'Spot bitcoin ETFs took in $1.2B on Monday.',
      published_at: '2026-11-23T12:30:00Z',
      created_at: '2026-11-23T12:31:02Z',
      kind: 'news',
      source: { title: 'CoinDesk', region: 'en', domain: 'coindesk.com', type: 'feed' },
      url: 'https://cryptopanic.com/news/21712345/Bitcoin-ETFs-see-record-inflows',
      original_url: 'https://www.coindesk.com/markets/2026/11/23/bitcoin-etfs',
      instruments: [
        { code: 'BTC', title: 'Bitcoin', slug: 'bitcoin', url: 'https://cryptopanic.com/news/bitcoin/' },
        { code: 'IBIT', title: 'iShares Bitcoin Trust', slug: 'ibit' },
      ],
      votes: {
        negative: 1,
        positive: 14,
        important: 6,
        liked: 3,
        disliked: 0,
        lol: 0,
        toxic: 0,
        saved: 2,
        comments: 1,
      },
      panic_score: 71,
    },
    {
      id: 21712300,
      title: 'Ethereum developers set upgrade date',
      published_at: '2026-11-23T11:00:00Z',
      kind: 'news',
      source: { title: 'The Block', domain: 'theblock.co' },
      currencies: [{ code: 'ETH', title: 'Ethereum', slug: 'ethereum' }],
    },
    { id: 21712299, title: 'Third', published_at: '2026-11-23T10:00:00Z', kind: 'media' },
  ],
}

t.test('posts map title, link, source, time, coins and votes', async (t) => {
  t.equal(
    compileInputValidator(handler).validate(structuredClone(handler.example), 'body'),
    null,
    'the example is valid',
  )
  const api = await marketStandIn(t, (req) => (req.path === '/api/developer/v2/posts/' ? { body: posts } : undefined))
  const out = okBody(
    await runInline(
      handler,
      { currencies: ['btc', 'ETH'], filter: 'hot', kind: 'news', regions: ['en', 'de'] },
      { providers: { CRYPTOPANIC_API_URL: api.url, CRYPTOPANIC_API_KEY: 'cp-token' } },
    ),
  )
  t.equal(out.count, 3)
  t.same(out.posts[0], {
    id: 21712345,
    title: 'Bitcoin ETFs see record inflows',
    description: 'Spot bitcoin ETFs took in $1.2B on Monday.',
    kind: 'news',
    url: 'https://cryptopanic.com/news/21712345/Bitcoin-ETFs-see-record-inflows',
    originalUrl: 'https://www.coindesk.com/markets/2026/11/23/bitcoin-etfs',
    source: { title: 'CoinDesk', domain: 'coindesk.com', region: 'en' },
    publishedAt: '2026-11-23T12:30:00Z',
    currencies: ['BTC', 'IBIT'],
    votes: { positive: 14, negative: 1, important: 6, liked: 3, disliked: 0, lol: 0, toxic: 0, saved: 2, comments: 1 },
    panicScore: 71,
  })
  t.same(out.posts[1].currencies, ['ETH'], 'the v1 currencies field is read too')
  t.match(
    out.posts[1],
    { url: null, originalUrl: null, votes: null, panicScore: null, source: { title: 'The Block', region: null } },
    'missing fields are null',
  )

  const q = api.last().query
  t.equal(api.last().path, '/api/developer/v2/posts/')
  t.equal(q.get('auth_token'), 'cp-token')
  t.equal(q.get('public'), 'true')
  t.equal(q.get('currencies'), 'BTC,ETH')
  t.equal(q.get('filter'), 'hot')
  t.equal(q.get('kind'), 'news')
  t.equal(q.get('regions'), 'en,de')
})

t.test('defaults, limit and GET input', async (t) => {
  const api = await marketStandIn(t, () => ({ body: posts }))
  const out = okBody(
    await runInline(
      handler,
      { limit: '2', currencies: 'SOL' },
      { from: 'query', providers: { CRYPTOPANIC_API_URL: api.url, CRYPTOPANIC_API_KEY: 'k' } },
    ),
  )
  t.equal(out.count, 2)
  const q = api.last().query
  t.equal(q.get('currencies'), 'SOL')
  t.equal(q.has('kind'), false, 'kind all sends no kind')
  t.equal(q.has('filter'), false)
  api.route(() => ({ body: { next: null, previous: null, results: [] } }))
  t.match(
    okBody(await runInline(handler, {}, { providers: { CRYPTOPANIC_API_URL: api.url, CRYPTOPANIC_API_KEY: 'k' } })),
    { count: 0, posts: [] },
  )
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = { CRYPTOPANIC_API_URL: 'http://127.0.0.1:1', CRYPTOPANIC_API_KEY: 'k' }
  t.match(await runInline(handler, { currencies: ['BTC-USD'] }, { providers }), {
    ok: false,
    status: 400,
    field: 'currencies.0',
  })
  t.match(await runInline(handler, { currencies: Array.from({ length: 21 }, (_, i) => `C${i}`) }, { providers }), {
    ok: false,
    status: 400,
    field: 'currencies',
  })
  t.match(await runInline(handler, { filter: 'moon' }, { providers }), { ok: false, status: 400, field: 'filter' })
  t.match(await runInline(handler, { kind: 'blog' }, { providers }), { ok: false, status: 400, field: 'kind' })
  t.match(await runInline(handler, { regions: ['xx'] }, { providers }), { ok: false, status: 400, field: 'regions.0' })
  t.match(await runInline(handler, { limit: 0 }, { providers }), { ok: false, status: 400, field: 'limit' })
})

t.test('provider problems, the token kept out of messages', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), { code: 'upstream_not_configured' })
  const api = await marketStandIn(t, () => ({ status: 403, body: { status: 'Incomplete', info: 'Token not found' } }))
  await t.rejects(runInline(handler, handler.example, { providers: { CRYPTOPANIC_API_URL: api.url } }), {
    code: 'upstream_not_configured',
    message: /CRYPTOPANIC_API_KEY/,
  })
  const err = await runInline(handler, handler.example, {
    providers: { CRYPTOPANIC_API_URL: api.url, CRYPTOPANIC_API_KEY: 'secret-token-77' },
  }).catch((e: Error) => e)
  t.match(err, { code: 'upstream_failed' })
  t.notMatch((err as Error).message, /secret-token-77/)
  api.route(() => ({ body: '<html>' }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { CRYPTOPANIC_API_URL: api.url, CRYPTOPANIC_API_KEY: 'k' } }),
    { code: 'upstream_failed' },
  )
  api.route(() => ({ body: { status: 'ok' } }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { CRYPTOPANIC_API_URL: api.url, CRYPTOPANIC_API_KEY: 'k' } }),
    { code: 'upstream_failed', message: /results list/ },
  )
})

// The v2 path names the account's plan, /api/{developer|growth|enterprise}/v2/posts/
// (tigusigalpa/cryptopanic-php src/CryptoPanicClient.php buildUrl; https://cryptopanic.com/developers/api/)
t.test('the plan named in CRYPTOPANIC_API_URL is the one asked', async (t) => {
  const api = await marketStandIn(t, (req) =>
    req.path === '/api/growth/v2/posts/' ? { body: posts } : { status: 404, body: { detail: 'Not found.' } },
  )
  for (const base of [`${api.url}/api/growth/v2`, `${api.url}/api/growth/v2/`]) {
    const out = okBody(
      await runInline(
        handler,
        { limit: 1 },
        { providers: { CRYPTOPANIC_API_URL: base, CRYPTOPANIC_API_KEY: 'growth-token' } },
      ),
    )
    t.equal(out.count, 1)
    t.equal(api.last().path, '/api/growth/v2/posts/')
    t.equal(api.last().query.get('auth_token'), 'growth-token')
  }
  await t.rejects(
    runInline(handler, {}, { providers: { CRYPTOPANIC_API_URL: api.url, CRYPTOPANIC_API_KEY: 'k' } }),
    { code: 'upstream_failed' },
    'a bare host still asks the developer path',
  )
  t.equal(api.last().path, '/api/developer/v2/posts/')
})
