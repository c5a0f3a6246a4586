import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { webpageServer } from '../../test/helpers/webpage-server.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { parseSetCookie } from '../_shared/webpage-fetch.js'
import { gradeCsp, gradeHeaders, gradeHsts, gradeReferrerPolicy } from './grade.js'
import handler from './index.js'

const byId = (checks: Array<{ id: string }>) => Object.fromEntries(checks.map((c) => [c.id, c])) as Record<string, any>
const cookie = (line: string, setBy = 'https://a.test/') => ({ ...parseSetCookie(line)!, setBy })

const STRONG = {
  'strict-transport-security': 'max-age=63072000; includeSubDomains; preload',
  'content-security-policy':
    "default-src 'self'; script-src 'self' 'nonce-abc'; object-src 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'strict-origin-when-cross-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-embedder-policy': 'require-corp',
  'cross-origin-resource-policy': 'same-origin',
}

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('grading: a fully hardened HTTPS answer is A with 100 points', async (t) => {
  const g = gradeHeaders(STRONG, true, [cookie('sid=1; Secure; HttpOnly; SameSite=Strict; Path=/')])
  t.equal(g.score, 100)
  t.equal(g.grade, 'A')
  t.ok(
    g.checks.every((c) => c.result === 'pass'),
    'every check passes',
  )
  t.same(g.cookies[0]!.issues, [])
})

t.test('grading: a mixed answer scores by the documented weights', async (t) => {
  const g = gradeHeaders(
    {
      'strict-transport-security': 'max-age=86400',
      'content-security-policy': "default-src 'self'; script-src 'self' 'unsafe-inline'",
      'x-frame-options': 'SAMEORIGIN',
      'x-content-type-options': 'nosniff',
      'cross-origin-opener-policy': 'same-origin',
      server: 'nginx/1.25.3',
    },
    true,
    [cookie('a=1; Secure; HttpOnly; SameSite=Lax')],
  )
  const c = byId(g.checks)
  t.same(Object.fromEntries(g.checks.map((x) => [x.id, [x.result, x.points]])), {
    hsts: ['partial', 10],
    csp: ['partial', 12],
    framing: ['pass', 10],
    contentTypeOptions: ['pass', 10],
    referrerPolicy: ['partial', 5],
    permissionsPolicy: ['fail', 0],
    coop: ['pass', 4],
    coep: ['fail', 0],
    corp: ['fail', 0],
    cookies: ['pass', 5],
    disclosure: ['fail', 0],
  })
  t.equal(g.score, 56)
  t.equal(g.grade, 'D')
  t.match(c.csp.notes.join(' '), /unsafe-inline/)
  t.match(c.disclosure.notes.join(' '), /nginx\/1\.25\.3/)
})

t.test('grading rules: HSTS, CSP, Referrer-Policy details', async (t) => {
  t.equal(gradeHsts('max-age=31536000; includeSubDomains; preload', true).result, 'pass')
  t.equal(gradeHsts('max-age=0', true).result, 'fail')
  t.equal(gradeHsts('includeSubDomains', true).result, 'fail')
  t.equal(gradeHsts('max-age=31536000', false).result, 'fail', 'HSTS over HTTP is ignored')
  t.match(gradeHsts('max-age=600; preload', true).notes.join(' '), /preload list entry requires/)
  const evalCsp = gradeCsp("script-src 'self' 'unsafe-eval' https:", undefined).check
  t.equal(evalCsp.result, 'partial')
  t.match(evalCsp.notes.join('\n'), /no default-src[\s\S]*unsafe-eval[\s\S]*https:/)
  t.equal(
    gradeCsp("default-src 'self'; script-src 'unsafe-inline' 'sha256-abc'", undefined).check.result,
    'pass',
    'unsafe-inline is ignored next to a hash',
  )
  t.equal(gradeCsp(undefined, "default-src 'self'").check.result, 'partial', 'report-only does not enforce')
  t.equal(gradeCsp(undefined, undefined).check.result, 'fail')
  t.equal(gradeReferrerPolicy('unsafe-url, no-referrer').result, 'pass', 'the last known value wins')
  t.equal(gradeReferrerPolicy('no-referrer, unsafe-url').result, 'fail')
  t.equal(gradeReferrerPolicy('no-referrer-when-downgrade').result, 'partial')
})

t.test('cookies: missing flags are found per cookie', async (t) => {
  const g = gradeHeaders(STRONG, true, [
    cookie('tracking=1; Path=/'),
    cookie('pref=1; Secure; SameSite=None; HttpOnly'),
  ])
  const c = byId(g.checks).cookies
  t.equal(c.result, 'fail')
  t.equal(c.points, 0)
  t.same(g.cookies[0]!.issues, [
    'no Secure: can be sent over plain HTTP',
    'no HttpOnly: readable by page scripts',
    'no SameSite: browser default applies (Lax in Chromium, none in some others)',
  ])
  t.same(g.cookies[1]!.issues, [])
  t.equal(g.score, 95)
  t.equal(g.grade, 'A')
})

t.test('a live answer: HEAD is used, headers and cookies are read, plain HTTP is F', async (t) => {
  const site = await webpageServer(t, {
    '/': (req, res) => {
      res.setHeader('set-cookie', ['session=abc; HttpOnly; SameSite=Lax', 'theme=dark'])
      for (const [k, v] of Object.entries(STRONG)) res.setHeader(k, v)
      res.setHeader('x-powered-by', 'Express')
      res.end(req.method === 'HEAD' ? undefined : 'hello')
    },
  })
  const out = okBody(await runInline(handler, { url: `${site.base}/` }))
  t.equal(out.method, 'HEAD')
  t.same(
    site.seen.map((r) => r.method),
    ['HEAD'],
  )
  t.equal(out.https, false)
  t.equal(out.grade, 'F', 'plain HTTP caps the grade')
  const c = byId(out.checks)
  t.equal(c.hsts.result, 'fail')
  t.match(c.hsts.notes[0], /not served over HTTPS/)
  t.equal(c.csp.result, 'pass')
  t.equal(c.disclosure.result, 'partial')
  t.equal(c.cookies.result, 'partial')
  t.same(
    out.cookies.map((k: any) => [k.name, k.httpOnly, k.sameSite, k.issues.length]),
    [
      ['session', true, 'Lax', 0],
      ['theme', false, null, 2],
    ],
  )
  t.notMatch(JSON.stringify(out.cookies), /abc|dark/, 'cookie values are not returned')
  t.equal(out.headers['x-powered-by'], 'Express')
  t.equal(out.score, 100 - 20 - 3 - 3, 'HSTS 0/20, cookies 2/5, disclosure 2/5')
})

t.test('HEAD refused: GET is used; cookies of redirect hops are included', async (t) => {
  const site = await webpageServer(t, {
    '/start': (_req, res) => {
      res.statusCode = 302
      res.setHeader('location', '/page')
      res.setHeader('set-cookie', 'hop=1; Secure; HttpOnly; SameSite=Strict')
      res.end()
    },
    '/page': (req, res) => {
      if (req.method === 'HEAD') {
        res.statusCode = 405
        return res.end()
      }
      res.setHeader('x-frame-options', 'DENY')
      res.end('ok')
    },
  })
  const out = okBody(await runInline(handler, { url: `${site.base}/start` }))
  t.equal(out.method, 'GET')
  t.same(
    site.seen.map((r) => `${r.method} ${r.url}`),
    ['HEAD /start', 'HEAD /page', 'GET /start', 'GET /page'],
  )
  t.equal(out.status, 200)
  t.same(out.redirects, [{ url: `${site.base}/start`, status: 302 }])
  t.same(
    out.cookies.map((k: any) => [k.name, k.setBy]),
    [['hop', `${site.base}/start`]],
  )
  t.equal(byId(out.checks).framing.result, 'pass')
})

t.test('bad input and internal addresses', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'url' })
  t.match(await runInline(handler, { url: 'not a url' }), { ok: false, status: 400, field: 'url' })
  const site = await webpageServer(t, { '/': (_req, res) => res.end('x') })
  t.match(await runInline(handler, { url: `${site.base}/` }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'url',
  })
  t.match(await runInline(handler, { url: 'http://[::1]:8080/' }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'url',
  })
  t.equal(site.seen.length, 0)
})

t.test('an unreachable host is 502 upstream_failed', async (t) => {
  const err = await runInline(handler, { url: 'http://127.0.0.1:1/' }).then(
    () => null,
    (e) => e,
  )
  t.match(err, { name: 'HandlerUpstreamError', code: 'upstream_failed' })
})
