import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Match = {
  match: string
  index: number
  end: number
  groups: (string | null)[]
  namedGroups?: Record<string, string | null>
}
type TestOut = { engine: string; matched: boolean; matchCount: number; truncated: boolean; matches: Match[] }

t.test('example: matches with positions, numbered and named groups', async (t) => {
  const out = okBody<TestOut>(await runInline(handler, handler.example))
  t.equal(out.engine, 're2')
  t.equal(out.matchCount, 2)
  t.same(out.matches[0], { match: '2024-05', index: 5, end: 12, groups: ['2024', '05'], namedGroups: { year: '2024' } })
  t.same(out.matches[1].groups, ['2025', '11'])
})

t.test('flags: without g only the first match; i, m, s', async (t) => {
  t.equal(okBody<TestOut>(await runInline(handler, { pattern: 'a', flags: '', text: 'aaa' })).matchCount, 1)
  t.equal(
    okBody<TestOut>(await runInline(handler, { pattern: 'hello', flags: 'gi', text: 'Hello HELLO' })).matchCount,
    2,
  )
  t.equal(okBody<TestOut>(await runInline(handler, { pattern: '^b$', flags: 'g', text: 'a\nb\nc' })).matchCount, 0)
  t.equal(okBody<TestOut>(await runInline(handler, { pattern: '^b$', flags: 'gm', text: 'a\nb\nc' })).matchCount, 1)
  t.equal(okBody<TestOut>(await runInline(handler, { pattern: 'a.b', flags: 's', text: 'a\nb' })).matched, true)
  t.equal(okBody<TestOut>(await runInline(handler, { pattern: 'a.b', flags: '', text: 'a\nb' })).matched, false)
})

t.test('unmatched optional group is null; indices are UTF-16 like JavaScript; \\u escapes', async (t) => {
  const out = okBody<TestOut>(await runInline(handler, { pattern: 'x(y)?', text: 'é😀x' }))
  t.same(out.matches, [{ match: 'x', index: 3, end: 4, groups: [null] }])
  t.equal(okBody<TestOut>(await runInline(handler, { pattern: '\\u00e9', text: 'café' })).matches[0].index, 3)
})

t.test('empty matches and maxMatches truncation', async (t) => {
  const empty = okBody<TestOut>(await runInline(handler, { pattern: 'x*', text: 'axxb' }))
  t.same(
    empty.matches.map((m) => [m.match, m.index]),
    [
      ['', 0],
      ['xx', 1],
      ['', 3],
      ['', 4],
    ],
  )
  const capped = okBody<TestOut>(await runInline(handler, { pattern: '\\d', text: '0123456789', maxMatches: 3 }))
  t.equal(capped.matchCount, 3)
  t.equal(capped.truncated, true)
  t.equal(okBody<TestOut>(await runInline(handler, { pattern: 'a', text: '' })).matched, false)
})

t.test('catastrophic backtracking pattern returns quickly (linear engine)', async (t) => {
  const start = Date.now()
  const out = okBody<TestOut>(await runInline(handler, { pattern: '(a+)+$', text: 'a'.repeat(99_999) + '!' }))
  t.equal(out.matched, false)
  const nested = okBody<TestOut>(
    await runInline(handler, {
      pattern: '^(([a-z])+.)+[A-Z]([a-z])+$',
      text: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!',
    }),
  )
  t.equal(nested.matched, false)
  t.ok(Date.now() - start < 3_000, `took ${Date.now() - start} ms`)
})

t.test('generate presets', async (t) => {
  const gen = okBody<{ pattern: string; literal: string; sample: string; test: TestOut }>(
    await runInline(handler, { action: 'generate', preset: 'ipv4', text: '192.168.0.1' }),
  )
  t.equal(gen.pattern, '^(?:(?:(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d))$')
  t.equal(gen.test.matched, true)
  t.notOk(
    okBody<{ test: TestOut }>(await runInline(handler, { action: 'generate', preset: 'ipv4', text: '256.1.1.1' })).test
      .matched,
  )
  t.equal(
    okBody<{ literal: string }>(
      await runInline(handler, { action: 'generate', preset: 'url', anchored: false }),
    ).literal.startsWith('/https?:\\/\\/'),
    true,
  )
  const presets = handler.inputSchema.properties!.preset.enum as string[]
  for (const preset of presets) {
    const p = okBody<{ pattern: string; sample: string }>(await runInline(handler, { action: 'generate', preset }))
    t.ok(new RegExp(p.pattern).test(p.sample), `${preset}: JavaScript RegExp accepts its sample`)
    const viaRe2 = okBody<{ test: TestOut }>(await runInline(handler, { action: 'generate', preset, text: p.sample }))
    t.ok(viaRe2.test.matched, `${preset}: RE2 accepts its sample`)
  }
  const email = okBody<{ test: TestOut }>(
    await runInline(handler, {
      action: 'generate',
      preset: 'email',
      anchored: false,
      flags: 'g',
      text: 'a@b.io, nope@, c.d@e.co.uk',
    }),
  )
  t.same(
    email.test.matches.map((m) => m.match),
    ['a@b.io', 'c.d@e.co.uk'],
  )
})

t.test('GET query strings are coerced', async (t) => {
  const out = okBody<TestOut>(
    await runInline(handler, { pattern: '\\d+', text: 'a1b22c333', maxMatches: '2' }, { from: 'query' }),
  )
  t.same(
    out.matches.map((m) => m.match),
    ['1', '22'],
  )
  const gen = okBody<{ pattern: string }>(
    await runInline(handler, { action: 'generate', preset: 'uuid', anchored: 'false' }, { from: 'query' }),
  )
  t.notOk(gen.pattern.startsWith('^'))
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { pattern: '(unclosed', text: 'x' }), { ok: false, status: 400, field: 'pattern' })
  t.match(await runInline(handler, { pattern: '(a)\\1', text: 'aa' }), {
    ok: false,
    status: 400,
    field: 'pattern',
    message: /not supported/,
  })
  t.match(await runInline(handler, { pattern: 'a(?=b)', text: 'ab' }), { ok: false, status: 400, field: 'pattern' })
  t.match(await runInline(handler, { pattern: 'a', text: 'a', flags: 'gy' }), {
    ok: false,
    status: 400,
    field: 'flags',
  })
  t.match(await runInline(handler, { text: 'a' }), { ok: false, status: 400, field: 'pattern' })
  t.match(await runInline(handler, { pattern: 'a' }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { action: 'generate' }), { ok: false, status: 400, field: 'preset' })
  t.match(await runInline(handler, { action: 'generate', preset: 'credit-card' }), {
    ok: false,
    status: 400,
    field: 'preset',
  })
})

t.test('documented limits', async (t) => {
  t.match(await runInline(handler, { pattern: 'a'.repeat(1001), text: 'a' }), {
    ok: false,
    status: 400,
    field: 'pattern',
  })
  t.match(await runInline(handler, { pattern: 'a', text: 'a'.repeat(100_001) }), {
    ok: false,
    status: 400,
    field: 'text',
  })
  t.match(await runInline(handler, { pattern: 'a', text: 'a', maxMatches: 1001 }), {
    ok: false,
    status: 400,
    field: 'maxMatches',
  })
})
