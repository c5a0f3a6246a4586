import t from 'tap'
import { contentOf, toolMethod } from '../../../src/transports/mcp.js'

const URL_ = 'http://127.0.0.1:4021/acme/docs/render'

t.test('a tool is called as POST when offered, else GET, else what the endpoint offers', async (t) => {
  t.equal(toolMethod(new Set(['GET', 'POST'])), 'POST')
  t.equal(toolMethod(new Set(['GET'])), 'GET')
  t.equal(toolMethod(new Set(['DELETE'])), 'DELETE')
  t.equal(toolMethod(undefined), 'POST', 'an unknown tool: the stages answer not_found whatever the method')
})

t.test('an answer becomes MCP content by its content type', async (t) => {
  const json = contentOf(Buffer.from('{"a":1}'), 'application/json; charset=utf-8', URL_)
  t.same(
    json,
    { content: [{ type: 'text', text: '{"a":1}' }], structured: { a: 1 } },
    'a JSON object: text and structuredContent',
  )
  t.same(
    contentOf(Buffer.from('[1,2]'), 'application/json', URL_),
    { content: [{ type: 'text', text: '[1,2]' }], structured: undefined },
    'a JSON array: text only',
  )
  t.same(
    contentOf(Buffer.from('{nope'), 'application/problem+json', URL_).content,
    [{ type: 'text', text: '{nope' }],
    'JSON that does not parse: text',
  )
  t.same(contentOf(Buffer.from('a,b'), 'text/csv', URL_).content, [{ type: 'text', text: 'a,b' }])
  t.same(contentOf(Buffer.from('<svg/>'), 'image/svg+xml', URL_).content, [
    { type: 'image', data: Buffer.from('<svg/>').toString('base64'), mimeType: 'image/svg+xml' },
  ])
  t.same(contentOf(Buffer.from([1, 2]), 'audio/wav', URL_).content, [
    { type: 'audio', data: 'AQI=', mimeType: 'audio/wav' },
  ])
  t.same(
    contentOf(Buffer.from('%PDF'), 'application/pdf', URL_).content,
    [
      {
        type: 'resource',
        resource: { uri: URL_, mimeType: 'application/pdf', blob: Buffer.from('%PDF').toString('base64') },
      },
    ],
    'anything else: an embedded resource',
  )
  t.same(
    contentOf(Buffer.from([0]), undefined, URL_).content,
    [{ type: 'resource', resource: { uri: URL_, mimeType: 'application/octet-stream', blob: 'AA==' } }],
    'no type: octet-stream',
  )
})
