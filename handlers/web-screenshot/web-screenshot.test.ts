import { createServer as createNetServer } from 'node:net'
import { gzipSync } from 'node:zlib'
import t from 'tap'
import { okBody, okResult, runInline } from '../../test/helpers/handler-harness.js'
import { html, webpageServer } from '../../test/helpers/webpage-server.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import type { HandlerContext } from '../../src/pool/handler-contract.js'
import handler from './index.js'

const CHROMIUM = { CHROMIUM_PATH: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium' }

/** width and height from a PNG's IHDR chunk, after checking the signature */
function pngSize(bytes: Uint8Array): { width: number; height: number } {
  const b = Buffer.from(bytes)
  if (!b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    throw new Error('not a PNG')
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) }
}

const PAGE =
  '<!doctype html><html><body style="margin:0;background:#c00"><div style="height:2000px">tall</div></body></html>'

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('a local page: PNG of the viewport size, then full page', async (t) => {
  const site = await webpageServer(t, { '/': html(PAGE) })
  const out = okResult(
    await runInline(handler, { url: `${site.base}/`, width: 640, height: 480 }, { providers: CHROMIUM }),
  )
  t.equal(out.contentType, 'image/png')
  t.same(pngSize(out.body as Uint8Array), { width: 640, height: 480 })
  const sharp = (await import('sharp')).default
  const { data } = await sharp(Buffer.from(out.body as Uint8Array))
    .raw()
    .toBuffer({ resolveWithObject: true })
  t.same([...data.subarray(0, 3)], [0xcc, 0, 0], 'the page background was rendered')

  const body = okBody<{
    contentType: string
    base64: string
    width: number
    height: number
    finalUrl: string
    status: number
    blockedRequests: string[]
  }>(
    await runInline(
      handler,
      { url: `${site.base}/`, width: 400, height: 300, fullPage: true },
      { providers: CHROMIUM, accept: 'application/json' },
    ),
  )
  t.equal(body.contentType, 'image/png')
  t.same(pngSize(Buffer.from(body.base64, 'base64')), { width: 400, height: 2000 })
  t.match(body, { width: 400, height: 2000, finalUrl: `${site.base}/`, status: 200, blockedRequests: [] })
})

t.test('redirects of the page and of its resources are followed, each hop checked', async (t) => {
  const sharp = (await import('sharp')).default
  const blue = await sharp({ create: { width: 10, height: 10, channels: 3, background: { r: 0, g: 0, b: 255 } } })
    .png()
    .toBuffer()
  const site = await webpageServer(t, {
    '/hop': (_req, res) => {
      res.statusCode = 302
      res.setHeader('location', '/page/')
      res.end()
    },
    '/page/': html(
      '<html><body style="margin:0;background:#fff"><img src="img-hop" style="display:block;width:320px;height:240px"></body></html>',
    ),
    '/page/img-hop': (_req, res) => {
      res.statusCode = 301
      res.setHeader('location', '/blue.png')
      res.end()
    },
    '/blue.png': (_req, res) => {
      res.setHeader('content-type', 'image/png')
      res.end(blue)
    },
  })
  const body = okBody<{ base64: string }>(
    await runInline(
      handler,
      { url: `${site.base}/hop`, width: 320, height: 240 },
      { providers: CHROMIUM, accept: 'application/json' },
    ),
  )
  t.match(body, { finalUrl: `${site.base}/page/`, status: 200 })
  t.same(
    site.seen.map((r) => r.url),
    ['/hop', '/page/', '/page/', '/page/img-hop', '/blue.png'],
    'a probe follows the page redirect, then the browser loads the final URL',
  )
  const { data } = await sharp(Buffer.from(body.base64, 'base64')).raw().toBuffer({ resolveWithObject: true })
  t.same([...data.subarray(0, 3)], [0, 0, 255], 'the image behind the redirect was rendered')
})

t.test('with allowPrivateNetwork false, requests the page makes to internal addresses are blocked', async (t) => {
  // the switch turns off once the browser has fetched the page itself (the handler's probe is the
  // first request, the browser's the second): every later request is checked as in production
  let allow = true
  let pageHits = 0
  const ctx: HandlerContext = {
    method: 'POST',
    accept: 'application/json',
    providers: CHROMIUM,
    get allowPrivateNetwork() {
      return allow
    },
  }
  const internal = await webpageServer(t, { '/secret.png': (_req, res) => res.end('secret') })
  const site = await webpageServer(t, {
    '/': (req, res) => {
      if (++pageHits === 2) allow = false
      html(
        `<html><body><img src="${internal.base}/secret.png"><script>fetch('${internal.base}/secret.png?xhr')</script></body></html>`,
      )(req, res)
    },
    '/go-inside': (_req, res) => {
      allow = false
      res.statusCode = 302
      res.setHeader('location', `${internal.base}/secret.png`)
      res.end()
    },
  })
  const out = await handler.run(
    { url: `${site.base}/`, width: 320, height: 240, fullPage: false, waitUntil: 'load', delayMs: 200 },
    ctx,
  )
  const body = out.body as { blockedRequests: string[]; status: number }
  t.equal(body.status, 200)
  t.same(body.blockedRequests, [new URL(internal.base).host])
  t.equal(pageHits, 2)
  t.equal(internal.seen.length, 0, 'the internal server was never reached')

  allow = true
  const err = await Promise.resolve(
    handler.run(
      { url: `${site.base}/go-inside`, width: 320, height: 240, fullPage: false, waitUntil: 'load', delayMs: 0 },
      ctx,
    ),
  ).then(
    () => null,
    (e) => e,
  )
  t.match(
    err,
    { name: 'HandlerInputError', field: 'url' },
    'a redirect of the page itself to an internal address is refused',
  )
  t.equal(internal.seen.length, 0)
})

t.test('a page whose script never yields is 502 upstream_failed, and the browser is closed', async (t) => {
  // page.evaluate (the full-page height) has no timeout of its own: the call used to wait forever,
  // holding its Chromium and its browser slot
  const site = await webpageServer(t, {
    '/': html(
      '<html><body><script>addEventListener("load", () => setTimeout(() => { for (;;) {} }, 10))</script>busy</body></html>',
    ),
  })
  await t.rejects(
    runInline(
      handler,
      { url: `${site.base}/`, width: 320, height: 240, fullPage: true, delayMs: 200 },
      { providers: CHROMIUM },
    ),
    {
      name: 'HandlerUpstreamError',
      code: 'upstream_failed',
      message: /could not be captured \(the page did not answer/,
    },
  )
  // its browser slot was given back: three more calls (two slots, so one would wait forever) succeed
  const normal = await webpageServer(t, { '/': html(PAGE) })
  for (let i = 0; i < 3; i++)
    t.match(await runInline(handler, { url: `${normal.base}/`, width: 320, height: 240 }, { providers: CHROMIUM }), {
      ok: true,
    })
})

t.test("the page's byte budget counts decoded bytes, not the compressed ones", async (t) => {
  // seven resources of 8 MB each that gzip to a few KB: 56 MB decoded, over the 40 MB budget;
  // counted compressed they all passed. The page paints a green square per resource it got whole.
  const zeros = gzipSync(Buffer.alloc(8 * 1024 * 1024))
  const routes: Record<string, Parameters<typeof webpageServer>[1][string]> = {
    '/': html(`<!doctype html><html><body style="margin:0;background:#fff"><script>
      for (let i = 0; i < 7; i++) {
        const d = document.createElement('div')
        d.style.cssText = 'position:absolute;top:0;width:40px;height:40px;background:#00f;left:' + i * 50 + 'px'
        document.body.appendChild(d)
        fetch('/z' + i).then((r) => r.arrayBuffer()).then((b) => { d.style.background = b.byteLength === 8388608 ? '#0f0' : '#f00' }, () => { d.style.background = '#f00' })
      }
    </script></body></html>`),
  }
  for (let i = 0; i < 7; i++) {
    routes[`/z${i}`] = (_req, res) => {
      res.setHeader('content-type', 'application/octet-stream')
      res.setHeader('content-encoding', 'gzip')
      res.end(zeros)
    }
  }
  const site = await webpageServer(t, routes)
  const out = okResult(
    await runInline(handler, { url: `${site.base}/`, width: 400, height: 240, delayMs: 3000 }, { providers: CHROMIUM }),
  )
  const sharp = (await import('sharp')).default
  const { data, info } = await sharp(Buffer.from(out.body as Uint8Array))
    .raw()
    .toBuffer({ resolveWithObject: true })
  const colour = (i: number) => {
    const at = (20 * info.width + i * 50 + 20) * info.channels
    const [r, g, b] = [data[at]!, data[at + 1]!, data[at + 2]!]
    return g > 200 && r < 60 && b < 60 ? 'whole' : r > 200 && g < 60 && b < 60 ? 'refused' : `other(${r},${g},${b})`
  }
  const got = Array.from({ length: 7 }, (_, i) => colour(i))
  t.equal(got.filter((c) => c === 'whole').length, 4, `four fit in 40 MB with the page itself: ${got.join(' ')}`)
  t.equal(got.filter((c) => c === 'refused').length, 3, 'the other three were refused')
})

t.test('WebRTC cannot reach a host that page.route never sees', async (t) => {
  // a TURN server over TCP is contacted by Chromium's own network stack, not through page.route:
  // it used to connect straight to this (internal) listener
  let connections = 0
  const turn = createNetServer((s) => {
    connections++
    s.destroy()
  })
  await new Promise<void>((resolve) => turn.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => turn.close(() => resolve())))
  const port = (turn.address() as { port: number }).port
  const site = await webpageServer(t, {
    '/': html(`<html><body>rtc<script>
      const pc = new RTCPeerConnection({ iceServers: [{ urls: 'turn:127.0.0.1:${port}?transport=tcp', username: 'u', credential: 'p' }] })
      pc.createDataChannel('x')
      pc.createOffer().then((o) => pc.setLocalDescription(o))
    </script></body></html>`),
  })
  const out = await runInline(
    handler,
    { url: `${site.base}/`, width: 320, height: 240, delayMs: 2_000 },
    { providers: CHROMIUM },
  )
  t.match(out, { ok: true }, 'the page itself is still captured')
  t.equal(connections, 0)
})

t.test('internal targets are refused before a browser starts; bad input names the field', async (t) => {
  const site = await webpageServer(t, { '/': html(PAGE) })
  t.match(await runInline(handler, { url: `${site.base}/` }, { providers: CHROMIUM, allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'url',
  })
  t.match(
    await runInline(handler, { url: 'http://localhost:3000/' }, { providers: CHROMIUM, allowPrivateNetwork: false }),
    { ok: false, status: 400, field: 'url' },
  )
  t.equal(site.seen.length, 0)
  t.match(await runInline(handler, { url: `${site.base}/`, width: 5000 }, { providers: CHROMIUM }), {
    ok: false,
    status: 400,
    field: 'width',
  })
  t.match(await runInline(handler, { url: `${site.base}/`, delayMs: 60_000 }, { providers: CHROMIUM }), {
    ok: false,
    status: 400,
    field: 'delayMs',
  })
  t.match(await runInline(handler, { url: 'file:///etc/passwd' }, { providers: CHROMIUM }), {
    ok: false,
    status: 400,
    field: 'url',
  })
})

t.test('unconfigured is 503 upstream_not_configured; a broken Chromium path is 502', async (t) => {
  const site = await webpageServer(t, { '/': html(PAGE) })
  await t.rejects(runInline(handler, { url: `${site.base}/` }, { providers: {} }), {
    name: 'HandlerUpstreamError',
    code: 'upstream_not_configured',
  })
  await t.rejects(
    runInline(handler, { url: `${site.base}/` }, { providers: { CHROMIUM_PATH: '/nonexistent/chromium' } }),
    { name: 'HandlerUpstreamError', code: 'upstream_failed' },
  )
})
