import { promises as dns } from 'node:dns'
import { createServer, type Server } from 'node:http'
import t, { type Test } from 'tap'
import { fetchPublicUrl, resolvePublicHost } from '../../handlers/_shared/outbound.js'
import { HandlerInputError, type HandlerContext } from '../../src/pool/handler-contract.js'
import { createUpstreamClient } from '../../src/proxy/upstream.js'
import { isPrivateAddress } from '../../src/net/ssrf-guard.js'

// Spellings of internal addresses that URL parsers, resolvers and the kernel all accept.
const LOOPBACK_FORMS = [
  '127.0.0.1',
  '2130706433',
  '0177.0.0.1',
  '0x7f.1',
  '127.1',
  '0.0.0.0',
  '0',
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '[0:0:0:0:0:ffff:7f00:1]',
  '[::]',
  '[::1]',
  '[64:ff9b::7f00:1]',
  '[::7f00:1]',
  '[2002:7f00:1::1]',
]

/** A local name that resolves to loopback (from /etc/hosts), if this machine has one besides localhost. */
async function loopbackName(): Promise<string | undefined> {
  for (const name of ['vm', 'runsc', 'localhost.localdomain', 'ip6-localhost']) {
    const found = await dns.lookup(name, { all: true }).catch(() => [])
    if (found.length > 0 && found.every((a) => isPrivateAddress(a.address))) return name
  }
  return undefined
}

async function serve(t: Test, handler: Parameters<typeof createServer>[1]): Promise<number> {
  const server: Server = createServer(handler)
  await new Promise<void>((r) => server.listen(0, '0.0.0.0', r))
  t.teardown(() => new Promise((r) => server.close(r)))
  return (server.address() as { port: number }).port
}

const ctx = (allowPrivateNetwork: boolean): HandlerContext => ({
  method: 'GET',
  accept: '*/*',
  providers: {},
  allowPrivateNetwork,
})

t.test(
  'buyer-named URLs: every spelling of loopback, and names resolving to it, are refused with a 400 on the field',
  async (t) => {
    let hits = 0
    const port = await serve(t, (_req, res) => (hits++, res.end('internal')))
    const name = await loopbackName()
    const hosts = [...LOOPBACK_FORMS, 'LOCALHOST', 'evil.localhost', ...(name ? [name] : [])]
    for (const host of hosts) {
      const err = await fetchPublicUrl(`http://${host}:${port}/`, ctx(false), { field: 'url' }).then(
        () => null,
        (e: unknown) => e,
      )
      t.type(err, HandlerInputError, `fetch ${host} refused`)
      t.match(err, { field: 'url', statusCode: 400 })
    }
    for (const host of ['2130706433', '0x7f.1', '::ffff:7f00:1', '[::ffff:127.0.0.1]', '0', ...(name ? [name] : [])]) {
      await t.rejects(resolvePublicHost(host, ctx(false), 'host'), HandlerInputError, `resolve ${host} refused`)
    }
    const creds = await fetchPublicUrl(`http://evil.example@127.0.0.1:${port}/`, ctx(false), { field: 'url' }).then(
      () => null,
      (e: unknown) => e,
    )
    t.match(creds, { field: 'url', message: /credentials/ })
    for (const url of [
      'file:///etc/passwd',
      'gopher://127.0.0.1:6379/_PING',
      'ftp://127.0.0.1/',
      'data:text/plain,x',
    ]) {
      t.match(
        await fetchPublicUrl(url, ctx(false), { field: 'url' }).then(
          () => null,
          (e: unknown) => e,
        ),
        { field: 'url', message: /http or https/ },
        url,
      )
    }
    t.equal(hits, 0, 'nothing internal was reached')
    if (!name) t.comment('no local name resolving to loopback on this machine: the resolved-name case was not run')
  },
)

t.test('a redirect to an internal address is refused on that hop, whatever its spelling', async (t) => {
  const name = await loopbackName()
  let firstHops = 0
  let internalHits = 0
  const port = await serve(t, (req, res) => {
    if (req.url!.startsWith('/hop')) {
      firstHops++
      res.statusCode = 302
      res.setHeader('location', decodeURIComponent(req.url!.slice('/hop?to='.length)))
      return res.end()
    }
    internalHits++
    res.end('internal')
  })
  // the first hop stands for a public host: only it is let through (the switch reads true until that host has answered)
  const targets = [
    ...LOOPBACK_FORMS.map((h) => `http://${h}:${port}/internal`),
    'http://169.254.169.254/latest/meta-data/',
    'http://10.0.0.1/',
    ...(name ? [`http://${name}:${port}/internal`] : []),
  ]
  for (const target of targets) {
    const before = firstHops
    const once = {
      method: 'GET' as const,
      accept: '*/*',
      providers: {},
      get allowPrivateNetwork() {
        return firstHops === before
      },
    }
    const err = await fetchPublicUrl(`http://127.0.0.1:${port}/hop?to=${encodeURIComponent(target)}`, once, {
      field: 'url',
    }).then(
      () => null,
      (e: unknown) => e,
    )
    t.equal(firstHops, before + 1, `${target}: the first hop was fetched`)
    t.type(err, HandlerInputError, `${target}: the redirect is refused`)
    t.match(err, { field: 'url', statusCode: 400 })
  }
  t.equal(internalHits, 0, 'no redirect reached the internal target')
})

t.test(
  'seller upstreams: the proxy refuses every spelling of loopback and names resolving to it (ESSRF), before anything is sent',
  async (t) => {
    let hits = 0
    const port = await serve(t, (_req, res) => (hits++, res.end('internal')))
    const name = await loopbackName()
    const up = createUpstreamClient({ allowPrivate: false })
    t.teardown(() => up.close())
    for (const host of [...LOOPBACK_FORMS, 'localhost', ...(name ? [name] : [])]) {
      const err = await up
        .forward({
          origin: `http://${host}:${port}`,
          subPath: '',
          method: 'GET',
          headers: {},
          body: undefined,
          options: {},
          paymentId: 'p',
        })
        .then(
          () => null,
          (e: unknown) => e,
        )
      t.match(err, { code: 'ESSRF' }, `${host} refused`)
    }
    t.equal(hits, 0, 'nothing internal was reached')
  },
)
