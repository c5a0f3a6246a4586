import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Out = {
  metric: string
  dimension: number
  results: { rank: number; id: string | number; score: number; metadata?: object }[]
}

t.test('example: cosine top 2', async (t) => {
  const out = okBody<Out>(await runInline(handler, { ...handler.example }))
  t.equal(out.dimension, 3)
  t.same(
    out.results.map((r) => r.id),
    ['a', 'b'],
  )
  t.equal(out.results[0].score, 1)
  t.ok(Math.abs(out.results[1].score - Math.SQRT1_2) < 1e-12)
})

const items = [
  { id: 1, vector: [3, 4], metadata: { label: 'far' } },
  { id: 2, vector: [1, 1] },
  { id: 3, vector: [-1, 0] },
]

t.test('dot product and euclidean distance', async (t) => {
  const dot = okBody<Out>(await runInline(handler, { query: [1, 0], items, metric: 'dot' }))
  t.same(
    dot.results.map((r) => [r.id, r.score]),
    [
      [1, 3],
      [2, 1],
      [3, -1],
    ],
  )
  t.same(dot.results[0].metadata, { label: 'far' })
  const euc = okBody<Out>(await runInline(handler, { query: [0, 0], items, metric: 'euclidean' }))
  t.same(
    euc.results.map((r) => [r.id, r.score]),
    [
      [3, 1],
      [2, Math.SQRT2],
      [1, 5],
    ],
  )
})

t.test('threshold and ties', async (t) => {
  t.same(
    okBody<Out>(await runInline(handler, { query: [1, 0], items, metric: 'dot', threshold: 0 })).results.map(
      (r) => r.id,
    ),
    [1, 2],
  )
  t.same(
    okBody<Out>(await runInline(handler, { query: [0, 0], items, metric: 'euclidean', threshold: 2 })).results.map(
      (r) => r.id,
    ),
    [3, 2],
  )
  const tie = okBody<Out>(
    await runInline(handler, {
      query: [1],
      items: [
        { id: 'x', vector: [2] },
        { id: 'y', vector: [2] },
      ],
    }),
  )
  t.same(
    tie.results.map((r) => r.id),
    ['x', 'y'],
  )
})

t.test('no items gives no results', async (t) => {
  t.same(okBody<Out>(await runInline(handler, { query: [1, 2], items: [] })).results, [])
})

t.test('numeric strings are coerced when input comes from a query string', async (t) => {
  const out = okBody<Out>(
    await runInline(
      handler,
      { query: ['1', '0'], items: [{ id: 'a', vector: ['0', '1'] }], metric: 'dot', topK: '1' },
      { from: 'query' },
    ),
  )
  t.same(out.results, [{ rank: 1, id: 'a', score: 0 }])
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { query: [1, 2], items: [{ id: 'a', vector: [1] }] }), {
    ok: false,
    status: 400,
    field: 'items.0.vector',
  })
  t.match(await runInline(handler, { query: [0, 0], items: [{ id: 'a', vector: [1, 1] }] }), {
    ok: false,
    status: 400,
    field: 'query',
  })
  t.match(
    await runInline(handler, {
      query: [1, 0],
      items: [
        { id: 'a', vector: [1, 1] },
        { id: 'z', vector: [0, 0] },
      ],
    }),
    { ok: false, status: 400, field: 'items.1.vector' },
  )
  t.match(await runInline(handler, { query: [], items: [] }), { ok: false, status: 400, field: 'query' })
  t.match(await runInline(handler, { query: [1], items: [{ vector: [1] }] }), {
    ok: false,
    status: 400,
    field: 'items.0.id',
  })
  t.match(await runInline(handler, { query: ['x'], items: [] }), { ok: false, status: 400, field: 'query.0' })
  t.match(await runInline(handler, { query: [1], items: [], metric: 'manhattan' }), {
    ok: false,
    status: 400,
    field: 'metric',
  })
})

t.test('documented limits: 4,096 dimensions, 10,000 items, 2,000,000 numbers', async (t) => {
  t.match(await runInline(handler, { query: new Array(4_097).fill(1), items: [] }), {
    ok: false,
    status: 400,
    field: 'query',
  })
  const v = new Array(1_000).fill(0.5)
  const many = Array.from({ length: 2_001 }, (_, i) => ({ id: i, vector: v }))
  t.match(await runInline(handler, { query: v, items: many }), { ok: false, status: 413, field: 'items' })
  const out = okBody<Out>(await runInline(handler, { query: v, items: many.slice(0, 2_000), topK: 3 }))
  t.equal(out.results.length, 3)
})

t.test('GET: the query vector as repeated parameters or JSON, the items as JSON', async (t) => {
  const query = { query: ['1', '0'], items: JSON.stringify(items), metric: 'dot', topK: '2' }
  t.same(
    okBody<Out>(await runInline(handler, query, { from: 'query' })).results.map((r) => [r.id, r.score]),
    [
      [1, 3],
      [2, 1],
    ],
  )
  t.same(
    okBody<Out>(await runInline(handler, { ...query, query: '[1,0]' }, { from: 'query' })).results.map((r) => r.id),
    [1, 2],
  )
  const notJson = await runInline(handler, { ...query, items: '[{"id":1,' }, { from: 'query' })
  t.match(notJson, { ok: false, status: 400, field: 'items' }, 'items that are not JSON name the field')
})
