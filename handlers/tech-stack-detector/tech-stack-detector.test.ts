import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { webpageServer } from '../../test/helpers/webpage-server.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { SIGNATURES } from './signatures.js'
import handler, { detect } from './index.js'

const find = (out: Record<string, any>, name: string) => out.technologies.find((x: { name: string }) => x.name === name)

const WORDPRESS_SHOP = `<!doctype html><html><head>
<meta name="generator" content="WordPress 6.4.2">
<link rel="stylesheet" href="/wp-content/plugins/woocommerce/assets/css/woocommerce.css">
<link rel="stylesheet" href="https://cdn.jsdelivr.net/npm/bootstrap@5.3.2/dist/css/bootstrap.min.css">
<link rel="stylesheet" href="https://fonts.googleapis.com/css2?family=Inter">
<script src="/wp-includes/js/jquery/jquery.min.js?ver=3.7.1"></script>
<script async src="https://www.googletagmanager.com/gtag/js?id=G-ABC123"></script>
<script src="https://js.stripe.com/v3/"></script>
</head><body><div id="app" data-v-1a2b3c4d>shop</div></body></html>`

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('the signature table: at least 40 detectable technologies, sound references and patterns', async (t) => {
  const detectable = SIGNATURES.filter((s) => s.headers || s.cookies || s.meta || s.scripts || s.links || s.html)
  t.ok(detectable.length >= 40, `${detectable.length} technologies with markers`)
  const names = new Set(SIGNATURES.map((s) => s.name))
  t.equal(names.size, SIGNATURES.length, 'names are unique')
  for (const s of SIGNATURES) for (const i of s.implies ?? []) t.ok(names.has(i), `${s.name} implies a known ${i}`)
  t.ok(
    SIGNATURES.every((s) => /^https:\/\//.test(s.website)),
    'every entry has a website',
  )
})

t.test('a live WordPress shop: detections, evidence, versions only from evidence', async (t) => {
  const site = await webpageServer(t, {
    '/': (_req, res) => {
      res.setHeader('content-type', 'text/html; charset=utf-8')
      res.setHeader('server', 'nginx')
      res.setHeader('x-powered-by', 'PHP/8.2.7')
      res.setHeader('cf-ray', '84a1b2c3d4e5-FRA')
      res.setHeader('set-cookie', ['woocommerce_cart_hash=abc; path=/', 'PHPSESSID=xyz; path=/'])
      res.end(WORDPRESS_SHOP)
    },
  })
  const out = okBody(await runInline(handler, { url: `${site.base}/` }))
  const names = out.technologies.map((x: { name: string }) => x.name).sort()
  t.same(
    names,
    [
      'Bootstrap',
      'Cloudflare',
      'Google Analytics',
      'Google Fonts',
      'Nginx',
      'PHP',
      'Stripe',
      'Vue.js',
      'WooCommerce',
      'WordPress',
      'jQuery',
      'jsDelivr',
    ].sort(),
  )
  t.match(find(out, 'WordPress'), { version: '6.4.2', implied: false, category: 'CMS' })
  t.same(find(out, 'WordPress').evidence[0], { source: 'meta', name: 'generator', match: 'WordPress 6.4.2' })
  t.ok(find(out, 'WordPress').evidence.some((e: any) => e.source === 'implied' && e.name === 'WooCommerce'))
  t.match(find(out, 'PHP'), { version: '8.2.7' })
  t.same(
    find(out, 'PHP').evidence.filter((e: any) => e.source === 'cookie'),
    [{ source: 'cookie', name: 'PHPSESSID', match: 'PHPSESSID' }],
  )
  t.match(find(out, 'Bootstrap'), { version: '5.3.2' })
  t.equal(find(out, 'Nginx').version, null, 'no version when the Server header carries none')
  t.equal(find(out, 'jQuery').version, null, 'a ?ver= query is not taken as the library version')
  t.same(find(out, 'Cloudflare').evidence, [{ source: 'header', name: 'cf-ray', match: '84a1b2c3d4e5-FRA' }])
  t.same(find(out, 'Stripe').evidence, [{ source: 'script', match: 'https://js.stripe.com/v3/' }])
  t.same(out.categories.CMS, ['WordPress'])
  t.equal(out.signaturesChecked, SIGNATURES.length)
})

t.test('markup that once made the HTML patterns quadratic is scanned at once', async (t) => {
  // "<input" / "<script" 250,000 times without a ">": an unbounded [^>]+ scanned to the end of the
  // page from each of them (minutes of CPU for one call)
  const filler = `<!--${'<input <script '.repeat(125_000)}-->`
  const page = `<!doctype html><html><head><script id="__NEXT_DATA__" type="application/json">{}</script></head><body>${filler}<form><input type="hidden" name="__VIEWSTATE" value="x"></form></body></html>`
  const site = await webpageServer(t, {
    '/': (_req, res) => {
      res.setHeader('content-type', 'text/html')
      res.end(page)
    },
  })
  const out = okBody(await runInline(handler, { url: `${site.base}/` }))
  t.match(find(out, 'ASP.NET'), { evidence: [{ source: 'html' }] })
  t.match(find(out, 'Next.js'), { evidence: [{ source: 'html' }] })
})

t.test('a page nested thousands of levels deep is analysed, not a crash', async (t) => {
  const page = `<html><head><meta name="generator" content="WordPress 6.4.2"></head><body>${'<table><tr><td>'.repeat(2_000)}<script src="https://www.googletagmanager.com/gtm.js?id=GTM-X"></script>${'</td></tr></table>'.repeat(2_000)}</body></html>`
  const site = await webpageServer(t, {
    '/': (_req, res) => {
      res.setHeader('content-type', 'text/html')
      res.end(page)
    },
  })
  const out = okBody(await runInline(handler, { url: `${site.base}/` }))
  t.match(find(out, 'WordPress'), { version: '6.4.2' })
  t.ok(find(out, 'Google Tag Manager'))
})

t.test('implied technologies carry no version and chain transitively', async (t) => {
  const d = detect({
    headers: { 'x-powered-by': 'Next.js 14.1.0' },
    cookies: [],
    meta: new Map(),
    scripts: [],
    links: [],
    html: '',
  })
  t.same(
    d.map((x) => [x.name, x.version, x.implied]),
    [
      ['Next.js', '14.1.0', false],
      ['React', null, true],
    ],
  )
  const chain = detect({
    headers: {},
    cookies: [],
    meta: new Map([['generator', ['WooCommerce 8.1']]]),
    scripts: [],
    links: [],
    html: '',
  })
  t.same(
    chain.map((x) => [x.name, x.implied]).sort(),
    [
      ['PHP', true],
      ['WooCommerce', false],
      ['WordPress', true],
    ].sort(),
  )
})

t.test('a bare page detects nothing rather than guessing', async (t) => {
  const site = await webpageServer(t, { '/': (_req, res) => res.end('<p>hello</p>') })
  const out = okBody(await runInline(handler, { url: `${site.base}/` }))
  t.same(out.technologies, [])
  t.same(out.categories, {})
})

t.test('bad input and internal addresses', async (t) => {
  t.match(await runInline(handler, { url: '' }), { ok: false, status: 400, field: 'url' })
  t.match(await runInline(handler, { url: 'javascript:alert(1)' }), { ok: false, status: 400, field: 'url' })
  t.match(await runInline(handler, { url: 'http://127.0.0.1:9/' }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'url',
  })
  t.match(await runInline(handler, { url: 'http://metadata.internal/' }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'url',
  })
})
