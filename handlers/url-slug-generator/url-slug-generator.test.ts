import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Out = { slug: string; length: number; truncated: boolean }
const slug = async (input: Record<string, unknown>, from?: 'query') =>
  okBody<Out>(await runInline(handler, input, { from })).slug

t.test('example', async (t) => {
  t.same(okBody<Out>(await runInline(handler, handler.example)), {
    slug: 'deja-vu-10-tips-fuer-strassen-and-cafes',
    length: 39,
    truncated: false,
  })
})

t.test('transliteration', async (t) => {
  t.equal(await slug({ text: 'Привет, мир' }), 'privet-mir')
  t.equal(await slug({ text: 'Räksmörgås' }), 'raeksmoergas')
  t.equal(await slug({ text: 'Räksmörgås', locale: 'sv' }), 'raksmorgas')
  t.equal(await slug({ text: 'Räksmörgås', locale: 'de' }), 'raeksmoergas')
  t.equal(await slug({ text: 'Ελληνικά' }), 'ellinika')
  t.equal(await slug({ text: 'İstanbul Işık', locale: 'tr' }), 'istanbul-isik')
})

t.test('options: separator, case, camelCase, replacements', async (t) => {
  t.equal(await slug({ text: 'Hello World', separator: '_' }), 'hello_world')
  t.equal(await slug({ text: 'Hello World', lowercase: false }), 'Hello-World')
  t.equal(await slug({ text: 'fooBarBaz' }), 'foo-bar-baz')
  t.equal(await slug({ text: 'fooBarBaz', decamelize: false }), 'foobarbaz')
  t.equal(
    await slug({
      text: 'C++ & C#',
      replacements: [
        { from: '++', to: 'pp' },
        { from: '#', to: 'sharp' },
      ],
    }),
    'cpp-and-csharp',
  )
})

t.test('length limit keeps whole words', async (t) => {
  t.same(okBody<Out>(await runInline(handler, { text: 'the quick brown fox', maxLength: 12 })), {
    slug: 'the-quick',
    length: 9,
    truncated: true,
  })
  t.equal(await slug({ text: 'the quick brown fox', maxLength: 9 }), 'the-quick')
  t.equal(await slug({ text: 'supercalifragilistic', maxLength: 5 }), 'super')
})

t.test('empty and unconvertible input give an empty slug', async (t) => {
  t.same(okBody<Out>(await runInline(handler, { text: '' })), { slug: '', length: 0, truncated: false })
  t.equal(await slug({ text: '!!! ---' }), '')
})

t.test('GET query strings are coerced', async (t) => {
  t.equal(await slug({ text: 'A B C D', maxLength: '3', lowercase: 'false' }, 'query'), 'A-B')
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: 'a', separator: '/' }), { ok: false, status: 400, field: 'separator' })
  t.match(await runInline(handler, { text: 'a', maxLength: 0 }), { ok: false, status: 400, field: 'maxLength' })
  t.match(await runInline(handler, { text: 'a', locale: 'not a locale' }), { ok: false, status: 400, field: 'locale' })
  t.match(await runInline(handler, { text: 'a', replacements: [{ from: '', to: 'x' }] }), {
    ok: false,
    status: 400,
    field: 'replacements.0.from',
  })
})

t.test('documented limit: 10,000 characters', async (t) => {
  t.match(await runInline(handler, { text: 'a'.repeat(10_001) }), { ok: false, status: 400, field: 'text' })
})
