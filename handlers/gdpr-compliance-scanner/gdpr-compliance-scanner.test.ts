import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { html, webpageServer } from '../../test/helpers/webpage-server.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import handler, { siteOf } from './index.js'

const finding = (out: Record<string, any>, id: string) => out.findings.find((f: { id: string }) => f.id === id)
const ids = (out: Record<string, any>) =>
  out.findings.map((f: { id: string; severity: string }) => `${f.severity}:${f.id}`).sort()

const TRACKED = `<!doctype html><html><head>
<link rel="stylesheet" href="https://fonts.googleapis.com/css2?family=Roboto">
<script async src="https://www.googletagmanager.com/gtag/js?id=G-XYZ"></script>
<script>window.dataLayer=[];function gtag(){dataLayer.push(arguments)}gtag('js',new Date());gtag('config','G-XYZ');</script>
<script type="text/plain" data-cookieconsent="statistics">(function(h,o,t,j,a,r){a='https://static.hotjar.com/c/hotjar-'+h.hjid})()</script>
<script src="https://cdn.example-widgets.net/w.js"></script>
<script src="/app.js"></script>
<script src="https://static.example.test/own.js"></script>
</head><body>
<iframe src="https://www.youtube.com/embed/abc"></iframe>
<form action="http://forms.example.test/submit"><input name="email"></form>
<form action="/search"><input name="q"></form>
<a href="/datenschutz">Datenschutzerklärung</a> <a href="/impressum">Impressum</a>
</body></html>`

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('site of a host (registrable domain approximation)', async (t) => {
  t.equal(siteOf('www.shop.example.com'), 'example.com')
  t.equal(siteOf('news.bbc.co.uk'), 'bbc.co.uk')
  t.equal(siteOf('127.0.0.1'), '127.0.0.1')
})

t.test('a tracked page without a consent tool: cookies, trackers, third parties, forms, links', async (t) => {
  const site = await webpageServer(t, {
    '/start': (_req, res) => {
      res.statusCode = 302
      res.setHeader('location', '/')
      res.setHeader('set-cookie', 'lb=node3; Path=/')
      res.end()
    },
    '/': html(TRACKED, {
      'set-cookie': [
        '_ga=GA1.1.123; Max-Age=63072000; Path=/',
        'PHPSESSID=s3cr3t; Path=/; HttpOnly',
        'prefs=x; Max-Age=31536000',
      ],
    }),
  })
  const out = okBody(await runInline(handler, { url: `${site.base}/start` }))
  t.match(out.disclaimer, /not legal advice/)
  t.equal(out.https, false)
  t.same(
    ids(out),
    [
      'high:forms-over-http',
      'high:no-https',
      'high:tracking-cookies-before-consent',
      'high:trackers-without-consent-tool',
      'info:session-cookies',
      'info:trackers-held-for-consent',
      'low:cookie-policy-missing',
      'low:third-party-hosts',
      'medium:google-fonts',
      'medium:persistent-cookies-before-consent',
      'medium:video-embeds',
    ].sort(),
  )
  t.same(out.summary, { high: 4, medium: 3, low: 2, info: 2 })
  t.same(finding(out, 'tracking-cookies-before-consent').evidence, ['_ga (Google Analytics)'])
  t.same(finding(out, 'persistent-cookies-before-consent').evidence, ['prefs (365 days)'])
  t.same(finding(out, 'session-cookies').evidence, ['lb', 'PHPSESSID'])
  t.same(
    out.cookies.map((c: any) => [c.name, c.setBy.endsWith('/start'), c.persistent, c.thirdParty]),
    [
      ['lb', true, false, false],
      ['_ga', false, true, false],
      ['PHPSESSID', false, false, false],
      ['prefs', false, true, false],
    ],
  )
  t.notMatch(JSON.stringify(out.cookies), /s3cr3t|GA1\.1/, 'cookie values are not returned')
  t.same(finding(out, 'trackers-without-consent-tool').evidence.sort(), [
    'Google Analytics',
    'Google Tag Manager / gtag.js',
  ])
  t.same(
    out.trackers.find((x: any) => x.name === 'Hotjar'),
    { name: 'Hotjar', category: 'session-recording', hosts: [], blockedUntilConsent: true },
  )
  t.same(finding(out, 'third-party-hosts').evidence, ['cdn.example-widgets.net', 'static.example.test'])
  t.same(finding(out, 'video-embeds').evidence, ['www.youtube.com'])
  t.same(
    out.thirdPartyHosts.find((h: any) => h.host === 'fonts.googleapis.com'),
    {
      host: 'fonts.googleapis.com',
      elements: { link: 1 },
      tracker: { host: 'fonts.googleapis.com', name: 'Google Fonts', category: 'fonts' },
    },
  )
  t.same(out.consentManagement, { detected: false, platforms: [] })
  t.same(out.policyLinks, { privacy: [`${site.base}/datenschutz`], cookie: [], imprint: [`${site.base}/impressum`] })
  t.same(out.forms, { total: 2, insecure: ['http://forms.example.test/submit', `${site.base}/search`] })
})

t.test('a clean page with a consent tool and policy links', async (t) => {
  const site = await webpageServer(t, {
    '/': html(`<html><head><script id="Cookiebot" src="https://consent.cookiebot.com/uc.js" data-cbid="x"></script></head>
      <body><a href="/privacy-policy">Privacy</a> <a href="/cookies">Cookie settings</a> <a href="/legal">Legal notice</a></body></html>`),
  })
  const out = okBody(await runInline(handler, { url: `${site.base}/` }))
  t.same(out.consentManagement, {
    detected: true,
    platforms: [{ name: 'Cookiebot', evidence: 'consent.cookiebot.com' }],
  })
  t.same(ids(out), ['high:no-https', 'info:consent-tool', 'low:third-party-hosts'])
  t.equal(out.policyLinks.cookie[0], `${site.base}/cookies`)
  t.equal(out.policyLinks.imprint[0], `${site.base}/legal`)
  t.same(out.cookies, [])
})

t.test('trackers next to a consent tool are flagged as loading before the choice', async (t) => {
  const site = await webpageServer(t, {
    '/': html(
      `<script src="https://cdn.cookielaw.org/scripttemplates/otSDKStub.js"></script><script src="https://connect.facebook.net/en_US/fbevents.js"></script><a href="/privacy">Privacy</a>`,
    ),
  })
  const out = okBody(await runInline(handler, { url: `${site.base}/` }))
  t.equal(out.consentManagement.platforms[0].name, 'OneTrust')
  t.same(finding(out, 'trackers-load-before-consent'), {
    id: 'trackers-load-before-consent',
    severity: 'medium',
    message: finding(out, 'trackers-load-before-consent').message,
    evidence: ['Meta Pixel / Facebook SDK'],
  })
  t.notOk(finding(out, 'trackers-without-consent-tool'))
})

t.test(
  'deeply nested pages: 8,000 levels are scanned, 40,000 refused with 422 (no crash, no minute of parsing)',
  async (t) => {
    const site = await webpageServer(t, {
      '/tables': html(
        `<html><body>${'<table><tr><td>'.repeat(2_000)}<a href="/privacy">Privacy policy</a>${'</td></tr></table>'.repeat(2_000)}</body></html>`,
      ),
      '/divs': html(`<html><body>${'<div>'.repeat(40_000)}</body></html>`),
    })
    const out = okBody(await runInline(handler, { url: `${site.base}/tables` }))
    t.same(out.policyLinks.privacy, [`${site.base}/privacy`])
    t.match(await runInline(handler, { url: `${site.base}/divs` }), { ok: false, status: 422, field: 'url' })
  },
)

t.test('non-HTML 422, bad input 400, internal addresses refused', async (t) => {
  const site = await webpageServer(t, {
    '/x.png': (_req, res) => {
      res.setHeader('content-type', 'image/png')
      res.end('x')
    },
  })
  t.match(await runInline(handler, { url: `${site.base}/x.png` }), { ok: false, status: 422, field: 'url' })
  t.match(await runInline(handler, { url: 42 }), { ok: false, status: 400, field: 'url' })
  t.match(await runInline(handler, { url: `${site.base}/` }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'url',
  })
  t.match(await runInline(handler, { url: 'http://169.254.169.254/latest/' }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'url',
  })
})
