import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('against a local receiver', async (t) => {
  const received: Array<{ method: string; url: string; headers: Record<string, unknown>; body: string }> = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      })
      if (req.url === '/fail') return res.writeHead(500, { 'content-type': 'text/plain' }).end('boom')
      if (req.url === '/moved') return res.writeHead(302, { location: '/elsewhere' }).end()
      if (req.url === '/big') return res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(100_000))
      res
        .writeHead(202, { 'content-type': 'application/json', 'x-receiver': 'stand-in' })
        .end(JSON.stringify({ accepted: true, echo: req.method }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  t.test('a JSON POST with custom headers', async (t) => {
    const out = okBody(
      await runInline(handler, {
        url: `${base}/hook?x=1`,
        json: { event: 'order.paid', amount: 12.5 },
        headers: { 'X-Event': 'order.paid', Authorization: 'Bearer t0k' },
      }),
    )
    const got = received.at(-1)!
    t.equal(got.method, 'POST')
    t.equal(got.url, '/hook?x=1')
    t.same(JSON.parse(got.body), { event: 'order.paid', amount: 12.5 })
    t.equal(got.headers['content-type'], 'application/json')
    t.equal(got.headers['x-event'], 'order.paid')
    t.equal(got.headers.authorization, 'Bearer t0k')
    t.equal(out.success, true)
    t.match(out.response, { status: 202, contentType: 'application/json', truncated: false })
    t.equal(out.response.headers['x-receiver'], 'stand-in')
    t.same(JSON.parse(out.response.bodyExcerpt), { accepted: true, echo: 'POST' })
    t.equal(out.request.bodyBytes, Buffer.byteLength(got.body))
    t.equal(out.request.signature, null)
    t.equal(out.redirect, null)
    t.type(out.timing.totalMs, 'number')
  })

  t.test('HMAC-SHA256 signature of a text body (RFC 4231-style known vector)', async (t) => {
    const out = okBody(
      await runInline(handler, {
        url: `${base}/signed`,
        method: 'PUT',
        text: 'The quick brown fox jumps over the lazy dog',
        secret: 'key',
        signatureHeader: 'X-Hub-Signature-256',
      }),
    )
    const expected = 'sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8'
    const got = received.at(-1)!
    t.equal(got.method, 'PUT')
    t.equal(got.headers['x-hub-signature-256'], expected)
    t.equal(got.headers['content-type'], 'text/plain; charset=utf-8')
    t.match(out.request.signature, { header: 'X-Hub-Signature-256', value: expected, format: /HMAC-SHA256/ })
  })

  t.test('a failing endpoint, a redirect, a large answer', async (t) => {
    const fail = okBody(await runInline(handler, { url: `${base}/fail`, json: {} }))
    t.equal(fail.success, false)
    t.match(fail.response, { status: 500, bodyExcerpt: 'boom' })
    const before = received.length
    const moved = okBody(await runInline(handler, { url: `${base}/moved`, json: {} }))
    t.equal(moved.success, false)
    t.same(moved.redirect, { status: 302, location: '/elsewhere' })
    t.equal(received.length, before + 1, 'the redirect was not followed')
    const big = okBody(await runInline(handler, { url: `${base}/big`, method: 'GET' }, { from: 'query' }))
    t.match(big.response, { status: 200, bodyBytes: 65536, truncated: true })
    t.equal(big.response.bodyExcerpt.length, 2048)
    t.equal(big.request.bodyBytes, 0)
  })

  t.test('no answer is a finding, not an error', async (t) => {
    const dead = createServer()
    await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve))
    const port = (dead.address() as AddressInfo).port
    await new Promise<void>((resolve) => dead.close(() => resolve()))
    const out = okBody(await runInline(handler, { url: `http://127.0.0.1:${port}/`, json: {} }))
    t.equal(out.success, false)
    t.equal(out.response, null)
    t.match(out.error, /ECONNREFUSED/)
  })

  t.test('the body limit is 64 KB', async (t) => {
    okBody(await runInline(handler, { url: `${base}/ok`, text: 'a'.repeat(65_536) }))
    t.equal(received.at(-1)!.body.length, 65_536)
    t.match(await runInline(handler, { url: `${base}/ok`, text: 'a'.repeat(65_537) }), {
      ok: false,
      status: 400,
      field: 'text',
    })
    t.match(await runInline(handler, { url: `${base}/ok`, json: { a: 'b'.repeat(65_530) } }), {
      ok: false,
      status: 413,
      field: 'json',
    })
  })
})

t.test('internal targets are refused outside tests', async (t) => {
  t.match(await runInline(handler, { url: 'http://127.0.0.1:9/hook' }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'url',
  })
  t.match(await runInline(handler, { url: 'http://localhost/hook' }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'url',
  })
  t.match(
    await runInline(handler, { url: 'http://169.254.169.254/latest/meta-data' }, { allowPrivateNetwork: false }),
    { ok: false, status: 400, field: 'url' },
  )
})

t.test('bad input names the field', async (t) => {
  const url = 'https://example.com/hook'
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'url' })
  t.match(await runInline(handler, { url: 'not a url' }), { ok: false, status: 400, field: 'url' })
  t.match(await runInline(handler, { url: 'ftp://example.com/x' }), { ok: false, status: 400, field: 'url' })
  t.match(await runInline(handler, { url, json: {}, text: 'x' }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { url, method: 'GET', json: {} }), { ok: false, status: 400, field: 'method' })
  t.match(await runInline(handler, { url, method: 'TRACE' }), { ok: false, status: 400, field: 'method' })
  t.match(await runInline(handler, { url, headers: { Host: 'evil.example' } }), {
    ok: false,
    status: 400,
    field: 'headers.Host',
  })
  t.match(await runInline(handler, { url, headers: { 'Bad Header': 'x' } }), {
    ok: false,
    status: 400,
    field: /headers/,
  })
  t.match(await runInline(handler, { url, headers: { 'X-A': 'line\r\nInjected: 1' } }), {
    ok: false,
    status: 400,
    field: 'headers.X-A',
  })
  t.match(await runInline(handler, { url, timeoutMs: 60_000 }), { ok: false, status: 400, field: 'timeoutMs' })
  t.match(await runInline(handler, { url, secret: '' }), { ok: false, status: 400, field: 'secret' })
})
