import t, { type Test } from 'tap'
import {
  decodeSearchCursor,
  EndpointSearchIndex,
  type SearchableEndpoint,
} from '../../../src/services/marketplace/endpoint-search.js'

const ep = (slug: string, description: string, more: Partial<SearchableEndpoint> = {}): SearchableEndpoint => ({
  id: slug,
  url: `https://p.test/ns/svc/${slug}`,
  namespace: 'ns',
  service: 'svc',
  slug,
  name: 'Service',
  description,
  tags: [],
  inputFields: [],
  price: 1000n,
  schemes: ['exact'],
  network: 'eip155:84532',
  methods: ['GET', 'POST'],
  example: false,
  ...more,
})

const index = new EndpointSearchIndex([
  ep('text-stats', 'counts words; a hash of nothing'),
  ep('hash-generator', 'digests of text'),
  ep('hashing-tools', 'more digests'),
  ep('rehash', 'again'),
  ep('tagged', 'plain', { tags: ['hash'] }),
  ep('dear', 'hash but costly', {
    price: 50_000n,
    methods: ['GET'],
    namespace: 'other',
    schemes: ['exact', 'deferred'],
  }),
  ep('fake', 'hash example', { example: true }),
])
const slugs = (q: Parameters<typeof index.search>[0]) => index.search(q).hits.map((h) => h.endpoint.slug)

t.test('ranking: slug above tags above description; whole word above start above inside', async (t) => {
  // slug whole word 32, slug word start 16, tag whole word 12, slug inside 8, description 4
  t.same(slugs({ text: 'hash', limit: 10 }), [
    'hash-generator',
    'hashing-tools',
    'tagged',
    'rehash',
    'dear',
    'text-stats',
  ])
  t.same(slugs({ text: 'hash generator', limit: 10 }), ['hash-generator'], 'every word must match')
  t.equal(slugs({ text: 'rehash', limit: 1 })[0], 'rehash', 'its own slug first')
  t.same(slugs({ text: 'ha', limit: 10 }).includes('rehash'), false, 'short words match starts only')
})

t.test('filters', async (t) => {
  t.notOk(slugs({ text: 'hash', maxPrice: 1000n, limit: 10 }).includes('dear'), 'maxPrice')
  t.same(slugs({ text: 'hash', namespace: 'other', limit: 10 }), ['dear'], 'namespace')
  t.same(slugs({ text: 'hash', scheme: 'deferred', limit: 10 }), ['dear'], 'scheme')
  t.notOk(slugs({ text: 'hash', method: 'POST', limit: 10 }).includes('dear'), 'method')
  t.same(slugs({ text: 'hash', network: 'eip155:1', limit: 10 }), [], 'network')
  t.ok(slugs({ text: 'hash', includeExamples: true, limit: 10 }).includes('fake'), 'examples only when asked')
})

t.test('cursor pages are the whole ranking in order', async (t) => {
  const whole = slugs({ text: 'hash', limit: 10 })
  const seen: string[] = []
  let cursor: string | undefined
  do {
    const page = index.search({ text: 'hash', limit: 2, cursor })
    t.equal(page.total, whole.length)
    seen.push(...page.hits.map((h) => h.endpoint.slug))
    cursor = page.nextCursor
  } while (cursor)
  t.same(seen, whole)
  t.ok(Number.isNaN(decodeSearchCursor('not-ours')), 'a foreign cursor is refused')
})

t.test('the ranked and ordered shortcuts answer exactly what scoring every match answers', async (t) => {
  // a filter that passes everything sends a query down the path that scores every match; without
  // it, one word reads its ranked matches and no words read the tie order
  let seed = 7
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  const vocab = ['hash', 'ash', 'hashes', 'rehash', 'price', 'prices', 'wallet', 'score', 'ore', 'token', 'image']
  const word = () => vocab[Math.floor(rand() * vocab.length)]
  const docs = Array.from({ length: 400 }, (_, i) =>
    ep(`${word()}-${word()}${i % 17 === 0 ? '' : `-${i}`}`, `${word()} ${word()} ${word()}`, {
      url: `https://p.test/ns/svc/${i}`,
      tags: [word()],
      example: i % 11 === 0,
    }),
  )
  // every word ranked, then none: both single-word paths against scoring every match
  for (const rankMin of [1, Infinity]) await t.test(`rankMin ${rankMin}`, async (t) => checkPaths(t, rankMin))
  async function checkPaths(t: Test, rankMin: number) {
    const big = new EndpointSearchIndex(docs, { rankMin })
    const pages = (q: Omit<Parameters<typeof big.search>[0], 'cursor'>) => {
      const all: Array<[string, number]> = []
      let total = -1
      let cursor: string | undefined
      for (let n = 0; n < 1000; n++) {
        const page = big.search({ ...q, cursor })
        total = page.total
        all.push(...page.hits.map((h): [string, number] => [h.endpoint.url, h.score]))
        cursor = page.nextCursor
        if (!cursor) break
      }
      return { all, total }
    }
    const scoreAll = () => true
    for (const text of [undefined, ...vocab, 'as', 'ha', 'sh', 'zz']) {
      for (const includeExamples of [false, true]) {
        for (const limit of [1, 7, 50]) {
          const fast = pages({ text, includeExamples, limit })
          const slow = pages({ text, includeExamples, limit, where: scoreAll })
          t.same(fast, slow, `text ${text ?? '(none)'}, examples ${includeExamples}, limit ${limit}`)
        }
      }
    }
    // and twice: the second answer comes from the kept ranking
    t.same(pages({ text: 'hash', limit: 9 }), pages({ text: 'hash', limit: 9, where: scoreAll }))
  }
})
