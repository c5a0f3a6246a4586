import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { html, webpageServer } from '../../test/helpers/webpage-server.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import handler from './index.js'

const PAGE = `<!doctype html>
<html lang="en-GB"><head>
  <title>  Widgets &amp; Co  </title>
  <meta name="description" content="We sell   widgets.">
  <link rel="canonical" href="/products">
  <style>body { color: red }</style>
  <script>var secret = "not text"</script>
</head><body>
  <nav><a href="/">Home</a> <a href="/about">About</a></nav>
  <main>
    <h1>Our widgets</h1>
    <p>Widgets are <b>great</b>.</p>
    <h2>Prices</h2>
    <table class="prices"><tr><td>Small</td><td>3 EUR</td></tr><tr><td>Large</td><td>5 EUR</td></tr></table>
    <p hidden>invisible</p>
    <a href="https://other.example.org/x?y=1" rel="nofollow">Partner</a>
    <a href="mailto:sales@widgets.test">Mail us</a>
    <a href="javascript:void(0)">skip</a>
    <img src="img/small.png" alt="A small widget" width="10">
    <img src="//cdn.example.net/large.png">
  </main>
  <footer>© Widgets</footer>
</body></html>`

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('an HTML page: metadata, readable text, headings, links, images', async (t) => {
  const site = await webpageServer(t, { '/shop/': html(PAGE) })
  const out = okBody(await runInline(handler, { url: `${site.base}/shop/` }))
  t.equal(out.kind, 'html')
  t.equal(out.status, 200)
  t.equal(out.title, 'Widgets & Co')
  t.equal(out.description, 'We sell widgets.')
  t.equal(out.canonical, `${site.base}/products`)
  t.equal(out.language, 'en-GB')
  t.equal(out.textSource, 'main')
  t.equal(out.text, 'Our widgets\nWidgets are great.\nPrices\nSmall 3 EUR\nLarge 5 EUR\nPartner Mail us skip')
  t.notMatch(out.text, /secret|color|invisible|Home|©/)
  t.same(out.headings, [
    { level: 1, text: 'Our widgets' },
    { level: 2, text: 'Prices' },
  ])
  t.same(out.links, [
    { url: `${site.base}/`, text: 'Home', rel: [], internal: true },
    { url: `${site.base}/about`, text: 'About', rel: [], internal: true },
    { url: 'https://other.example.org/x?y=1', text: 'Partner', rel: ['nofollow'], internal: false },
    { url: 'mailto:sales@widgets.test', text: 'Mail us', rel: [], internal: false },
  ])
  t.same(out.linkCounts, { internal: 2, external: 2, total: 4 })
  t.same(out.images, [
    { src: `${site.base}/shop/img/small.png`, alt: 'A small widget', width: '10', height: null },
    { src: 'http://cdn.example.net/large.png', alt: null, width: null, height: null },
  ])
  t.equal(site.seen[0]!.method, 'GET')
  t.match(site.seen[0]!.headers.accept, /text\/html/)
})

t.test('a CSS selector returns the matching elements, bounded', async (t) => {
  const site = await webpageServer(t, { '/': html(PAGE) })
  const out = okBody(await runInline(handler, { url: `${site.base}/`, selector: 'table.prices td', maxMatches: 3 }))
  t.equal(out.matchCount, 4)
  t.equal(out.matches.length, 3)
  t.same(out.matches[1], { tag: 'td', text: '3 EUR', html: '<td>3 EUR</td>', htmlTruncated: false, attributes: {} })
  const imgs = okBody(await runInline(handler, { url: `${site.base}/`, selector: 'img[alt]' }))
  t.same(imgs.matches[0].attributes, { src: 'img/small.png', alt: 'A small widget', width: '10' })
  const bad = await runInline(handler, { url: `${site.base}/`, selector: 'td[[' })
  t.match(bad, { ok: false, status: 400, field: 'selector' })
  // markup is not a selector: it must not come back as a "match" the page does not contain
  const markup = okBody(await runInline(handler, { url: `${site.base}/`, selector: '<p>invented</p>' }))
  t.equal(markup.matchCount, 0)
  t.same(markup.matches, [])
  const all = okBody(await runInline(handler, { url: `${site.base}/`, selector: 'html' }))
  t.equal(all.matchCount, 1)
})

t.test('a page nested thousands of levels deep is read, not a crash', async (t) => {
  // cheerio's text()/html()/clone() recurse per level: 2,000 nested tables (8,000 elements deep:
  // table, tbody, tr, td) overflowed the stack
  const deep = `<html><body><main>${'<table><tr><td>'.repeat(2_000)}<p>deep text</p><a href="/end">End link</a>${'</td></tr></table>'.repeat(2_000)}</main></body></html>`
  const site = await webpageServer(t, { '/': html(deep) })
  const out = okBody(await runInline(handler, { url: `${site.base}/`, selector: 'a' }))
  t.equal(out.text, 'deep text\nEnd link')
  t.same(out.links, [{ url: `${site.base}/end`, text: 'End link', rel: [], internal: true }])
  t.equal(out.matchCount, 1)
  t.equal(out.matches[0].text, 'End link')
})

t.test('a page nesting deeper than the parser can take in time is refused with 422', async (t) => {
  // the HTML parser's time grows with the square of the nesting: 40,000 <div>s (200 KB) took 50 s
  const site = await webpageServer(t, { '/': html(`<html><body>${'<div>'.repeat(40_000)}x</body></html>`) })
  t.match(await runInline(handler, { url: `${site.base}/` }), {
    ok: false,
    status: 422,
    field: 'url',
    message: /nests elements more than 2048 levels/,
  })
  // closed elements, void elements and implied end tags do not add up
  const wide = `<html><body>${'<div><span>a</span><br><p>b<li>c</div>'.repeat(20_000)}<svg>${'<path d="M0"/>'.repeat(5_000)}</svg>${'<a href="/x">unclosed link '.repeat(5_000)}</body></html>`
  const site2 = await webpageServer(t, { '/': html(wide) })
  t.match(await runInline(handler, { url: `${site2.base}/` }), { ok: true })
})

t.test('redirects are followed and reported; the body is cut at 2 MB', async (t) => {
  const site = await webpageServer(t, {
    '/old': (_req, res) => {
      res.statusCode = 301
      res.setHeader('location', '/new')
      res.end()
    },
    '/new': html('<title>New</title><body><p>moved here</p></body>'),
    '/huge': html(`<title>Huge</title><body><p>${'word '.repeat(600_000)}</p></body>`),
  })
  const out = okBody(await runInline(handler, { url: `${site.base}/old` }))
  t.equal(out.finalUrl, `${site.base}/new`)
  t.same(out.redirects, [{ url: `${site.base}/old`, status: 301 }])
  t.equal(out.title, 'New')
  t.equal(out.textSource, 'body')
  t.equal(out.text, 'moved here')
  const huge = okBody(await runInline(handler, { url: `${site.base}/huge`, maxTextLength: 100 }))
  t.equal(huge.truncated, true)
  t.equal(huge.bytes, 2 * 1024 * 1024)
  t.equal(huge.text.length, 100)
  t.equal(huge.textTruncated, true)
})

t.test('a 404 page is reported with its status', async (t) => {
  const site = await webpageServer(t, {})
  const out = okBody(await runInline(handler, { url: `${site.base}/missing` }))
  t.equal(out.status, 404)
  t.equal(out.kind, 'text')
  t.equal(out.text, 'not found')
})

t.test('non-HTML bodies: text, JSON, and binary refused with 422', async (t) => {
  const site = await webpageServer(t, {
    '/data.json': (_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end('{"a":[1,2],"b":"ü"}')
    },
    '/broken.json': (_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end('{"a":')
    },
    '/notes.txt': (_req, res) => {
      res.setHeader('content-type', 'text/plain; charset=iso-8859-1')
      res.end(Buffer.from([0x63, 0x61, 0x66, 0xe9]))
    },
    '/img.png': (_req, res) => {
      res.setHeader('content-type', 'image/png')
      res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47]))
    },
  })
  const json = okBody(await runInline(handler, { url: `${site.base}/data.json` }))
  t.equal(json.kind, 'json')
  t.same(json.json, { a: [1, 2], b: 'ü' })
  const text = okBody(await runInline(handler, { url: `${site.base}/notes.txt` }))
  t.equal(text.kind, 'text')
  t.equal(text.text, 'café')
  t.match(await runInline(handler, { url: `${site.base}/img.png` }), {
    ok: false,
    status: 422,
    field: 'url',
    message: /image\/png/,
  })
  t.match(await runInline(handler, { url: `${site.base}/broken.json` }), { ok: false, status: 422, field: 'url' })
  t.match(await runInline(handler, { url: `${site.base}/data.json`, selector: 'p' }), {
    ok: false,
    status: 422,
    field: 'selector',
  })
})

t.test('a page in a legacy charset declared by <meta> is decoded', async (t) => {
  const site = await webpageServer(t, {
    '/': (_req, res) => {
      res.setHeader('content-type', 'text/html')
      res.end(
        Buffer.concat([
          Buffer.from('<meta charset="windows-1252"><title>na'),
          Buffer.from([0xef]),
          Buffer.from('ve</title>'),
        ]),
      )
    },
  })
  t.equal(okBody(await runInline(handler, { url: `${site.base}/` })).title, 'naïve')
})

t.test('a charset label the decoder does not implement is read as undeclared, not a crash', async (t) => {
  // x-user-defined is a WHATWG label, but the decoder threw "Encoding not recognized" for it
  const site = await webpageServer(t, {
    '/': html('<title>Odd charset</title><p>text</p>', { 'content-type': 'text/html; charset=x-user-defined' }),
  })
  const out = okBody(await runInline(handler, { url: `${site.base}/` }))
  t.equal(out.title, 'Odd charset')
  t.equal(out.text, 'text')
})

t.test('JSON nested too deep to send back is refused with 422', async (t) => {
  // JSON.parse took it, but serialising the answer overflowed the stack (a 200 KB document)
  const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`
  const site = await webpageServer(t, {
    '/deep.json': (_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end(deep)
    },
    '/ok.json': (_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end(`${'['.repeat(500)}1${']'.repeat(500)}`)
    },
  })
  const out = await runInline(handler, { url: `${site.base}/deep.json` })
  t.doesNotThrow(() => JSON.stringify(out), 'the answer can be serialised')
  t.match(out, { ok: false, status: 422, field: 'url', message: /nests more than 1000 levels/ })
  t.match(await runInline(handler, { url: `${site.base}/ok.json` }), { ok: true })
})

t.test('bad input names the field', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'url' })
  t.match(await runInline(handler, { url: 'ftp://example.com/' }), { ok: false, status: 400, field: 'url' })
  t.match(await runInline(handler, { url: 'https://example.com/', maxMatches: 0 }), {
    ok: false,
    status: 400,
    field: 'maxMatches',
  })
  t.match(await runInline(handler, { url: 'https://example.com/', extra: 1 }), { ok: false, status: 400 })
})

t.test('internal addresses are refused unless the test switch allows them', async (t) => {
  const site = await webpageServer(t, { '/': html('<title>x</title>') })
  t.match(await runInline(handler, { url: `${site.base}/` }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'url',
  })
  t.match(await runInline(handler, { url: 'http://localhost/' }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'url',
  })
  t.equal(site.seen.length, 0, 'no request reached the server')
})
