import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Body = {
  score: number
  label: string
  guesses: number
  crackTimes: Record<string, { seconds: number; display: string }>
  feedback: { warning: string | null; suggestions: string[] }
  patterns: { pattern: string }[]
  length: number
}
const check = async (input: Record<string, unknown>, from: 'query' | 'body' = 'body') =>
  okBody<Body>(await runInline(handler, input, { from }))

t.test('a common password scores 0 with a warning', async (t) => {
  const r = await check({ password: 'password123' })
  t.equal(r.score, 0)
  t.equal(r.label, 'too guessable')
  t.match(r.feedback.warning, /common/i)
  t.ok(r.feedback.suggestions.length > 0)
  t.ok(r.crackTimes.offlineFastHashingXPerSecond.seconds < 1)
  t.same(Object.keys(r.crackTimes).sort(), [
    'offlineFastHashingXPerSecond',
    'offlineSlowHashingXPerSecond',
    'onlineNoThrottlingXPerSecond',
    'onlineThrottlingXPerHour',
  ])
})

t.test('a long random password scores 4', async (t) => {
  const r = await check({ password: 'vT9#qL2!mZ8@xR4$wK7' })
  t.equal(r.score, 4)
  t.ok(r.guesses > 1e10)
  t.equal(r.length, 19)
})

t.test('the password is not echoed back', async (t) => {
  const secret = 'Tr0ub4dor&3xyzzy'
  const r = await check({ password: secret })
  t.notMatch(JSON.stringify(r), secret)
  t.notMatch(JSON.stringify(r), 'Tr0ub4dor')
})

t.test('user inputs lower the score; query-string input', async (t) => {
  const plain = await check({ password: 'quartzmongoose77' })
  const personal = await check({ password: 'quartzmongoose77', userInputs: ['quartzmongoose'] })
  t.ok(personal.guesses < plain.guesses)
  const q = await check({ password: 'abc123' }, 'query')
  t.equal(q.score, 0)
})

t.test('rejects empty and oversized passwords', async (t) => {
  t.match(await runInline(handler, { password: '' }), { ok: false, status: 400, field: 'password' })
  t.match(await runInline(handler, { password: 'a'.repeat(257) }), { ok: false, status: 400, field: 'password' })
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'password' })
  t.match(await runInline(handler, { password: 'x', userInputs: [''] }), {
    ok: false,
    status: 400,
    field: 'userInputs.0',
  })
})
