import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Body = {
  ok: boolean
  result: unknown
  error: { name: string; message: string } | null
  limit: string | null
  logs: { level: string; message: string }[]
  logsTruncated: boolean
  durationMs: number
}
const sandbox = async (input: Record<string, unknown>, from: 'query' | 'body' = 'body') =>
  okBody<Body>(await runInline(handler, input, { from }))

t.test('returns the last expression as JSON and captures console output', async (t) => {
  const r = await sandbox({
    code: 'const xs = [1, 2, 3].map((x) => x * x)\nconsole.log("squares", xs)\nconsole.error({ a: 1 });\n({ sum: xs.reduce((a, b) => a + b, 0), when: new Date(0) })',
  })
  t.same(r, {
    ok: true,
    result: { sum: 14, when: '1970-01-01T00:00:00.000Z' },
    error: null,
    limit: null,
    logs: [
      { level: 'log', message: 'squares [1,4,9]' },
      { level: 'error', message: '{"a":1}' },
    ],
    logsTruncated: false,
    durationMs: r.durationMs,
  })
})

t.test('awaits a returned promise; undefined result is null', async (t) => {
  t.match(await sandbox({ code: '(async () => { await null; return [1, "two"] })()' }), {
    ok: true,
    result: [1, 'two'],
  })
  t.match(await sandbox({ code: 'Promise.reject(new TypeError("nope"))' }), {
    ok: false,
    error: { name: 'TypeError', message: 'nope' },
  })
  t.match(await sandbox({ code: 'let x = 1' }), { ok: true, result: null })
})

t.test('thrown errors and syntax errors are reported, not raised', async (t) => {
  t.match(await sandbox({ code: 'throw new RangeError("bad range")' }), {
    ok: false,
    error: { name: 'RangeError', message: 'bad range' },
    limit: null,
  })
  t.match(await sandbox({ code: 'function (' }), { ok: false, error: { name: 'SyntaxError' } })
})

t.test('no host access', async (t) => {
  const r = await sandbox({
    code: '[typeof process, typeof require, typeof fetch, typeof globalThis.std, typeof os, typeof import.meta]',
  })
  t.match(r, { ok: false }) // import.meta is a syntax error in a script
  const r2 = await sandbox({ code: '[typeof process, typeof require, typeof fetch, typeof setTimeout]' })
  t.same(r2.result, ['undefined', 'undefined', 'undefined', 'undefined'])
})

t.test('an infinite loop stops at the time limit', async (t) => {
  const started = Date.now()
  const r = await sandbox({ code: 'while (true) {}', timeLimitMs: 200 })
  const took = Date.now() - started
  t.match(r, { ok: false, limit: 'time', error: { message: /interrupted/ } })
  t.ok(took < 1500, `stopped after ${took} ms`)
  const async = await sandbox({ code: '(async () => { for (;;) await null })()', timeLimitMs: 200 })
  t.match(async, { ok: false, limit: 'time' })
})

t.test('a memory bomb stops at the memory limit', async (t) => {
  const started = Date.now()
  // QuickJS spends long stretches inside Array.prototype.fill near the limit: the hard deadline ends it
  const r = await sandbox({
    code: 'const keep = []; for (;;) keep.push(new Array(100000).fill(1.5))',
    memoryLimitMb: 8,
    timeLimitMs: 1000,
  })
  t.match(r, { ok: false })
  t.ok(r.limit === 'memory' || r.limit === 'time', `limit ${r.limit}`)
  t.ok(Date.now() - started < 5000, `stopped by the hard deadline at the latest (${Date.now() - started} ms)`)
  const s = await sandbox({ code: 'let s = "x"; for (;;) s += s', memoryLimitMb: 8 })
  t.match(s, { ok: false, limit: 'memory' })
  const objs = await sandbox({
    code: 'const keep = []; for (;;) keep.push({ a: [keep.length] })',
    memoryLimitMb: 2,
    timeLimitMs: 5000,
  })
  t.match(objs, { ok: false, limit: 'memory', error: { message: /out of memory/ } })
  const deep = await sandbox({ code: 'function f(n) { return f(n + 1) + 1 } f(0)' })
  t.match(deep, { ok: false, limit: 'stack' })
})

t.test('console output is capped', async (t) => {
  const r = await sandbox({ code: 'for (let i = 0; i < 5000; i++) console.log(i)' })
  t.equal(r.logs.length, 1000)
  t.equal(r.logsTruncated, true)
})

t.test('query-string input and invalid input', async (t) => {
  t.match(await sandbox({ code: '6 * 7', timeLimitMs: '500', memoryLimitMb: '4' }, 'query'), { ok: true, result: 42 })
  t.match(await runInline(handler, { code: '' }), { ok: false, status: 400, field: 'code' })
  t.match(await runInline(handler, { code: 'x'.repeat(100_001) }), { ok: false, status: 400, field: 'code' })
  t.match(await runInline(handler, { code: '1', timeLimitMs: 60_000 }), {
    ok: false,
    status: 400,
    field: 'timeLimitMs',
  })
  t.match(await runInline(handler, { code: '1', memoryLimitMb: 1024 }), {
    ok: false,
    status: 400,
    field: 'memoryLimitMb',
  })
})
