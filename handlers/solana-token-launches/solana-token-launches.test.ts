import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { startJsonStandIn } from '../../test/helpers/hyperliquid-stand-in.js'
import { dexPair, USDC_MINT } from '../../test/helpers/solana-dexscreener-stand-in.js'
import handler from './index.js'

const H = 3_600_000
const A = { address: 'AaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaPump', name: 'Alpha', symbol: 'ALPHA' }
const B = { address: 'BbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbPump', name: 'Beta', symbol: 'BETA' }
const C = 'CcccccccccccccccccccccccccccccccccccccccPump'
const profile = (chainId: string, tokenAddress: string, extra: Record<string, unknown> = {}) => ({
  url: `https://dexscreener.com/${chainId}/${tokenAddress.toLowerCase()}`,
  chainId,
  tokenAddress,
  icon: 'https://dd.dexscreener.com/icon.png',
  header: 'https://dd.dexscreener.com/header.png',
  description: `about ${tokenAddress.slice(0, 4)}`,
  links: [
    { type: 'twitter', url: 'https://x.com/alpha' },
    { label: 'Website', url: 'https://alpha.example' },
    { label: 'broken' },
  ],
  ...extra,
})

function standIn(t: { teardown(fn: () => unknown): void }, feed: unknown[]) {
  const now = Date.now()
  const pairs = [
    dexPair({
      dexId: 'pumpswap',
      pairAddress: 'PairA1111111111111111111111111111111111111',
      base: A,
      liquidityUsd: 40000,
      volumeH24: 90000,
      createdAt: now - 5 * H,
    }),
    dexPair({
      dexId: 'raydium',
      pairAddress: 'PairA2222222222222222222222222222222222222',
      base: A,
      quote: { address: USDC_MINT, name: 'USD Coin', symbol: 'USDC' },
      liquidityUsd: 60000,
      volumeH24: 10000,
      createdAt: now - 2 * H,
    }),
    dexPair({
      dexId: 'meteora',
      pairAddress: 'PairB1111111111111111111111111111111111111',
      base: { address: USDC_MINT, name: 'USD Coin', symbol: 'USDC' },
      quote: B,
      liquidityUsd: 5000,
      volumeH24: 200000,
      createdAt: now - 48 * H,
    }),
  ]
  return startJsonStandIn(t, (r) => {
    if (r.path === '/token-profiles/latest/v1' || r.path === '/token-boosts/latest/v1') return { json: feed }
    if (r.path.startsWith('/tokens/v1/solana/')) return { json: pairs }
    return { status: 404, raw: 'not found' }
  })
}

const feed = [
  profile('solana', A.address),
  profile('ethereum', '0x' + 'e'.repeat(40)),
  profile('solana', B.address),
  profile('solana', A.address),
  profile('solana', C),
]

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('latest profiles, Solana only, enriched with their pools', async (t) => {
  const ds = await standIn(t, feed)
  const out = okBody(await runInline(handler, {}, { providers: { DEXSCREENER_API_URL: ds.url } }))
  t.same(
    ds.requests.map((r) => r.path),
    ['/token-profiles/latest/v1', `/tokens/v1/solana/${A.address},${B.address},${C}`],
    'one batch, duplicates and other chains left out',
  )
  t.match(out, { chain: 'solana', feed: 'profiles', feedEntriesRead: 5, tokensListed: 3 })
  t.same(
    out.launches.map((l: any) => l.tokenAddress),
    [A.address, B.address, C],
    'feed order',
  )
  const a = out.launches[0]
  t.match(a, {
    name: 'Alpha',
    symbol: 'ALPHA',
    profileUrl: `https://dexscreener.com/solana/${A.address.toLowerCase()}`,
    description: 'about Aaaa',
    boost: null,
    pairsFound: 2,
    totalLiquidityUsd: 100000,
    volume24hUsd: 100000,
  })
  t.same(a.links, [
    { type: 'twitter', label: null, url: 'https://x.com/alpha' },
    { type: null, label: 'Website', url: 'https://alpha.example' },
  ])
  t.ok(Math.abs(a.ageHours - 5) < 0.1, `first pool about 5 h old: ${a.ageHours}`)
  t.match(a.mainPool, {
    dex: 'raydium',
    pairAddress: 'PairA2222222222222222222222222222222222222',
    quoteToken: { symbol: 'USDC' },
    liquidityUsd: 60000,
  })
  t.ok(Math.abs(a.mainPool.ageHours - 2) < 0.1)
  const b = out.launches[1]
  t.match(
    b,
    { name: 'Beta', symbol: 'BETA', pairsFound: 1, mainPool: { dex: 'meteora', quoteToken: { symbol: 'USDC' } } },
    'a token on the quote side is found too',
  )
  t.match(out.launches[2], {
    tokenAddress: C,
    name: null,
    pairsFound: 0,
    firstPoolCreatedAt: null,
    ageHours: null,
    mainPool: null,
    totalLiquidityUsd: 0,
  })
})

t.test('filters and sorts', async (t) => {
  const ds = await standIn(t, feed)
  const providers = { DEXSCREENER_API_URL: ds.url }
  const young = okBody(await runInline(handler, { maxAgeHours: '24' }, { from: 'query', providers }))
  t.same(
    young.launches.map((l: any) => l.symbol),
    ['ALPHA'],
  )
  const rich = okBody(await runInline(handler, { minLiquidityUsd: 1000, sort: 'volume' }, { providers }))
  t.same(
    rich.launches.map((l: any) => l.symbol),
    ['BETA', 'ALPHA'],
  )
  const fresh = okBody(await runInline(handler, { sort: 'newestPool' }, { providers }))
  t.same(
    fresh.launches.map((l: any) => l.symbol),
    ['ALPHA', 'BETA', null],
  )
  const one = okBody(await runInline(handler, { limit: 1 }, { providers }))
  t.equal(one.launches.length, 1)
  t.equal(ds.requests.at(-1)!.path, `/tokens/v1/solana/${A.address}`)
})

t.test('the boosts feed', async (t) => {
  const ds = await standIn(t, [profile('solana', B.address, { amount: 100, totalAmount: 500 })])
  const out = okBody(await runInline(handler, { feed: 'boosts' }, { providers: { DEXSCREENER_API_URL: ds.url } }))
  t.equal(ds.requests[0]!.path, '/token-boosts/latest/v1')
  t.same(out.launches[0].boost, { amount: 100, totalAmount: 500 })
})

t.test('no Solana entries: no enrichment call', async (t) => {
  const ds = await standIn(t, [profile('base', '0x' + 'b'.repeat(40))])
  const out = okBody(await runInline(handler, {}, { providers: { DEXSCREENER_API_URL: ds.url } }))
  t.equal(ds.requests.length, 1)
  t.match(out, { tokensListed: 0, launches: [] })
})

t.test('bad input names the field', async (t) => {
  const providers = { DEXSCREENER_API_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, { feed: 'all' }, { providers }), { ok: false, status: 400, field: 'feed' })
  t.match(await runInline(handler, { limit: 31 }, { providers }), { ok: false, status: 400, field: 'limit' })
  t.match(await runInline(handler, { maxAgeHours: 0 }, { providers }), { ok: false, status: 400, field: 'maxAgeHours' })
  t.match(await runInline(handler, { sort: 'random' }, { providers }), { ok: false, status: 400, field: 'sort' })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, {}, { providers: {} }), { code: 'upstream_not_configured' })
  const down = await startJsonStandIn(t, () => ({ status: 500, raw: 'oops' }))
  await t.rejects(runInline(handler, {}, { providers: { DEXSCREENER_API_URL: down.url } }), { code: 'upstream_failed' })
  const pairsDown = await startJsonStandIn(t, (r) =>
    r.path.startsWith('/tokens/') ? { status: 502, raw: 'bad gateway' } : { json: feed },
  )
  await t.rejects(runInline(handler, {}, { providers: { DEXSCREENER_API_URL: pairsDown.url } }), {
    code: 'upstream_failed',
    message: /HTTP 502/,
  })
  const wrong = await startJsonStandIn(t, () => ({ json: 'hello' }))
  await t.rejects(runInline(handler, {}, { providers: { DEXSCREENER_API_URL: wrong.url } }), {
    code: 'upstream_failed',
    message: /unexpected shape/,
  })
})

t.test("a token on a pool's quote side gets its own price, not the base token's", async (t) => {
  // DexScreener's priceUsd / fdv / marketCap are the base token's: USDC here, priced 1 USD, 0.5 B each
  const pool = dexPair({
    dexId: 'meteora',
    pairAddress: 'PairB1111111111111111111111111111111111111',
    base: { address: USDC_MINT, name: 'USD Coin', symbol: 'USDC' },
    quote: B,
    priceUsd: '1.0001',
    liquidityUsd: 5000,
    fdv: 9_000_000_000,
  })
  const ds = await startJsonStandIn(t, (r) =>
    r.path.startsWith('/tokens/v1/solana/')
      ? { json: [{ ...pool, priceNative: '0.5' }] }
      : { json: [profile('solana', B.address)] },
  )
  const out = okBody(await runInline(handler, {}, { providers: { DEXSCREENER_API_URL: ds.url } }))
  const main = out.launches[0].mainPool
  t.equal(main.priceUsd, 2.0002, 'B costs 1.0001 / 0.5 USD')
  t.equal(main.fdvUsd, null, "USDC's FDV is not B's")
  t.equal(main.marketCapUsd, null)
  t.match(main.quoteToken, { symbol: 'USDC' })
})
