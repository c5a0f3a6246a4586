import t from 'tap'
import { SLUG } from '../../../../src/services/accounts/validate.js'
import { toolSlug } from '../../../../src/services/publishing/mcp-upstream.js'

t.test('a tool name as an endpoint slug: valid, readable, unique in the service', async (t) => {
  const none = new Set<string>()
  t.equal(toolSlug('get_quote', none), 'get-quote')
  t.equal(toolSlug('Search.Web', none), 'search-web')
  t.equal(toolSlug('__x__', none), 'tool-x', 'too short: prefixed')
  t.equal(toolSlug('名前', none), 'tool-x', 'nothing usable left')
  t.equal(toolSlug('mcp', none), 'mcp-tool', 'the reserved slug is not taken')
  t.equal(toolSlug('get_quote', new Set(['get-quote'])), 'get-quote-2')
  t.equal(toolSlug('get_quote', new Set(['get-quote', 'get-quote-2'])), 'get-quote-3')
  const long = toolSlug('a_very_long_tool_name_that_goes_on_and_on_and_on', none)
  t.ok(long.length <= 40 && SLUG.test(long), long)
  for (const name of ['a', 'A-B', 'x--y', '-lead', 'trail_', '123', 'get quote now'])
    t.ok(SLUG.test(toolSlug(name, none)) && !toolSlug(name, none).includes('--'), name)
})
