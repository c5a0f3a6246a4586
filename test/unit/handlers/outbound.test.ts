import { createServer, type Server } from 'node:http'
import t from 'tap'
import {
  callProvider,
  fetchPublicUrl,
  providerJson,
  providerSetting,
  resolvePublicHost,
} from '../../../handlers/_shared/outbound.js'
import { HandlerInputError, HandlerUpstreamError, type HandlerContext } from '../../../src/pool/handler-contract.js'

const ctx = (o: Partial<HandlerContext> = {}): HandlerContext => ({
  method: 'GET',
  accept: '*/*',
  providers: {},
  allowPrivateNetwork: false,
  ...o,
})

async function serve(
  t: { teardown(fn: () => unknown): void },
  handler: Parameters<typeof createServer>[1],
): Promise<string> {
  const server: Server = createServer(handler)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => server.close(r)))
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`
}

t.test('a missing provider setting is 503 upstream_not_configured naming the variable', async (t) => {
  const err = t.throws(() => providerSetting(ctx(), 'SOME_API_KEY', 'web search')) as unknown as HandlerUpstreamError
  t.type(err, HandlerUpstreamError)
  t.equal(err.code, 'upstream_not_configured')
  t.match(err.message, /SOME_API_KEY/)
  t.equal(providerSetting(ctx({ providers: { SOME_API_KEY: ' k ' } }), 'SOME_API_KEY'), 'k')
})

t.test('provider failures are 502 upstream_failed, never the body or the key', async (t) => {
  const base = await serve(t, (req, res) => {
    if (req.url === '/ok') return res.end(JSON.stringify({ fine: true }))
    if (req.url === '/text') return res.end('not json')
    if (req.url === '/big') return res.end('x'.repeat(2000))
    res.statusCode = 500
    res.end('secret stack trace')
  })
  t.same(await providerJson('Stand-in', `${base}/ok`), { fine: true })
  const fail = async (p: Promise<unknown>, re: RegExp) => {
    const err = await p.then(
      () => null,
      (e) => e,
    )
    t.type(err, HandlerUpstreamError)
    t.equal(err.code, 'upstream_failed')
    t.match(err.message, re)
    t.notMatch(err.message, /secret/)
  }
  await fail(providerJson('Stand-in', `${base}/boom`), /Stand-in answered HTTP 500/)
  await fail(providerJson('Stand-in', `${base}/text`), /not JSON/)
  await fail(callProvider('Stand-in', `${base}/big`, { maxBytes: 100 }), /larger than 100 bytes/)
  await fail(callProvider('Stand-in', 'http://127.0.0.1:1/'), /could not be reached/)
})

t.test('public fetches refuse internal targets unless the test switch allows them', async (t) => {
  const base = await serve(t, (req, res) => {
    if (req.url === '/hop') {
      res.statusCode = 302
      res.setHeader('location', '/final')
      return res.end()
    }
    res.end(req.url === '/final' ? 'arrived' : 'x'.repeat(5000))
  })
  for (const url of [
    `${base}/final`,
    'http://localhost/',
    'http://[::1]/',
    'http://169.254.169.254/latest/meta-data/',
    'http://10.0.0.1/',
  ]) {
    const err = await fetchPublicUrl(url, ctx(), { field: 'url' }).then(
      () => null,
      (e) => e,
    )
    t.type(err, HandlerInputError, `${url} refused`)
    t.equal(err.field, 'url')
  }
  const bad = await fetchPublicUrl('file:///etc/passwd', ctx(), { field: 'url' }).then(
    () => null,
    (e) => e,
  )
  t.match(bad, { field: 'url', message: /http or https/ })
  const hop = await fetchPublicUrl(`${base}/hop`, ctx({ allowPrivateNetwork: true }), { field: 'url' })
  t.equal(hop.body.toString(), 'arrived')
  t.equal(hop.finalUrl, `${base}/final`)
  t.same(hop.redirects, [{ url: `${base}/hop`, status: 302 }])
  const cut = await fetchPublicUrl(`${base}/long`, ctx({ allowPrivateNetwork: true }), { field: 'url', maxBytes: 100 })
  t.equal(cut.body.length, 100)
  t.equal(cut.truncated, true)
  // a host name that does not exist is the buyer's input (422 on the field), as resolvePublicHost says;
  // the same name reached through a redirect is the site's fault (502)
  const nx = await fetchPublicUrl('http://nowhere.invalid/', ctx(), { field: 'url' }).then(
    () => null,
    (e) => e,
  )
  t.match(nx, { field: 'url', statusCode: 422, message: 'url: nowhere.invalid does not resolve' })
  t.type(nx, HandlerInputError)
  const toNowhere = await serve(t, (_req, res) => res.writeHead(302, { location: 'http://nowhere.invalid/' }).end())
  const viaRedirect = await fetchPublicUrl(toNowhere, ctx({ allowPrivateNetwork: true }), { field: 'url' }).then(
    () => null,
    (e) => e,
  )
  t.match(viaRedirect, { code: 'upstream_failed', message: /nowhere\.invalid could not be fetched/ })
  await t.rejects(resolvePublicHost('127.0.0.1', ctx(), 'host'), HandlerInputError)
  t.same(await resolvePublicHost('127.0.0.1', ctx({ allowPrivateNetwork: true }), 'host'), [
    { address: '127.0.0.1', family: 4 },
  ])
})
