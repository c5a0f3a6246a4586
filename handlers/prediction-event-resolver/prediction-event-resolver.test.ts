import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import {
  awaitingMarket,
  btcEvent,
  fedEvent,
  openMarket,
  resolvedMarket,
} from '../../test/helpers/market-polymarket-data.js'
import { marketStandIn, type RecordedRequest } from '../../test/helpers/market-stand-in.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import handler, { resolveMarket } from './index.js'

const doneEvent = {
  ...fedEvent,
  id: '2002',
  slug: 'fed-all-done',
  markets: [resolvedMarket, { ...awaitingMarket, outcomePrices: '["0", "1"]', umaResolutionStatus: 'resolved' }],
}
const events = [btcEvent, fedEvent, doneEvent]
const markets = [openMarket, resolvedMarket, awaitingMarket]

/** Gamma's lists apply their documented status default (closed=false) to a `slug` filter as to any other. */
const statusOf = (req: RecordedRequest) => (req.query.get('closed') ?? 'false') === 'true'
function route(req: RecordedRequest) {
  if (req.path === '/events')
    return { body: events.filter((e) => e.slug === req.query.get('slug') && e.closed === statusOf(req)) }
  if (req.path === '/markets')
    return { body: markets.filter((m) => m.slug === req.query.get('slug') && m.closed === statusOf(req)) }
  const evSlug = /^\/events\/slug\/([^/]+)$/.exec(req.path)
  if (evSlug) {
    const e = events.find((x) => x.slug === evSlug[1])
    return e ? { body: e } : { status: 404, body: { type: 'not found error', error: 'not found' } }
  }
  const mkSlug = /^\/markets\/slug\/([^/]+)$/.exec(req.path)
  if (mkSlug) {
    const m = markets.find((x) => x.slug === mkSlug[1])
    return m ? { body: m } : { status: 404, body: { type: 'not found error', error: 'not found' } }
  }
  const ev = /^\/events\/(\d+)$/.exec(req.path)
  if (ev) {
    const e = events.find((x) => x.id === ev[1])
    return e ? { body: e } : { status: 404, body: { type: 'not found error', error: 'id not found' } }
  }
  const mk = /^\/markets\/(\d+)$/.exec(req.path)
  if (mk) {
    const m = markets.find((x) => x.id === mk[1])
    return m ? { body: m } : { status: 404, body: { type: 'not found error', error: 'id not found' } }
  }
  return undefined
}

t.test('an event with one resolved and one pending market', async (t) => {
  t.equal(
    compileInputValidator(handler).validate(structuredClone(handler.example), 'body'),
    null,
    'the example is valid',
  )
  const api = await marketStandIn(t, route)
  const out = okBody(await runInline(handler, handler.example, { providers: { POLYMARKET_GAMMA_URL: api.url } }))
  t.equal(
    api.last().path,
    '/events/slug/fed-decision-in-september',
    'by slug, whatever its status (the event is closed)',
  )
  t.match(out, { found: true, kind: 'event', marketCount: 2 })
  t.match(out.event, {
    id: '2001',
    title: 'Fed decision in September?',
    status: 'partially-resolved',
    resolved: false,
    resolutionSource: 'https://www.federalreserve.gov',
    closed: true,
    url: 'https://polymarket.com/event/fed-decision-in-september',
  })
  t.same(out.event.winningMarkets, ['Will the Fed cut rates in September?'])
  t.same(out.markets[0], {
    id: '253591',
    slug: 'fed-cut-in-september',
    question: 'Will the Fed cut rates in September?',
    conditionId: '0xfed',
    status: 'resolved',
    resolved: true,
    winningOutcome: 'Yes',
    outcomes: [
      { name: 'Yes', price: 1 },
      { name: 'No', price: 0 },
    ],
    umaResolutionStatus: 'resolved',
    basis: 'UMA resolution status "resolved" and final outcome prices 1/0',
    resolutionSource: 'https://www.federalreserve.gov',
    endDate: '2025-09-17T00:00:00Z',
    closedTime: '2025-09-17 18:30:00+00',
  })
  t.match(
    out.markets[1],
    {
      status: 'closed-awaiting-resolution',
      resolved: false,
      winningOutcome: null,
      umaResolutionStatus: 'proposed',
      basis: 'closed; UMA resolution status "proposed"',
    },
    'a 99.95% price is not a resolution',
  )
})

t.test('a fully resolved event, an open market, look-ups by id', async (t) => {
  const api = await marketStandIn(t, route)
  const providers = { POLYMARKET_GAMMA_URL: api.url }
  const done = okBody(await runInline(handler, { eventId: '2002' }, { from: 'query', providers }))
  t.equal(api.last().path, '/events/2002')
  t.match(done.event, { status: 'resolved', resolved: true })
  t.equal(done.markets[1].winningOutcome, 'No')
  const open = okBody(await runInline(handler, { slug: openMarket.slug }, { providers }))
  t.match(open, {
    kind: 'market',
    markets: [{ status: 'open', resolved: false, winningOutcome: null, basis: 'the market is not closed' }],
  })
  t.equal(api.last().path, `/markets/slug/${openMarket.slug}`, 'no event had the slug, so the market slug was tried')
  // a resolved market is closed: the list's ?slug= filter (closed=false by default) would not find it
  const resolvedBySlug = okBody(await runInline(handler, { slug: resolvedMarket.slug }, { providers }))
  t.match(resolvedBySlug, {
    found: true,
    kind: 'market',
    markets: [{ id: '253591', status: 'resolved', winningOutcome: 'Yes' }],
  })
  const byId = okBody(await runInline(handler, { marketId: '253591' }, { providers }))
  t.match(byId.markets[0], { winningOutcome: 'Yes' })
  t.equal(api.last().path, '/markets/253591')
  const openEvent = okBody(await runInline(handler, { slug: btcEvent.slug }, { providers }))
  t.match(openEvent.event, { status: 'open', resolved: false, winningMarkets: [] })
})

t.test('not found', async (t) => {
  const api = await marketStandIn(t, route)
  const providers = { POLYMARKET_GAMMA_URL: api.url }
  t.match(okBody(await runInline(handler, { slug: 'nothing-here' }, { providers })), { found: false, markets: [] })
  t.match(okBody(await runInline(handler, { eventId: '999' }, { providers })), { found: false })
  t.match(okBody(await runInline(handler, { marketId: '999' }, { providers })), { found: false })
})

t.test('resolution rules', async (t) => {
  t.match(
    resolveMarket({
      closed: true,
      outcomes: '["Yes","No"]',
      outcomePrices: '["0.5","0.5"]',
      umaResolutionStatus: 'resolved',
    }),
    { status: 'resolved', winningOutcome: null, basis: /split/ },
  )
  t.match(resolveMarket({ closed: true, outcomes: '["Up","Down"]', outcomePrices: '["0","1"]' }), {
    status: 'resolved',
    winningOutcome: 'Down',
    basis: 'final outcome prices 1/0',
  })
  t.match(resolveMarket({ closed: true, outcomes: '["Yes","No"]', outcomePrices: '["1","1"]' }), {
    status: 'closed-awaiting-resolution',
    winningOutcome: null,
  })
  t.match(resolveMarket({ closed: true, outcomes: '["Yes","No"]', umaResolutionStatus: 'disputed' }), {
    status: 'closed-awaiting-resolution',
    basis: 'closed; UMA resolution status "disputed"',
  })
  t.match(
    resolveMarket({ closed: false, outcomes: ['Yes', 'No'], outcomePrices: ['1', '0'] }),
    { status: 'open' },
    'already-parsed arrays work too',
  )
  t.match(resolveMarket({ closed: true, outcomes: 'not json', outcomePrices: '["1"]' }), {
    status: 'closed-awaiting-resolution',
    outcomes: [],
  })
})

t.test('bad input: 400 naming the field', async (t) => {
  const providers = { POLYMARKET_GAMMA_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'slug' })
  t.match(await runInline(handler, { slug: 'a', eventId: '1' }, { providers }), {
    ok: false,
    status: 400,
    field: 'eventId',
  })
  t.match(await runInline(handler, { eventId: 'abc' }, { providers }), { ok: false, status: 400, field: 'eventId' })
  t.match(await runInline(handler, { marketId: '1'.repeat(13) }, { providers }), {
    ok: false,
    status: 400,
    field: 'marketId',
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), { code: 'upstream_not_configured' })
  const api = await marketStandIn(t, () => ({ status: 503, body: 'down' }))
  const providers = { POLYMARKET_GAMMA_URL: api.url }
  await t.rejects(runInline(handler, handler.example, { providers }), { code: 'upstream_failed' })
  api.route(() => ({ body: [1, 2] }))
  await t.rejects(runInline(handler, { eventId: '1' }, { providers }), {
    code: 'upstream_failed',
    message: /not an object/,
  })
})
