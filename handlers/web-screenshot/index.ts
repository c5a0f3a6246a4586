import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import { binaryResult } from '../_shared/binary-output.js'
import { errorCode, fetchPublicUrl, parsePublicUrl, providerSetting, resolvePublicHost } from '../_shared/outbound.js'
import type { Headers } from '../_shared/webpage-fetch.js'

const MAX_REQUESTS = 300
const MAX_RESOURCE_BYTES = 8 * 1024 * 1024
const MAX_TOTAL_BYTES = 40 * 1024 * 1024
const MAX_FULL_PAGE_HEIGHT = 8_000
/** the whole call stays inside the declared timeoutMs, leaving time to close the browser */
const BUDGET_MS = 26_000

interface Input {
  url: string
  width: number
  height: number
  fullPage: boolean
  waitUntil: 'load' | 'domcontentloaded' | 'networkidle'
  delayMs: number
}

/** Request headers the browser sends that undici sets itself or refuses. */
const DROP_REQUEST = new Set([
  'host',
  'connection',
  'content-length',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'proxy-connection',
  'accept-encoding',
  'expect',
])
/** Response headers that no longer describe the body handed to the browser (it is whole and decoded). */
const DROP_RESPONSE = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'])

export default defineHandler<Input>({
  slug: 'web-screenshot',
  description:
    'Take a PNG screenshot of a public web page in headless Chromium, at a chosen viewport size or as a full-page capture; every request the page makes is checked and internal addresses are refused.',
  network: true,
  providers: ['CHROMIUM_PATH'],
  timeoutMs: 30_000,
  inputSchema: {
    type: 'object',
    required: ['url'],
    additionalProperties: false,
    properties: {
      url: { type: 'string', minLength: 4, maxLength: 2048, description: 'absolute http(s) URL of a public page' },
      width: {
        type: 'integer',
        minimum: 320,
        maximum: 1920,
        default: 1280,
        description: 'viewport width in CSS pixels (320–1920); the image has this width',
      },
      height: {
        type: 'integer',
        minimum: 240,
        maximum: 1440,
        default: 800,
        description: 'viewport height in CSS pixels (240–1440); the image height unless fullPage',
      },
      fullPage: {
        type: 'boolean',
        default: false,
        description: `capture the whole scrollable page (cut at ${MAX_FULL_PAGE_HEIGHT} pixels) instead of the viewport`,
      },
      waitUntil: {
        type: 'string',
        enum: ['load', 'domcontentloaded', 'networkidle'],
        default: 'load',
        description:
          'when the page counts as loaded: load event, DOMContentLoaded, or no network activity for 500 ms; the wait ends after 15 s at most and the page is captured as it is',
      },
      delayMs: {
        type: 'integer',
        minimum: 0,
        maximum: 5000,
        default: 0,
        description: 'extra wait after loading, for animations or late content (0–5000 ms)',
      },
    },
  },
  output: {
    contentType: 'image/png',
    description:
      'the screenshot as image/png; with Accept: application/json only, { contentType, base64, bytes, width, height, finalUrl, status, blockedRequests }',
    schema: {
      type: 'object',
      description:
        'the JSON variant, answered when Accept asks for application/json only; otherwise the body is the raw bytes in contentType',
      properties: {
        contentType: { type: 'string' },
        base64: { type: 'string', description: 'the bytes, base64 (shortened in the example)' },
        bytes: { type: 'number' },
        width: { type: 'number' },
        height: { type: 'number' },
        finalUrl: { type: 'string' },
        status: { type: 'number' },
        blockedRequests: { type: 'array' },
      },
      required: ['contentType', 'base64', 'bytes', 'width', 'height', 'finalUrl', 'status', 'blockedRequests'],
    },
    example: {
      contentType: 'image/png',
      base64:
        'iVBORw0KGgoAAAANSUhEUgAAAZAAAAfQCAIAAABjVZ7NAAAQAElEQVR4nOzcrcpmVQCG4WfGTxSLP4iiyWPQZLJ4Agpmi3gAgicggkeggohBrSYNIsIEoz9pQMRgVBH8a2rx/TZM+cq0mfeG60p77b3yzVrsxbr4ZgAN1wcQcftg/b69vz23fXYMv9xe214cwJ12+2A9…',
      bytes: 6864,
      width: 1280,
      height: 800,
      finalUrl: 'https://example.com/',
      status: 200,
      blockedRequests: [],
    },
  },
  example: { url: 'https://example.com/', width: 1280, height: 800, fullPage: false, waitUntil: 'load', delayMs: 0 },
  async run(input, ctx) {
    const executablePath = providerSetting(ctx, 'CHROMIUM_PATH', 'web screenshots')
    const started = Date.now()
    const remaining = () => BUDGET_MS - (Date.now() - started)
    // Refuse internal, unresolvable or unreachable targets before starting a browser, and follow
    // the page's redirects here (each hop checked): the browser then opens the final URL, so the
    // document keeps its real address for relative links.
    const first = parsePublicUrl(input.url, 'url')
    await resolvePublicHost(first.hostname, ctx, 'url')
    const probe = await fetchPublicUrl(first.toString(), ctx, {
      field: 'url',
      maxRedirects: 5,
      maxBytes: 64 * 1024,
      timeoutMs: 8_000,
    })
    const target = new URL(probe.finalUrl)

    const release = await browserSlot()
    const { chromium } = await import('playwright-core')
    let browser: Awaited<ReturnType<typeof chromium.launch>> | undefined
    try {
      try {
        browser = await chromium.launch({
          executablePath,
          headless: true,
          timeout: 10_000,
          // Every request is fulfilled by page.route below, so Chromium itself needs no network. What
          // page.route does not see (WebRTC ICE/TURN over TCP, which reached internal hosts directly)
          // is sent to a proxy that does not exist: UDP is allowed only through a proxy, and
          // <-loopback> keeps loopback targets from bypassing it.
          args: [
            '--headless',
            '--no-sandbox',
            '--disable-gpu',
            '--disable-dev-shm-usage',
            '--dns-prefetch-disable',
            '--disable-background-networking',
            '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
            '--proxy-server=http://127.0.0.1:9',
            '--proxy-bypass-list=<-loopback>',
            '--no-first-run',
          ],
        })
      } catch (err) {
        throw new HandlerUpstreamError('upstream_failed', `Chromium could not be started (${firstLine(err)})`)
      }
      // service workers would fetch past page.route; downloads are never wanted
      const context = await browser.newContext({
        viewport: { width: input.width, height: input.height },
        deviceScaleFactor: 1,
        serviceWorkers: 'block',
        acceptDownloads: false,
      })
      const page = await context.newPage()
      const blocked: string[] = []
      let mainError: unknown = null
      let requests = 0
      let totalBytes = 0

      // Every request is made here, not by Chromium: its host is checked, fetchPublicUrl connects
      // only to checked addresses and follows redirects itself, checking every hop (a redirect
      // handed back to the browser would be followed by Chromium without passing through this
      // route again: Playwright routes only the first URL of a redirect chain).
      await page.route('**/*', async (route) => {
        const req = route.request()
        const isMain = req.isNavigationRequest() && req.frame() === page.mainFrame()
        let u: URL
        try {
          u = new URL(req.url())
        } catch {
          return route.abort('blockedbyclient')
        }
        const method = req.method()
        if (
          (u.protocol !== 'http:' && u.protocol !== 'https:') ||
          !['GET', 'HEAD', 'POST'].includes(method) ||
          ++requests > MAX_REQUESTS ||
          remaining() < 2_000
        ) {
          return route.abort('blockedbyclient')
        }
        try {
          await resolvePublicHost(u.hostname, ctx, 'url')
        } catch (err) {
          if (err instanceof HandlerInputError) blocked.push(u.host)
          if (isMain) mainError = err
          return route.abort('blockedbyclient')
        }
        try {
          const headers: Record<string, string> = { 'accept-encoding': 'gzip, deflate, br' }
          for (const [k, v] of Object.entries(await req.allHeaders()))
            if (!DROP_REQUEST.has(k) && !k.startsWith(':')) headers[k] = v
          const res = await fetchPublicUrl(u.toString(), ctx, {
            field: 'url',
            method: method as 'GET' | 'HEAD' | 'POST',
            headers,
            body: req.postData() ?? undefined,
            maxRedirects: 5,
            timeoutMs: Math.min(10_000, remaining()),
            maxBytes: MAX_RESOURCE_BYTES,
          })
          if (res.truncated) return route.abort('blockedbyclient')
          // the budget counts what Chromium is handed: decoded bytes (8 MB of gzip can hold gigabytes)
          const body = decoded(res.body, res.headers)
          if ((totalBytes += body.length) > MAX_TOTAL_BYTES) return route.abort('blockedbyclient')
          await route.fulfill({ status: res.status, headers: responseHeaders(res.headers), body })
        } catch (err) {
          if (err instanceof HandlerInputError) blocked.push(u.host)
          if (isMain) mainError = err
          await route.abort('failed').catch(() => undefined)
        }
      })
      // WebSocket connections would bypass the checks above: none is opened
      await page.routeWebSocket(/.*/, (ws) =>
        ws.close({ code: 1008, reason: 'WebSockets are not opened for screenshots' }),
      )

      let status: number | null = null
      try {
        const response = await page.goto(target.toString(), {
          waitUntil: input.waitUntil,
          timeout: Math.max(1_000, Math.min(15_000, remaining() - 6_000)),
        })
        status = response?.status() ?? null
      } catch (err) {
        if (mainError)
          throw mainError instanceof HandlerInputError || mainError instanceof HandlerUpstreamError
            ? mainError
            : new HandlerUpstreamError(
                'upstream_failed',
                `${target.hostname} could not be loaded (${errorCode(mainError)})`,
              )
        // a page still loading when the wait ends is captured as it is; anything else failed
        if (!/Timeout/i.test((err as Error).name) && !/timeout/i.test((err as Error).message))
          throw new HandlerUpstreamError(
            'upstream_failed',
            `${target.hostname} could not be loaded (${firstLine(err)})`,
          )
      }
      if (mainError) throw mainError
      // the page's own scripts may close it, navigate it away or crash it while we wait or capture:
      // Playwright then rejects with a plain Error, which is the page failing, not this handler
      let height = input.height
      let png: Buffer
      try {
        const delay = Math.min(input.delayMs, Math.max(0, remaining() - 4_000))
        if (delay > 0) await page.waitForTimeout(delay)
        if (input.fullPage) {
          // evaluate has no timeout of its own, and a page busy in a script loop never answers
          const scrollHeight = await withTimeout(
            page.evaluate(() =>
              Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0),
            ),
            Math.max(1_000, Math.min(5_000, remaining() - 2_000)),
            'the page did not answer (a script keeps it busy)',
          )
          height = Math.max(input.height, Math.min(scrollHeight, MAX_FULL_PAGE_HEIGHT))
        }
        png = await page.screenshot({
          type: 'png',
          fullPage: input.fullPage,
          clip: { x: 0, y: 0, width: input.width, height },
          timeout: Math.max(1_000, remaining()),
        })
      } catch (err) {
        throw new HandlerUpstreamError(
          'upstream_failed',
          `${target.hostname} could not be captured (${firstLine(err)})`,
        )
      }
      return binaryResult(ctx, 'image/png', png, {
        width: input.width,
        height,
        finalUrl: page.url(),
        status,
        blockedRequests: [...new Set(blocked)],
      })
    } finally {
      await browser?.close().catch(() => undefined)
      release()
    }
  },
})

// A Chromium takes 100–200 MB: a worker thread runs at most MAX_BROWSERS at once (the I/O lane
// runs many calls per thread), a few more wait, and past that a call is refused at once.
const MAX_BROWSERS = 2
const MAX_WAITING = 4
let browsersActive = 0
const browserWaiters: Array<() => void> = []

async function browserSlot(): Promise<() => void> {
  if (browsersActive >= MAX_BROWSERS) {
    if (browserWaiters.length >= MAX_WAITING)
      throw new HandlerUpstreamError(
        'upstream_failed',
        'too many screenshots are being taken right now; retry in a few seconds',
      )
    // a finished call hands its slot straight to the first waiter: the count stays as it is
    await new Promise<void>((resolve) => browserWaiters.push(resolve))
  } else browsersActive++
  let released = false
  return () => {
    if (released) return
    released = true
    const next = browserWaiters.shift()
    if (next) next()
    else browsersActive--
  }
}

function responseHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || DROP_RESPONSE.has(k)) continue
    // Playwright splits a set-cookie value on new lines into separate cookies
    out[k] = Array.isArray(v) ? v.join(k === 'set-cookie' ? '\n' : ', ') : v
  }
  return out
}

/** undici hands over the body as sent; the browser gets it decoded (the encoding header is dropped). */
function decoded(body: Buffer, headers: Headers): Buffer {
  const enc = String(headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase()
  const opts = { maxOutputLength: MAX_RESOURCE_BYTES * 4 }
  try {
    if (enc === 'gzip' || enc === 'x-gzip') return gunzipSync(body, opts)
    if (enc === 'deflate') return inflateSync(body, opts)
    if (enc === 'br') return brotliDecompressSync(body, opts)
  } catch {
    return Buffer.alloc(0)
  }
  return body
}

/** The promise, or a rejection after ms (the promise itself is left to settle unobserved). */
function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms)
  })
  p.catch(() => undefined)
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}

const firstLine = (err: unknown) =>
  String((err as Error)?.message ?? err)
    .split('\n')[0]!
    .slice(0, 200)
