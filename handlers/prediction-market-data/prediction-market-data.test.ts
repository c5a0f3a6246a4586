import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { btcEvent, fedEvent, openMarket, resolvedMarket } from '../../test/helpers/market-polymarket-data.js'
import { marketStandIn, type RecordedRequest } from '../../test/helpers/market-stand-in.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import handler from './index.js'

function route(req: RecordedRequest) {
  // the lists apply their documented status default (closed=false) to a slug filter as well
  const closed = (req.query.get('closed') ?? 'false') === 'true'
  if (req.path === '/events') {
    const slug = req.query.get('slug')
    if (slug) return { body: [btcEvent, fedEvent].filter((e) => e.slug === slug && e.closed === closed) }
    return { body: [btcEvent] }
  }
  if (req.path === '/markets') return { body: req.query.get('slug') === openMarket.slug && !closed ? [openMarket] : [] }
  if (req.path.startsWith('/events/slug/')) {
    const e = [btcEvent, fedEvent].find((x) => x.slug === req.path.slice('/events/slug/'.length))
    return e ? { body: e } : { status: 404, body: { type: 'not found error', error: 'not found' } }
  }
  if (req.path.startsWith('/markets/slug/')) {
    const m = [openMarket, resolvedMarket].find((x) => x.slug === req.path.slice('/markets/slug/'.length))
    return m ? { body: m } : { status: 404, body: { type: 'not found error', error: 'not found' } }
  }
  if (req.path === '/public-search')
    return { body: { events: [btcEvent, fedEvent], tags: [], profiles: [], pagination: { hasMore: false } } }
  return undefined
}

t.test('events with markets, outcome prices parsed', async (t) => {
  t.equal(
    compileInputValidator(handler).validate(structuredClone(handler.example), 'body'),
    null,
    'the example is valid',
  )
  const api = await marketStandIn(t, route)
  const out = okBody(await runInline(handler, handler.example, { providers: { POLYMARKET_GAMMA_URL: api.url } }))
  const req = api.last()
  t.equal(req.path, '/events')
  t.equal(req.query.get('tag_slug'), 'crypto')
  t.equal(req.query.get('limit'), '5')
  t.equal(req.query.get('active'), 'true')
  t.equal(req.query.get('closed'), 'false')
  t.equal(req.query.get('order'), 'volume24hr')
  t.equal(req.query.get('ascending'), 'false')

  t.equal(out.events.length, 1)
  const e = out.events[0]
  t.match(e, {
    id: '16167',
    slug: 'what-price-will-bitcoin-hit-in-2026',
    title: 'What price will Bitcoin hit in 2026?',
    url: 'https://polymarket.com/event/what-price-will-bitcoin-hit-in-2026',
    volume: 1340000.25,
    volume24hr: 41000,
    liquidity: 104001,
    tags: ['Crypto', 'Bitcoin'],
    marketCount: 2,
    active: true,
    closed: false,
  })
  t.equal(e.description.length, 501, 'the description is cut to 500 characters and an ellipsis')
  t.equal(e.markets[0].id, '516710', 'markets by volume, highest first')
  t.same(e.markets[0], {
    id: '516710',
    slug: 'will-bitcoin-reach-150k-by-december-31',
    question: 'Will Bitcoin reach $150,000 by December 31?',
    conditionId: '0xabc123',
    outcomes: [
      { name: 'Yes', price: 0.235 },
      { name: 'No', price: 0.765 },
    ],
    volume: 1250000.25,
    volume24hr: 35000.1,
    liquidity: 52000.5,
    lastTradePrice: 0.24,
    bestBid: 0.23,
    bestAsk: 0.24,
    startDate: '2026-01-05T18:00:00Z',
    endDate: '2026-12-31T12:00:00Z',
    active: true,
    closed: false,
  })
  const capped = okBody(
    await runInline(handler, { maxMarketsPerEvent: 1 }, { providers: { POLYMARKET_GAMMA_URL: api.url } }),
  )
  t.equal(capped.events[0].markets.length, 1)
  t.equal(capped.events[0].marketCount, 2)
  t.equal(api.last().query.has('tag_slug'), false)
})

t.test('slug: an event, else a market, else nothing', async (t) => {
  const api = await marketStandIn(t, route)
  const providers = { POLYMARKET_GAMMA_URL: api.url }
  const ev = okBody(await runInline(handler, { slug: 'fed-decision-in-september' }, { from: 'query', providers }))
  t.equal(ev.events[0].title, 'Fed decision in September?', 'a closed event is found by its slug')
  t.equal(
    api.last().path,
    '/events/slug/fed-decision-in-september',
    'by slug, not the list (whose status defaults would hide it)',
  )
  t.equal(api.last().query.has('closed'), false, 'status filters are not applied to slugs')
  const mk = okBody(await runInline(handler, { slug: openMarket.slug }, { providers }))
  t.same(mk.events, [])
  t.equal(mk.markets[0].question, 'Will Bitcoin reach $150,000 by December 31?')
  t.equal(api.last().path, `/markets/slug/${openMarket.slug}`)
  const resolved = okBody(await runInline(handler, { slug: resolvedMarket.slug }, { providers }))
  t.match(
    resolved.markets,
    [
      {
        id: '253591',
        closed: true,
        outcomes: [
          { name: 'Yes', price: 1 },
          { name: 'No', price: 0 },
        ],
      },
    ],
    'a closed market is found by its slug',
  )
  const none = okBody(await runInline(handler, { slug: 'no-such-thing' }, { providers }))
  t.match(none, { events: [], markets: [], note: /no event or market/ })
})

t.test('search keeps open events by default', async (t) => {
  const api = await marketStandIn(t, route)
  const providers = { POLYMARKET_GAMMA_URL: api.url }
  const open = okBody(await runInline(handler, { search: 'bitcoin' }, { providers }))
  t.equal(api.last().path, '/public-search')
  t.equal(api.last().query.get('q'), 'bitcoin')
  t.same(
    open.events.map((e: any) => e.id),
    ['16167'],
  )
  const closed = okBody(await runInline(handler, { search: 'fed', closed: true }, { providers }))
  t.same(
    closed.events.map((e: any) => e.id),
    ['2001'],
  )
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = { POLYMARKET_GAMMA_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, { search: 'btc', tag: 'crypto' }, { providers }), {
    ok: false,
    status: 400,
    field: 'tag',
  })
  t.match(await runInline(handler, { slug: 'Bad Slug' }, { providers }), { ok: false, status: 400, field: 'slug' })
  t.match(await runInline(handler, { search: 'x' }, { providers }), { ok: false, status: 400, field: 'search' })
  t.match(await runInline(handler, { limit: 51 }, { providers }), { ok: false, status: 400, field: 'limit' })
  t.match(await runInline(handler, { order: 'random' }, { providers }), { ok: false, status: 400, field: 'order' })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), { code: 'upstream_not_configured' })
  const api = await marketStandIn(t, () => ({ status: 500, body: { error: 'x' } }))
  const providers = { POLYMARKET_GAMMA_URL: api.url }
  await t.rejects(runInline(handler, handler.example, { providers }), { code: 'upstream_failed' })
  api.route(() => ({ body: { not: 'a list' } }))
  await t.rejects(runInline(handler, handler.example, { providers }), {
    code: 'upstream_failed',
    message: /not a list/,
  })
  api.route(() => ({ body: 'html' }))
  await t.rejects(runInline(handler, { search: 'btc' }, { providers }), { code: 'upstream_failed' })
})

// /public-search documents events_status and keep_closed_markets
// (https://docs.polymarket.com/api-reference/search/search-markets-events-and-profiles): without
// events_status the search mixes closed events in; without keep_closed_markets closed markets are dropped
t.test('search asks Polymarket for the status it wants and keeps closed markets of closed events', async (t) => {
  const searchRoute = (req: RecordedRequest) => {
    if (req.path !== '/public-search') return undefined
    const status = req.query.get('events_status')
    const keepClosed = Number(req.query.get('keep_closed_markets') ?? 0) > 0
    // two closed events ahead of the open one, as a search ranked by relevance may give them
    const all = [{ ...fedEvent, id: '2002' }, fedEvent, btcEvent].filter((e) => status !== 'active' || !e.closed)
    const limited = all.slice(0, Number(req.query.get('limit_per_type') ?? 10))
    return {
      body: {
        events: limited.map((e) => ({ ...e, markets: e.markets.filter((m) => keepClosed || !m.closed) })),
        tags: [],
        profiles: [],
        pagination: { hasMore: false },
      },
    }
  }
  const api = await marketStandIn(t, searchRoute)
  const providers = { POLYMARKET_GAMMA_URL: api.url }
  const open = okBody(await runInline(handler, { search: 'markets', limit: 1 }, { providers }))
  t.equal(api.last().query.get('events_status'), 'active')
  t.same(
    open.events.map((e: any) => e.id),
    ['16167'],
    'the open event is found though closed ones rank first',
  )
  const closed = okBody(await runInline(handler, { search: 'fed', closed: true }, { providers }))
  t.equal(api.last().query.get('keep_closed_markets'), '1')
  t.equal(api.last().query.has('events_status'), false)
  const fed = closed.events.find((e: any) => e.id === '2001')
  t.ok(fed.marketCount > 0, 'the closed event keeps its closed markets')
  t.equal(fed.marketCount, fedEvent.markets.length)
})
