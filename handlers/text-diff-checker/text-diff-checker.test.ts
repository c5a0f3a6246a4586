import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Out = {
  identical: boolean
  stats: { added: number; removed: number; unchanged: number }
  changes: { type: string; value: string; count: number }[]
  patch?: string
}

t.test('example: word diff and unified patch', async (t) => {
  const out = okBody<Out>(await runInline(handler, handler.example))
  t.equal(out.identical, false)
  t.same(out.stats, { added: 1, removed: 1, unchanged: 8 })
  t.same(
    out.changes.filter((c) => c.type !== 'equal').map((c) => [c.type, c.value]),
    [
      ['removed', 'brown'],
      ['added', 'red'],
    ],
  )
  t.equal(
    out.patch,
    '===================================================================\n--- original\n+++ modified\n@@ -1,3 +1,3 @@\n-the quick brown fox\n+the quick red fox\n jumps over\n the lazy dog\n',
  )
})

t.test('line diff counts lines', async (t) => {
  const out = okBody<Out>(await runInline(handler, { original: 'a\nb\nc\n', modified: 'a\nc\nd\n', patch: false }))
  t.same(out.changes, [
    { type: 'equal', value: 'a\n', count: 1 },
    { type: 'removed', value: 'b\n', count: 1 },
    { type: 'equal', value: 'c\n', count: 1 },
    { type: 'added', value: 'd\n', count: 1 },
  ])
  t.same(out.stats, { added: 1, removed: 1, unchanged: 2 })
  t.notOk('patch' in out)
})

t.test('char diff, ignoreCase', async (t) => {
  const out = okBody<Out>(
    await runInline(handler, { original: 'kitten', modified: 'sitting', mode: 'char', patch: false }),
  )
  t.same(out.stats, { added: 3, removed: 2, unchanged: 4 })
  t.equal(
    okBody<Out>(await runInline(handler, { original: 'Hello', modified: 'hELLO', mode: 'char', ignoreCase: true }))
      .identical,
    true,
  )
})

t.test('whitespace handling in word mode', async (t) => {
  t.equal(okBody<Out>(await runInline(handler, { original: 'a  b', modified: 'a b', mode: 'word' })).identical, false)
  t.equal(
    okBody<Out>(await runInline(handler, { original: 'a  b', modified: 'a b', mode: 'word', ignoreWhitespace: true }))
      .identical,
    true,
  )
})

t.test('empty and identical texts', async (t) => {
  const empty = okBody<Out>(await runInline(handler, { original: '', modified: '' }))
  t.equal(empty.identical, true)
  t.same(empty.changes, [])
  const added = okBody<Out>(await runInline(handler, { original: '', modified: 'x\n' }))
  t.same(added.stats, { added: 1, removed: 0, unchanged: 0 })
  t.match(added.patch, /@@ -0,0 \+1,1 @@\n\+x\n/)
})

t.test('GET query strings are coerced', async (t) => {
  const out = okBody<Out>(
    await runInline(
      handler,
      { original: 'ab', modified: 'ac', mode: 'char', patch: 'false', context: '0' },
      { from: 'query' },
    ),
  )
  t.same(out.stats, { added: 1, removed: 1, unchanged: 1 })
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { original: 'a' }), { ok: false, status: 400, field: 'modified' })
  t.match(await runInline(handler, { original: 'a', modified: 'b', mode: 'sentence' }), {
    ok: false,
    status: 400,
    field: 'mode',
  })
  t.match(await runInline(handler, { original: 'a', modified: 'b', context: 51 }), {
    ok: false,
    status: 400,
    field: 'context',
  })
})

t.test('documented limit: 200,000 characters per text', async (t) => {
  t.match(await runInline(handler, { original: 'a'.repeat(200_001), modified: '' }), {
    ok: false,
    status: 400,
    field: 'original',
  })
})

t.test('texts too different to diff within the budget give a clear 413', async (t) => {
  // xorshift noise over two disjoint alphabets: nothing in common, so the edit distance is maximal
  let x = 2463534242
  const next = () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), x >>> 0)
  const noise = (n: number, base: number) =>
    Array.from({ length: n }, () => String.fromCharCode(base + (next() % 13))).join('')
  const start = Date.now()
  const out = await runInline(handler, {
    original: noise(200_000, 97),
    modified: noise(200_000, 110),
    mode: 'char',
    patch: false,
  })
  t.match(out, { ok: false, status: 413, field: 'modified', message: /differ too much/ })
  t.ok(Date.now() - start < 9_000, 'stops before the worker time limit')
})
