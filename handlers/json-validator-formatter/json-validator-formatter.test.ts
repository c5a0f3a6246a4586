import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Out = {
  valid: boolean
  error?: { message: string; position: number; line: number; column: number }
  formatted?: string
  type?: string
  depth?: number
  schemaValid?: boolean
  schemaErrors?: { path: string; keyword: string; message: string }[]
}

t.test('example: sorted, pretty, schema passes', async (t) => {
  const out = okBody<Out>(await runInline(handler, handler.example))
  t.equal(out.formatted, '{\n  "a": "x",\n  "b": [\n    1,\n    2,\n    {\n      "c": null\n    }\n  ]\n}')
  t.equal(out.schemaValid, true)
  t.same(out.schemaErrors, [])
  t.equal(out.type, 'object')
  t.equal(out.depth, 3)
})

t.test('minify, tabs, scalars', async (t) => {
  t.equal(
    okBody<Out>(await runInline(handler, { json: ' { "a" : [ 1 , 2 ] } ', format: 'minify' })).formatted,
    '{"a":[1,2]}',
  )
  t.equal(okBody<Out>(await runInline(handler, { json: '{"a":1}', useTabs: true })).formatted, '{\n\t"a": 1\n}')
  t.same(okBody<Out>(await runInline(handler, { json: '42' })), {
    valid: true,
    formatted: '42',
    type: 'number',
    depth: 0,
  })
})

t.test('syntax errors are reported with line and column', async (t) => {
  const out = okBody<Out>(await runInline(handler, { json: '{\n  "a": 1,\n}' }))
  t.equal(out.valid, false)
  t.match(out.error, { position: 12, line: 3, column: 1 })
  t.notOk(out.formatted)
  const empty = okBody<Out>(await runInline(handler, { json: '' }))
  t.equal(empty.valid, false, 'empty text is not JSON')
  t.match(empty.error, { position: 0, line: 1, column: 1 })
})

t.test('schema violations are listed', async (t) => {
  const schema = {
    type: 'object',
    required: ['id', 'email'],
    properties: {
      id: { type: 'integer', minimum: 1 },
      email: { type: 'string', format: 'email' },
      code: { type: 'string', pattern: '^[A-Z]{3}$' },
    },
  }
  const out = okBody<Out>(await runInline(handler, { json: '{"id":0,"code":"ab"}', schema }))
  t.equal(out.valid, true)
  t.equal(out.schemaValid, false)
  t.same(out.schemaErrors!.map((e) => `${e.path} ${e.keyword}`).sort(), ['/ required', '/code pattern', '/id minimum'])
  const good = okBody<Out>(await runInline(handler, { json: '{"id":3,"email":"a@b.co","code":"ABC"}', schema }))
  t.equal(good.schemaValid, true)
})

t.test('draft 2020-12 schemas use the 2020 dialect', async (t) => {
  const schema = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'array',
    prefixItems: [{ type: 'number' }, { type: 'string' }],
  }
  t.equal(okBody<Out>(await runInline(handler, { json: '[1,"x"]', schema })).schemaValid, true)
  t.equal(okBody<Out>(await runInline(handler, { json: '["x",1]', schema })).schemaValid, false)
})

t.test('hostile schema pattern runs in linear time (RE2)', async (t) => {
  const start = Date.now()
  const out = okBody<Out>(
    await runInline(handler, {
      json: JSON.stringify('a'.repeat(50_000) + '!'),
      schema: { type: 'string', pattern: '^(a+)+$' },
    }),
  )
  t.equal(out.schemaValid, false)
  t.ok(Date.now() - start < 2000, 'returns quickly')
  t.match(
    await runInline(handler, { json: '"a"', schema: { pattern: '(?=a)' } }),
    { ok: false, status: 400, field: 'schema' },
    'lookahead is refused',
  )
})

t.test('GET query strings: schema as JSON text, booleans coerced', async (t) => {
  const out = okBody<Out>(
    await runInline(
      handler,
      { json: '{"b":1,"a":2}', sortKeys: 'true', format: 'minify', schema: '{"type":"object"}' },
      { from: 'query' },
    ),
  )
  t.equal(out.formatted, '{"a":2,"b":1}')
  t.equal(out.schemaValid, true)
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'json' })
  t.match(await runInline(handler, { json: '1', indent: 9 }), { ok: false, status: 400, field: 'indent' })
  t.match(await runInline(handler, { json: '1', schema: '{not json' }), { ok: false, status: 400, field: 'schema' })
  t.match(await runInline(handler, { json: '1', schema: { type: 'nonsense' } }), {
    ok: false,
    status: 400,
    field: 'schema',
  })
  t.match(await runInline(handler, { json: '1', schema: 5 }), { ok: false, status: 400, field: 'schema' })
})

t.test('documented limits: 1,000,000 characters, 1,000 levels', async (t) => {
  t.match(await runInline(handler, { json: ' '.repeat(1_000_001) }), { ok: false, status: 400, field: 'json' })
  t.match(await runInline(handler, { json: '['.repeat(1001) + ']'.repeat(1001) }), {
    ok: false,
    status: 413,
    field: 'json',
  })
  t.equal(
    okBody<Out>(await runInline(handler, { json: '['.repeat(1000) + ']'.repeat(1000), format: 'minify' })).depth,
    1000,
  )
})
