import t from 'tap'
import { compileInputValidator } from '../../../src/pool/input-validator.js'

const schema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    tags: { type: 'array', items: { type: 'string' } },
    point: { type: 'object', additionalProperties: false, properties: { x: { type: 'number' } } },
    text: { type: 'string' },
  },
}
const { validate } = compileInputValidator({ inputSchema: schema })

t.test('query strings: array and object fields may be JSON', async (t) => {
  const input: Record<string, unknown> = { tags: '["a","b"]', point: '{"x":2}', text: '["not parsed"]' }
  t.equal(validate(input, 'query'), null)
  t.same(input, { tags: ['a', 'b'], point: { x: 2 }, text: '["not parsed"]' }, 'string fields stay strings')
})

t.test('query strings: repeated and single values still work; what is not JSON stays a string', async (t) => {
  const repeated: Record<string, unknown> = { tags: ['a', 'b'] }
  t.equal(validate(repeated, 'query'), null)
  t.same(repeated.tags, ['a', 'b'])
  const single: Record<string, unknown> = { tags: '[a-z]' }
  t.equal(validate(single, 'query'), null)
  t.same(single.tags, ['[a-z]'], 'a regex-like value is one element, not a JSON error')
  t.same(
    validate({ point: '{"x":' }, 'query'),
    { field: 'point', message: 'point must be object' },
    'broken JSON is named',
  )
  t.same(
    validate({ point: '[1]' }, 'query'),
    { field: 'point', message: 'point must be object' },
    'JSON of the other kind is not taken',
  )
})

t.test('JSON bodies are not re-parsed', async (t) => {
  t.same(validate({ tags: '["a"]' }, 'body'), { field: 'tags', message: 'tags must be array' })
})
