import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { standIn, type ReceivedRequest } from '../../test/helpers/provider-stand-in.js'
import handler from './index.js'

const TOKEN = 'bitly-token-abc'
// Bitly API v4 shapes, https://dev.bitly.com/api-reference (Shorten a Link; error bodies)
function bitly(req: ReceivedRequest) {
  if (req.headers.authorization !== `Bearer ${TOKEN}`)
    return {
      status: 403,
      json: {
        message: 'FORBIDDEN',
        description: 'You are currently forbidden to access this resource.',
        resource: 'bitlinks',
      },
    }
  if (req.method !== 'POST' || req.path !== '/v4/shorten') return { status: 404, json: { message: 'NOT_FOUND' } }
  const b = JSON.parse(req.body) as { long_url: string; domain?: string }
  if (b.domain === 'nope.example')
    return {
      status: 400,
      json: {
        message: 'INVALID_ARG_DOMAIN',
        resource: 'bitlinks',
        description: 'The value provided is invalid.',
        errors: [{ field: 'domain', error_code: 'invalid' }],
      },
    }
  if (b.long_url.includes('rejected'))
    return {
      status: 400,
      json: {
        message: 'INVALID_ARG_LONG_URL',
        resource: 'bitlinks',
        description: 'The value provided is invalid.',
        errors: [{ field: 'long_url', error_code: 'invalid' }],
      },
    }
  const domain = b.domain ?? 'bit.ly'
  return {
    status: 201,
    json: {
      created_at: '2024-11-23T10:15:30+0000',
      id: `${domain}/3Zk8Qab`,
      link: `https://${domain}/3Zk8Qab`,
      custom_bitlinks: [],
      long_url: b.long_url,
      archived: false,
      tags: [],
      deeplinks: [],
      references: { group: 'https://api-ssl.bitly.com/v4/groups/Bk1a2b3c4d5' },
    },
  }
}

t.test('against a Bitly stand-in', async (t) => {
  const p = await standIn(t, bitly)
  const providers = { BITLY_API_URL: p.url, BITLY_TOKEN: TOKEN }
  const run = (input: unknown, from: 'query' | 'body' = 'body') =>
    runInline(handler, input, { providers, from, allowPrivateNetwork: false })

  t.test('the example is shortened; the request carries the token and the long URL', async (t) => {
    const out = okBody(await run(handler.example))
    t.same(out, {
      link: 'https://bit.ly/3Zk8Qab',
      id: 'bit.ly/3Zk8Qab',
      longUrl: 'https://en.wikipedia.org/wiki/URL_shortening',
      createdAt: '2024-11-23T10:15:30+0000',
    })
    const sent = p.received.at(-1)!
    t.equal(sent.method, 'POST')
    t.equal(sent.path, '/v4/shorten')
    t.equal(sent.headers.authorization, `Bearer ${TOKEN}`)
    t.match(sent.headers['content-type'], /application\/json/)
    t.same(JSON.parse(sent.body), { long_url: 'https://en.wikipedia.org/wiki/URL_shortening' })
  })

  t.test('a branded domain is passed on', async (t) => {
    const out = okBody(await run({ url: 'http://example.com/a?b=c#d', domain: 'J.MP' }, 'query'))
    t.equal(out.link, 'https://j.mp/3Zk8Qab')
    t.same(JSON.parse(p.received.at(-1)!.body), { long_url: 'http://example.com/a?b=c#d', domain: 'j.mp' })
  })

  t.test('internal and non-http URLs are refused before Bitly is asked', async (t) => {
    const before = p.received.length
    for (const url of [
      'http://localhost:8080/x',
      'http://127.0.0.1/admin',
      'http://10.1.2.3/',
      'http://[::1]/',
      'http://169.254.169.254/latest/meta-data/',
      'http://printer.local/',
      'http://intranet/',
      'http://db.internal/x',
      'ftp://example.com/file',
      'javascript:alert(1)//x',
      'https://user:pw@example.com/',
    ]) {
      t.match(await run({ url }), { ok: false, status: 400, field: 'url' }, url)
    }
    t.equal(p.received.length, before, 'no request reached Bitly')
  })

  t.test('Bitly refusing the URL or the domain is 400 on that field', async (t) => {
    t.match(await run({ url: 'https://example.com/rejected' }), {
      ok: false,
      status: 400,
      field: 'url',
      message: /INVALID_ARG_LONG_URL/,
    })
    t.match(await run({ url: 'https://example.com/', domain: 'nope.example' }), {
      ok: false,
      status: 400,
      field: 'domain',
      message: /INVALID_ARG_DOMAIN/,
    })
  })

  t.test('bad input: 400 naming the field', async (t) => {
    t.match(await run({}), { ok: false, status: 400, field: 'url' })
    t.match(await run({ url: 'not a url at all' }), { ok: false, status: 400, field: 'url' })
    t.match(await run({ url: `https://example.com/${'a'.repeat(2048)}` }), { ok: false, status: 400, field: 'url' })
    t.match(await run({ url: 'https://example.com/', domain: 'bad domain' }), {
      ok: false,
      status: 400,
      field: 'domain',
    })
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), {
    code: 'upstream_not_configured',
    message: /BITLY_API_URL/,
  })
  const p = await standIn(t, bitly)
  await t.rejects(runInline(handler, handler.example, { providers: { BITLY_API_URL: p.url } }), {
    code: 'upstream_not_configured',
    message: /BITLY_TOKEN/,
  })
  const err = await runInline(handler, handler.example, {
    providers: { BITLY_API_URL: p.url, BITLY_TOKEN: 'wrong-token-zzz' },
  }).catch((e) => e)
  t.match(err, { code: 'upstream_failed', message: /403/ })
  t.notMatch(err.message, /wrong-token-zzz/)
  const limited = await standIn(t, () => ({
    status: 429,
    json: { message: 'MONTHLY_ENCODE_LIMIT_REACHED', resource: 'bitlinks' },
  }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { BITLY_API_URL: limited.url, BITLY_TOKEN: TOKEN } }),
    { code: 'upstream_failed', message: /429/ },
  )
  const odd400 = await standIn(t, () => ({
    status: 400,
    json: { message: 'INVALID_ARG_GROUP_GUID', resource: 'bitlinks' },
  }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { BITLY_API_URL: odd400.url, BITLY_TOKEN: TOKEN } }),
    { code: 'upstream_failed', message: /INVALID_ARG_GROUP_GUID/ },
    'a problem with our own request is not the buyer’s',
  )
  const garbage = await standIn(t, () => ({ status: 201, json: { id: 'bit.ly/x' } }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { BITLY_API_URL: garbage.url, BITLY_TOKEN: TOKEN } }),
    { code: 'upstream_failed', message: /without a link/ },
  )
})
