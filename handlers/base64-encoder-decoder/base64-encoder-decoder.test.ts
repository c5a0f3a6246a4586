import t from 'tap'
import { okBody, okResult, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Out = Record<string, unknown>

t.test('example runs', async (t) => {
  t.same(okBody<Out>(await runInline(handler, handler.example)), {
    base64: 'aGVsbG8gd29ybGQ=',
    bytes: 11,
    urlSafe: false,
    padding: true,
  })
})

t.test('RFC 4648 test vectors', async (t) => {
  const vectors: [string, string][] = [
    ['', ''],
    ['f', 'Zg=='],
    ['fo', 'Zm8='],
    ['foo', 'Zm9v'],
    ['foob', 'Zm9vYg=='],
    ['fooba', 'Zm9vYmE='],
    ['foobar', 'Zm9vYmFy'],
  ]
  for (const [plain, b64] of vectors) {
    t.equal(okBody<Out>(await runInline(handler, { mode: 'encode', text: plain })).base64, b64, `encode ${plain}`)
    t.equal(okBody<Out>(await runInline(handler, { mode: 'decode', text: b64 })).text, plain, `decode ${b64}`)
  }
})

t.test('URL-safe alphabet and padding', async (t) => {
  const bytes = 'fbff'
  t.equal(okBody<Out>(await runInline(handler, { mode: 'encode', text: bytes, inputEncoding: 'hex' })).base64, '+/8=')
  t.equal(
    okBody<Out>(
      await runInline(handler, { mode: 'encode', text: bytes, inputEncoding: 'hex', urlSafe: true, padding: false }),
    ).base64,
    '-_8',
  )
  t.equal(
    okBody<Out>(await runInline(handler, { mode: 'encode', text: bytes, inputEncoding: 'hex', urlSafe: true })).base64,
    '-_8=',
  )
  t.equal(okBody<Out>(await runInline(handler, { mode: 'encode', text: 'f', padding: false })).base64, 'Zg')
  t.equal(okBody<Out>(await runInline(handler, { mode: 'decode', text: '-_8', output: 'hex' })).hex, 'fbff')
  t.equal(okBody<Out>(await runInline(handler, { mode: 'decode', text: '+/8=', output: 'hex' })).hex, 'fbff')
  t.equal(
    okBody<Out>(await runInline(handler, { mode: 'decode', text: 'Zm9v\nYmFy' })).text,
    'foobar',
    'whitespace ignored',
  )
})

t.test('binary output: raw bytes, or JSON when only JSON is accepted', async (t) => {
  const raw = okResult(await runInline(handler, { mode: 'decode', text: '/wA=', output: 'binary' }))
  t.equal(raw.contentType, 'application/octet-stream')
  t.same(Array.from(raw.body as Uint8Array), [255, 0])
  const json = okResult(
    await runInline(handler, { mode: 'decode', text: '/wA=', output: 'binary' }, { accept: 'application/json' }),
  )
  t.same(json.body, { hex: 'ff00', bytes: 2 })
})

t.test('GET query strings are coerced', async (t) => {
  t.equal(
    okBody<Out>(
      await runInline(
        handler,
        { mode: 'encode', text: 'fbff', inputEncoding: 'hex', urlSafe: 'true', padding: 'false' },
        { from: 'query' },
      ),
    ).base64,
    '-_8',
  )
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { mode: 'rot13', text: 'x' }), { ok: false, status: 400, field: 'mode' })
  t.match(await runInline(handler, { mode: 'decode', text: 'ab$c' }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { mode: 'decode', text: 'abcde' }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { mode: 'decode', text: 'a+b-' }), { ok: false, status: 400, field: 'text' })
  t.match(
    await runInline(handler, { mode: 'decode', text: '/w==' }),
    { ok: false, status: 400, field: 'output' },
    'invalid UTF-8',
  )
  t.match(await runInline(handler, { mode: 'encode', text: 'xyz', inputEncoding: 'hex' }), {
    ok: false,
    status: 400,
    field: 'text',
  })
  t.match(await runInline(handler, { mode: 'encode', text: 'x', urlSafe: 'yes' }), {
    ok: false,
    status: 400,
    field: 'urlSafe',
  })
})

t.test('text over the documented 1,000,000-character limit is rejected', async (t) => {
  t.match(await runInline(handler, { mode: 'encode', text: 'a'.repeat(1_000_001) }), {
    ok: false,
    status: 400,
    field: 'text',
  })
})
