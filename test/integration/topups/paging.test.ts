import t from 'tap'
import type { Deps } from '../../../src/deps.js'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

/** `count` past top-ups of an agent, inserted directly (paying them on a chain would take minutes). */
async function insertTopups(deps: Deps, address: string, count: number, from = 1): Promise<void> {
  const agent = await deps.db.selectFrom('agents').select('id').where('address', '=', address).executeTakeFirstOrThrow()
  const rows = Array.from({ length: count }, (_, i) => ({
    agent_id: agent.id,
    need_seq: from + i,
    // at most one open top-up per agent (topups_one_open_per_agent): past ones are settled or failed
    status: (i % 3 === 0 ? 'failed' : 'confirmed') as 'failed' | 'confirmed',
    agent_address: address,
    amount: '20000000',
    threshold: '5000000',
    balance_seen: '1000',
    block_seen: 100 + from + i,
  }))
  await deps.db.insertInto('topups').values(rows).execute()
}

interface Page {
  object: string
  data: { object: string; need: number }[]
  has_more: boolean
  next_cursor: string | null
}

t.test('GET /v1/agents/{address}/top-ups pages past 100, newest first', async (t) => {
  const { deps, app } = await accountsApp(t)
  const { auth } = await userWithKey(deps)
  const other = await userWithKey(deps)
  // agent names are unique per user
  const create = async (name: string) =>
    (await app.inject({ method: 'POST', url: '/v1/agents', headers: auth, payload: { name } })).json().address as string
  const busy = await create('busy-buyer')
  const quiet = await create('quiet-buyer')
  await insertTopups(deps, busy, 250)
  await insertTopups(deps, quiet, 3)
  const get = async (address: string, qs = '', headers = auth) => {
    const res = await app.inject({ method: 'GET', url: `/v1/agents/${address}/top-ups${qs}`, headers })
    return { res, body: res.json() as Page }
  }
  const needs = (p: Page) => p.data.map((d) => d.need)
  const range = (from: number, to: number) => Array.from({ length: from - to + 1 }, (_, i) => from - i)

  t.test('without parameters: the newest 100, as before paging, and a cursor to the rest', async (t) => {
    const { res, body } = await get(busy)
    t.equal(res.statusCode, 200)
    t.equal(body.object, 'list')
    t.same(needs(body), range(250, 151))
    t.ok(body.data.every((d) => d.object === 'top_up'))
    t.equal(body.has_more, true)
    t.type(body.next_cursor, 'string')
  })

  t.test('following next_cursor lists every top-up once, in order', async (t) => {
    for (const limit of [undefined, 7, 100]) {
      const seen: number[] = []
      const sizes: number[] = []
      let qs = limit ? `?limit=${limit}` : ''
      for (let i = 0; i < 100; i++) {
        const { res, body } = await get(busy, qs)
        t.equal(res.statusCode, 200)
        seen.push(...needs(body))
        sizes.push(body.data.length)
        if (!body.has_more) {
          t.equal(body.next_cursor, null, 'the last page has no cursor')
          break
        }
        qs = `?${limit ? `limit=${limit}&` : ''}cursor=${body.next_cursor}`
      }
      t.same(seen, range(250, 1), `limit=${limit ?? 'default'}: all 250, newest first`)
      if (limit !== 7) t.same(sizes, [100, 100, 50], `limit=${limit ?? 'default'}: pages of 100`)
    }
  })

  t.test('a top-up opened between pages does not shift the next page', async (t) => {
    const first = (await get(busy, '?limit=10')).body
    await insertTopups(deps, busy, 1, 251)
    const second = (await get(busy, `?limit=10&cursor=${first.next_cursor}`)).body
    t.same(needs(second), range(240, 231))
    t.same(needs((await get(busy, '?limit=1')).body), [251], 'a new first page shows it')
  })

  t.test('a short list is one page', async (t) => {
    const { body } = await get(quiet)
    t.same(needs(body), [3, 2, 1])
    t.equal(body.has_more, false)
    t.equal(body.next_cursor, null)
  })

  t.test('bad limit or cursor is a 400 naming it; another agent or user is 404', async (t) => {
    for (const [qs, param] of [
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?limit=abc', 'limit'],
      ['?cursor=abc', 'cursor'],
      [`?cursor=${Buffer.from(JSON.stringify(['need', -1])).toString('base64url')}`, 'cursor'],
      [`?cursor=${Buffer.from('["x",1]').toString('base64url')}`, 'cursor'],
    ]) {
      const { res, body } = await get(busy, qs)
      t.equal(res.statusCode, 400, qs)
      t.match(body, { code: 'invalid_parameter', param }, qs)
    }
    t.equal((await get(busy, '', other.auth)).res.statusCode, 404, "another user's agent")
  })
})
