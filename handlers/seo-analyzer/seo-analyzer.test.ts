import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { html, webpageServer } from '../../test/helpers/webpage-server.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { isDisallowed, parseRobotsTxt } from './robots-txt.js'
import handler from './index.js'

const ids = (out: Record<string, any>) =>
  out.issues.map((i: { id: string; severity: string }) => `${i.severity}:${i.id}`).sort()

const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(' ')

const GOOD = (base: string) => `<!doctype html><html lang="en"><head>
<title>Handmade oak furniture from the Black Forest</title>
<meta name="description" content="Tables, chairs and shelves made to order from local oak, delivered across Europe within six weeks.">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="canonical" href="${base}/good">
<meta property="og:title" content="Oak furniture"><meta property="og:description" content="Made to order"><meta property="og:image" content="/og.png">
<meta name="twitter:card" content="summary_large_image">
<script type="application/ld+json">{"@context":"https://schema.org","@graph":[{"@type":"Organization","name":"Oak"},{"@type":["Product","Thing"]}]}</script>
</head><body><h1>Oak furniture</h1><h2>Tables</h2><h3>Sizes</h3><h2>Chairs</h2>
<p>${words(320)}</p><img src="/t.jpg" alt="An oak table"><img src="/line.png" alt="">
<a href="/tables">Tables</a> <a href="https://partner.example.org/" rel="nofollow sponsored">Partner</a></body></html>`

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('a well-built page: only the plain-HTTP issue remains', async (t) => {
  const site: { base: string } = { base: '' }
  Object.assign(
    site,
    await webpageServer(t, {
      '/good': (req, res) => html(GOOD(site.base))(req, res),
      '/robots.txt': (_req, res) => res.end('User-agent: *\nDisallow: /private/\nSitemap: /sitemap.xml\n'),
      '/sitemap.xml': (_req, res) =>
        res.end('<?xml version="1.0"?><urlset><url><loc>a</loc></url><url><loc>b</loc></url></urlset>'),
    }),
  )
  const out = okBody(await runInline(handler, { url: `${site.base}/good` }))
  t.same(ids(out), ['medium:no-https'])
  t.equal(out.score, 93)
  t.same(out.title, { text: 'Handmade oak furniture from the Black Forest', length: 44 })
  t.equal(out.metaDescription.length, 98)
  t.same(out.headings.counts, { h1: 1, h2: 2, h3: 1, h4: 0, h5: 0, h6: 0 })
  t.same(out.headings.skippedLevels, [])
  t.same(out.canonical, { urls: [`${site.base}/good`], selfReferencing: true })
  t.same(out.openGraph, { 'og:title': 'Oak furniture', 'og:description': 'Made to order', 'og:image': '/og.png' })
  t.same(out.images, { total: 2, withAlt: 1, emptyAlt: 1, missingAlt: 0, altCoverage: 100 })
  t.same(out.links, { internal: 1, external: 1, nofollow: 1 })
  t.equal(out.wordCount, 320 + 7, 'paragraph plus headings (5 words) and link texts (2)')
  t.same(out.structuredData, {
    jsonLdBlocks: 1,
    invalidJsonLd: 0,
    jsonLdTypes: ['Organization', 'Product', 'Thing'],
    microdataItems: 0,
  })
  t.match(out.robotsTxt, { found: true, status: 200, disallowsPage: false, sitemaps: ['/sitemap.xml'] })
  t.match(out.sitemap, { found: true, status: 200, urlCount: 2 })
})

t.test('a poor page: each problem is an issue with its severity, score by the documented penalties', async (t) => {
  const site = await webpageServer(t, {
    '/bad': html(`<html><head><title>Hi</title><meta name="robots" content="noindex, nofollow">
      <link rel="canonical" href="/a"><link rel="canonical" href="/b">
      <script type="application/ld+json">{broken</script></head>
      <body><h2>Intro</h2><h4>Deep</h4><h1>One</h1><h1>Two</h1><img src="a.png"><img src="b.png"><img src="c.png" alt="c">
      <p>short text</p></body></html>`),
    '/robots.txt': (_req, res) => res.end('User-agent: *\nAllow: /bad-but-allowed\nDisallow: /bad\n'),
  })
  const out = okBody(await runInline(handler, { url: `${site.base}/bad` }))
  t.same(
    ids(out),
    [
      'high:noindex',
      'high:robots-txt-blocks',
      'info:twitter-card',
      'medium:description-missing',
      'low:h1-multiple',
      'low:heading-order',
      'low:lang-missing',
      'low:no-internal-links',
      'low:open-graph',
      'low:sitemap-missing',
      'low:thin-content',
      'low:title-short',
      'medium:canonical-conflict',
      'medium:image-alt',
      'medium:jsonld-invalid',
      'medium:no-https',
      'medium:nofollow',
      'medium:viewport-missing',
    ].sort(),
  )
  t.equal(out.score, Math.max(0, 100 - 2 * 15 - 7 * 7 - 9 * 3))
  t.same(out.headings.skippedLevels, [
    { from: 0, to: 2, text: 'Intro' },
    { from: 2, to: 4, text: 'Deep' },
  ])
  t.same(out.robots, { meta: 'noindex, nofollow', xRobotsTag: null, noindex: true, nofollow: true })
  t.equal(out.images.altCoverage, 33.3)
  t.match(out.sitemap, { found: false, status: 404 })
})

t.test('robots.txt rules: longest match, Allow wins ties, wildcards', async (t) => {
  const r = parseRobotsTxt(
    'User-agent: googlebot\nDisallow: /\n\nUser-agent: other\nUser-agent: *\nDisallow: /shop\nAllow: /shop/public\nDisallow: /*.pdf$\nSitemap: https://a.test/s.xml # main\n',
  )
  t.same(r.sitemaps, ['https://a.test/s.xml'])
  t.equal(isDisallowed(r, '/'), false, 'the googlebot group does not apply to *')
  t.equal(isDisallowed(r, '/shop/cart'), true)
  t.equal(isDisallowed(r, '/shop/public/x'), false)
  t.equal(isDisallowed(r, '/docs/a.pdf'), true)
  t.equal(isDisallowed(r, '/docs/a.pdf?x=1'), false)
})

t.test(
  'robots.txt wildcards are matched in linear time (a site-written pattern cannot stall the worker)',
  async (t) => {
    // with a backtracking RegExp, this pattern against a 40-character path took over a minute (the test timed out)
    const r = parseRobotsTxt(`User-agent: *\nDisallow: /${'*a'.repeat(12)}*b$\nDisallow: /x*y*z\nAllow: /x*y*zz$\n`)
    t.equal(isDisallowed(r, `/${'a'.repeat(2000)}`), false)
    t.equal(isDisallowed(r, `/${'a'.repeat(2000)}b`), true)
    t.equal(isDisallowed(r, '/x-y-z/more'), true, 'unanchored: a prefix match is enough')
    t.equal(isDisallowed(r, '/x-y'), false)
    t.equal(isDisallowed(r, '/xyzz'), false, 'the longer Allow wins')
    t.equal(isDisallowed(r, '/xyzza'), true, 'anchored Allow needs the end of the path')
  },
)

t.test('X-Robots-Tag, non-200 status, skipping robots/sitemap', async (t) => {
  const site = await webpageServer(t, {
    '/gone': (_req, res) => {
      res.statusCode = 410
      res.setHeader('content-type', 'text/html')
      res.setHeader('x-robots-tag', 'noindex')
      res.end('<title>Gone</title>')
    },
  })
  const out = okBody(await runInline(handler, { url: `${site.base}/gone`, checkRobotsAndSitemap: false }))
  t.equal(out.status, 410)
  t.ok(out.issues.some((i: any) => i.id === 'http-status' && i.severity === 'high'))
  t.equal(out.robots.noindex, true)
  t.equal(out.robotsTxt, null)
  t.equal(out.sitemap, null)
  t.same(
    site.seen.map((r) => r.url),
    ['/gone'],
    'no robots.txt or sitemap request',
  )
})

t.test(
  'deeply nested pages: 8,000 levels are analysed, 40,000 refused with 422 (no crash, no minute of parsing)',
  async (t) => {
    const site = await webpageServer(t, {
      '/tables': html(
        `<html lang="en"><head><title>Nested tables all the way down here</title></head><body>${'<table><tr><td>'.repeat(2_000)}<h1>Deep</h1>${'</td></tr></table>'.repeat(2_000)}</body></html>`,
      ),
      '/divs': html(`<html><body>${'<div>'.repeat(40_000)}</body></html>`),
    })
    const out = okBody(await runInline(handler, { url: `${site.base}/tables`, checkRobotsAndSitemap: false }))
    t.same(out.headings.h1, ['Deep'])
    t.match(await runInline(handler, { url: `${site.base}/divs`, checkRobotsAndSitemap: false }), {
      ok: false,
      status: 422,
      field: 'url',
    })
  },
)

t.test('non-HTML is 422; bad input and internal addresses are 400', async (t) => {
  const site = await webpageServer(t, {
    '/a.json': (_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end('{}')
    },
  })
  t.match(await runInline(handler, { url: `${site.base}/a.json` }), { ok: false, status: 422, field: 'url' })
  t.match(await runInline(handler, { url: 'mailto:a@b.c' }), { ok: false, status: 400, field: 'url' })
  t.match(await runInline(handler, { url: 'https://example.com/', checkRobotsAndSitemap: 'maybe' }), {
    ok: false,
    status: 400,
    field: 'checkRobotsAndSitemap',
  })
  t.match(await runInline(handler, { url: `${site.base}/a.json` }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'url',
  })
  t.equal(site.seen.length, 1)
})
