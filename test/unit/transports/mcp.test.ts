import t from 'tap'
import type { FastifyBaseLogger } from 'fastify'
import { contentOf, createMcpTransport, toolMethod, type McpToolCall } from '../../../src/transports/mcp.js'

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

t.test('a sign-in proof in _meta reaches the stages as the SIGN-IN-WITH-X header carries it', async (t) => {
  const mcp = createMcpTransport({ caip2: 'eip155:84532' })
  const call = (meta: Record<string, unknown> | undefined): McpToolCall => ({
    path: '/acme/docs/render',
    methods: new Set(['POST']),
    resourceUrl: URL_,
    arguments: {},
    meta,
    headers: { 'sign-in-with-x': 'from-the-http-header' },
    log: {} as FastifyBaseLogger,
  })
  const proof = { domain: '127.0.0.1:4021', address: '0xabc', signature: '0x01' }
  const b64 = Buffer.from(JSON.stringify(proof)).toString('base64')
  t.equal(mcp.request(call({ 'sign-in-with-x': proof })).signIn, b64, 'the JSON object, base64-encoded')
  t.equal(mcp.request(call({ 'sign-in-with-x': b64 })).signIn, b64, 'the base64 string as it is')
  t.equal(
    mcp.request(call({ 'sign-in-with-x': null })).signIn,
    Buffer.from('null').toString('base64'),
    'anything else is passed on for the decoder to refuse',
  )
  t.equal(mcp.request(call({})).signIn, undefined, 'none without the key')
  t.equal(mcp.request(call(undefined)).signIn, undefined, 'the HTTP header of the MCP request is not a proof')
  t.equal(mcp.request(call({ 'sign-in-with-x': proof })).payment, undefined, 'and no payment')
})

t.test('an answer served on a sign-in is a tool result without a receipt; a failure is isError', async (t) => {
  const mcp = createMcpTransport({ caip2: 'eip155:84532' })
  const call = { resourceUrl: URL_, log: {} } as McpToolCall
  const ok = await mcp.send(call, { kind: 'answer', status: 200, contentType: 'application/json', body: '{"a":1}' })
  t.same(ok, { content: [{ type: 'text', text: '{"a":1}' }], structuredContent: { a: 1 } })
  const failed = await mcp.send(call, { kind: 'answer', status: 500, contentType: 'text/plain', body: 'broken' })
  t.same(failed, { isError: true, content: [{ type: 'text', text: 'broken' }], _meta: { 'tollgate/status': 500 } })
})
