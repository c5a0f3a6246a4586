import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Body = {
  score: number
  comparative: number
  label: string
  positive: string[]
  negative: string[]
  contributions: { word: string; score: number }[]
  tokens: number
}
const analyze = async (input: Record<string, unknown>, from: 'query' | 'body' = 'body') =>
  okBody<Body>(await runInline(handler, input, { from }))

t.test('known AFINN scores', async (t) => {
  // AFINN-165: love +3, great +3
  const pos = await analyze({ text: 'I love it, great work' })
  t.equal(pos.score, 6)
  t.equal(pos.label, 'positive')
  t.same(pos.positive.sort(), ['great', 'love'])
  t.equal(pos.tokens, 5)
  t.equal(pos.comparative, 1.2)
  // hate -3, terrible -3
  const neg = await analyze({ text: 'I hate this terrible thing' })
  t.equal(neg.score, -6)
  t.equal(neg.label, 'negative')
  t.same(neg.negative.sort(), ['hate', 'terrible'])
})

t.test('neutral text and negation', async (t) => {
  const neutral = await analyze({ text: 'The meeting is on Tuesday at noon.' })
  t.equal(neutral.score, 0)
  t.equal(neutral.label, 'neutral')
  const negated = await analyze({ text: 'this is not good' })
  t.ok(negated.score < 0, 'not good scores negative')
})

t.test(
  'extras override word scores (GET-style input cannot carry objects, but text works from the query)',
  async (t) => {
    const custom = await analyze({ text: 'tollgate rocks', extras: { tollgate: 4 } })
    t.ok(custom.contributions.some((c) => c.word === 'tollgate' && c.score === 4))
    const q = await analyze({ text: 'happy days' }, 'query')
    t.equal(q.label, 'positive')
  },
)

t.test('rejects empty, oversized and out-of-range input', async (t) => {
  t.match(await runInline(handler, { text: '' }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: 'a '.repeat(50_001) }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: 'x', extras: { bad: 9 } }), { ok: false, status: 400, field: 'extras.bad' })
})
