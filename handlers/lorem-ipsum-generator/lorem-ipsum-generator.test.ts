import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Out = { text: string; paragraphs?: string[]; words: number; seed: number }

t.test('example: two sentences, seeded, starting with Lorem ipsum', async (t) => {
  const out = okBody<Out>(await runInline(handler, { ...handler.example }))
  t.match(out.text, /^Lorem ipsum dolor sit amet\b/)
  t.equal(out.text.match(/\./g)?.length, 2)
  t.equal(out.seed, 42)
})

t.test('the same seed gives the same text; another seed another text', async (t) => {
  const a = okBody<Out>(await runInline(handler, { unit: 'paragraphs', count: 3, seed: 7 }))
  const b = okBody<Out>(await runInline(handler, { unit: 'paragraphs', count: 3, seed: 7 }))
  const c = okBody<Out>(await runInline(handler, { unit: 'paragraphs', count: 3, seed: 8 }))
  t.equal(a.text, b.text)
  t.not(a.text, c.text)
  t.equal(a.paragraphs!.length, 3)
  t.equal(a.text, a.paragraphs!.join('\n\n'))
  const unseeded = okBody<Out>(await runInline(handler, { count: 1 }))
  t.equal(
    okBody<Out>(await runInline(handler, { count: 1, seed: unseeded.seed })).text,
    unseeded.text,
    'returned seed reproduces',
  )
})

t.test('exact word counts', async (t) => {
  t.equal(okBody<Out>(await runInline(handler, { unit: 'words', count: 1 })).text, 'lorem')
  const w = okBody<Out>(await runInline(handler, { unit: 'words', count: 250, seed: 1, startWithLorem: false }))
  t.equal(w.words, 250)
  t.notMatch(w.text, /^lorem ipsum dolor sit amet/)
})

t.test('GET query strings are coerced', async (t) => {
  const out = okBody<Out>(
    await runInline(handler, { unit: 'words', count: '5', seed: '3', startWithLorem: 'true' }, { from: 'query' }),
  )
  t.equal(out.text, 'lorem ipsum dolor sit amet')
})

t.test('invalid input names the field; documented per-unit limits', async (t) => {
  t.match(await runInline(handler, { unit: 'chapters' }), { ok: false, status: 400, field: 'unit' })
  t.match(await runInline(handler, { count: 0 }), { ok: false, status: 400, field: 'count' })
  t.match(await runInline(handler, { seed: -1 }), { ok: false, status: 400, field: 'seed' })
  t.match(await runInline(handler, { unit: 'words', count: 1_001 }), { ok: false, status: 400, field: 'count' })
  t.match(await runInline(handler, { unit: 'paragraphs', count: 51 }), { ok: false, status: 413, field: 'count' })
  t.match(await runInline(handler, { unit: 'sentences', count: 501 }), { ok: false, status: 413, field: 'count' })
  t.equal(okBody<Out>(await runInline(handler, { unit: 'paragraphs', count: 50, seed: 5 })).paragraphs!.length, 50)
})
