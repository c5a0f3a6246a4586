import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const uuids = async (input: Record<string, unknown>, from?: 'query') =>
  okBody<{ uuids: string[] }>(await runInline(handler, input, { from })).uuids
const SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

t.test('example: three sortable v7 ids', async (t) => {
  const ids = await uuids({ ...handler.example })
  t.equal(ids.length, 3)
  for (const id of ids) t.equal(SHAPE.exec(id)?.[1], '7')
  t.same([...ids].sort(), ids, 'time ordered')
})

t.test('each time and random version has its version nibble and RFC variant', async (t) => {
  for (const v of ['v1', 'v4', 'v6', 'v7']) {
    const ids = await uuids({ version: v, count: 5 })
    t.equal(new Set(ids).size, 5, `${v} unique`)
    for (const id of ids) t.equal(SHAPE.exec(id)?.[1], v.slice(1), `${v}: ${id}`)
  }
})

t.test('name-based v3/v5 known answers (RFC 9562 appendix and the uuid package docs)', async (t) => {
  t.same(await uuids({ version: 'v5', name: 'www.example.com', namespace: 'dns' }), [
    '2ed6657d-e927-568b-95e1-2665a8aea6a2',
  ])
  t.same(await uuids({ version: 'v3', name: 'www.example.com', namespace: 'dns' }), [
    '5df41881-3aed-3515-88a7-2f4a814cf09e',
  ])
  t.same(await uuids({ version: 'v5', name: 'www.example.com', namespace: '6ba7b810-9dad-11d1-80b4-00c04fd430c8' }), [
    '2ed6657d-e927-568b-95e1-2665a8aea6a2',
  ])
  t.same(
    await uuids({ version: 'v5', name: '', namespace: 'url' }),
    await uuids({ version: 'v5', name: '', namespace: 'url' }),
    'empty name is deterministic',
  )
})

t.test('formats and case', async (t) => {
  const [compact] = await uuids({ version: 'v4', format: 'compact', uppercase: true })
  t.match(compact, /^[0-9A-F]{32}$/)
  const [urn] = await uuids({ version: 'v4', format: 'urn' })
  t.match(urn, /^urn:uuid:[0-9a-f-]{36}$/)
})

t.test('count bounds: 100 allowed, 101 rejected', async (t) => {
  t.equal((await uuids({ count: 100 })).length, 100)
  t.match(await runInline(handler, { count: 101 }), { ok: false, status: 400, field: 'count' })
  t.match(await runInline(handler, { count: 0 }), { ok: false, status: 400, field: 'count' })
})

t.test('GET query strings are coerced', async (t) => {
  const ids = await uuids({ version: 'v7', count: '4', uppercase: 'true' }, 'query')
  t.equal(ids.length, 4)
  t.match(ids[0], /^[0-9A-F-]{36}$/)
  t.equal((await uuids({})).length, 1, 'empty input gives one v4')
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { version: 'v9' }), { ok: false, status: 400, field: 'version' })
  t.match(await runInline(handler, { version: 'v5' }), { ok: false, status: 400, field: 'name' })
  t.match(await runInline(handler, { version: 'v5', name: 'x', namespace: 'nope' }), {
    ok: false,
    status: 400,
    field: 'namespace',
  })
  t.match(await runInline(handler, { version: 'v3', name: 'x', count: 2 }), { ok: false, status: 400, field: 'count' })
  t.match(await runInline(handler, { version: 'v5', name: 'x'.repeat(10_001) }), {
    ok: false,
    status: 400,
    field: 'name',
  })
})
