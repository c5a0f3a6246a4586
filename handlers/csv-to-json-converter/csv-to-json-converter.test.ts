import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Out = { columns: string[] | null; rows: unknown[]; rowCount: number; delimiter: string }

t.test('example: objects keyed by header with inferred types', async (t) => {
  const out = okBody<Out>(await runInline(handler, handler.example))
  t.same(out.columns, ['name', 'age', 'active'])
  t.same(out.rows, [
    { name: 'Ada', age: 36, active: true },
    { name: 'Linus', age: null, active: false },
  ])
  t.equal(out.rowCount, 2)
})

t.test('RFC 4180 quoting: embedded delimiter, quote and newline', async (t) => {
  const out = okBody<Out>(await runInline(handler, { csv: 'a,b\r\n"x, y","say ""hi""\nthere"\r\n' }))
  t.same(out.rows, [{ a: 'x, y', b: 'say "hi"\nthere' }])
})

t.test('no type inference keeps strings; leading zeros and huge integers stay strings', async (t) => {
  const raw = okBody<Out>(await runInline(handler, { csv: 'id,n\n007,1.5\n', inferTypes: false }))
  t.same(raw.rows, [{ id: '007', n: '1.5' }])
  const inferred = okBody<Out>(await runInline(handler, { csv: 'id,n,big,e\n007,-1.5,12345678901234567890,1e3\n' }))
  t.same(inferred.rows, [{ id: '007', n: -1.5, big: '12345678901234567890', e: 1000 }])
})

t.test('headers=false gives arrays; auto and tab delimiters', async (t) => {
  const arrays = okBody<Out>(await runInline(handler, { csv: '1;2\n3;4', delimiter: 'auto', headers: false }))
  t.same(arrays, {
    columns: null,
    rows: [
      [1, 2],
      [3, 4],
    ],
    rowCount: 2,
    delimiter: ';',
  })
  const tab = okBody<Out>(await runInline(handler, { csv: 'a\tb\nx\ty', delimiter: 'tab' }))
  t.same(tab.rows, [{ a: 'x', b: 'y' }])
})

t.test('ragged rows, blank and duplicate headers, BOM', async (t) => {
  const out = okBody<Out>(await runInline(handler, { csv: '\uFEFFa,a,\n1\n1,2,3,4\n' }))
  t.same(out.columns, ['a', 'a_2', 'column_3', 'column_4'])
  t.same(out.rows, [
    { a: 1, a_2: null, column_3: null, column_4: null },
    { a: 1, a_2: 2, column_3: 3, column_4: 4 },
  ])
})

t.test('empty input gives no rows', async (t) => {
  t.same(okBody<Out>(await runInline(handler, { csv: '' })), { columns: [], rows: [], rowCount: 0, delimiter: ',' })
})

t.test('GET query strings are coerced', async (t) => {
  const out = okBody<Out>(
    await runInline(
      handler,
      { csv: 'a|b\n1|2', delimiter: '|', inferTypes: 'false', headers: 'true' },
      { from: 'query' },
    ),
  )
  t.same(out.rows, [{ a: '1', b: '2' }])
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { csv: 'a,"b\n1,2' }), { ok: false, status: 400, field: 'csv' }, 'unclosed quote')
  t.match(await runInline(handler, { csv: 'a', quote: '""' }), { ok: false, status: 400, field: 'quote' })
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'csv' })
  t.match(await runInline(handler, { csv: 'a', headers: 'maybe' }, { from: 'query' }), {
    ok: false,
    status: 400,
    field: 'headers',
  })
})

t.test('documented limits: 2,000,000 characters and 100,000 rows', async (t) => {
  t.match(await runInline(handler, { csv: 'a'.repeat(2_000_001) }), { ok: false, status: 400, field: 'csv' })
  const tooMany = await runInline(handler, { csv: 'n\n' + '1\n'.repeat(100_001) })
  t.match(tooMany, { ok: false, status: 413, field: 'csv' })
  t.equal(okBody<Out>(await runInline(handler, { csv: 'n\n' + '1\n'.repeat(100_000) })).rowCount, 100_000)
})
