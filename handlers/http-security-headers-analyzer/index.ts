import { defineHandler, HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import { fetchPage, headerValues, parseSetCookie, type FetchedPage } from '../_shared/webpage-fetch.js'
import { GRADING_SCALE, gradeHeaders } from './grade.js'

interface Input {
  url: string
}

/** Headers echoed back as received (lower-case names), so the buyer sees what was graded. */
const SHOWN = [
  'strict-transport-security',
  'content-security-policy',
  'content-security-policy-report-only',
  'x-frame-options',
  'x-content-type-options',
  'referrer-policy',
  'permissions-policy',
  'feature-policy',
  'cross-origin-opener-policy',
  'cross-origin-embedder-policy',
  'cross-origin-resource-policy',
  'server',
  'x-powered-by',
  'x-aspnet-version',
  'x-aspnetmvc-version',
  'x-generator',
  'x-xss-protection',
]

export default defineHandler<Input>({
  slug: 'http-security-headers-analyzer',
  description:
    'Fetch a URL (HEAD, falling back to GET) and grade its HTTP security headers: HSTS, CSP, framing protection, X-Content-Type-Options, Referrer-Policy, Permissions-Policy, COOP/COEP/CORP, cookie flags and software disclosure, with a result per check and an A–F grade.',
  network: true,
  timeoutMs: 25_000,
  inputSchema: {
    type: 'object',
    required: ['url'],
    additionalProperties: false,
    properties: {
      url: {
        type: 'string',
        minLength: 4,
        maxLength: 2048,
        description:
          'absolute http(s) URL of a public page; redirects are followed (up to 5) and the final answer is graded',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'url, finalUrl, status, method (HEAD, or GET when HEAD was refused), redirects [{url,status}], https (final answer over TLS), ' +
      'grade (A–F), score (0–100), gradingScale (how the score and grade are computed), checks [{id,title,result (pass | partial | fail | not_applicable),points,maxPoints,value,notes}], ' +
      'cookies [{name,secure,httpOnly,sameSite,domain,path,persistent,lifetimeSeconds,setBy,issues}] (from every answer in the redirect chain; values are not returned), headers (the security-relevant headers as received).',
    schema: {
      type: 'object',
      properties: {
        url: { type: 'string' },
        finalUrl: { type: 'string' },
        status: { type: 'integer' },
        method: { type: 'string', enum: ['HEAD', 'GET'] },
        https: { type: 'boolean' },
        grade: { type: 'string', enum: ['A', 'B', 'C', 'D', 'F'] },
        score: { type: 'integer' },
        checks: { type: 'array' },
        cookies: { type: 'array' },
        headers: { type: 'object' },
      },
    },
    example: {
      url: 'https://www.example.com/',
      finalUrl: 'https://www.example.com/',
      status: 200,
      method: 'HEAD',
      redirects: [],
      https: false,
      grade: 'F',
      score: 74,
      gradingScale:
        'score = points earned / 100; weights: HSTS 20, CSP 25, framing 10, X-Content-Type-Options 10, Referrer-Policy 10, Permissions-Policy 5, COOP 4, COEP 3, CORP 3, cookies 5, disclosure 5; pass = full wei…',
      checks: [
        {
          id: 'hsts',
          title: 'Strict-Transport-Security (HSTS)',
          result: 'fail',
          points: 0,
          maxPoints: 20,
          value: 'max-age=63072000; includeSubDomains; preload',
          notes: ['the page is not served over HTTPS; browsers ignore HSTS sent over plain HTTP'],
        },
        {
          id: 'csp',
          title: 'Content-Security-Policy',
          result: 'pass',
          points: 25,
          maxPoints: 25,
          value: "default-src 'self'; script-src 'self' 'nonce-abc'; object-src 'none'; frame-ancestors 'none'",
          notes: [],
        },
        {
          id: 'framing',
          title: 'Clickjacking protection (X-Frame-Options / frame-ancestors)',
          result: 'pass',
          points: 10,
          maxPoints: 10,
          value: "frame-ancestors 'none'",
          notes: ['CSP frame-ancestors set (it takes precedence over X-Frame-Options)'],
        },
      ],
      cookies: [
        {
          name: 'session',
          secure: false,
          httpOnly: true,
          sameSite: 'Lax',
          domain: null,
          path: null,
          persistent: false,
          lifetimeSeconds: null,
          setBy: 'https://www.example.com/',
          issues: [],
        },
        {
          name: 'theme',
          secure: false,
          httpOnly: false,
          sameSite: null,
          domain: null,
          path: null,
          persistent: false,
          lifetimeSeconds: null,
          setBy: 'https://www.example.com/',
          issues: [
            'no HttpOnly: readable by page scripts',
            'no SameSite: browser default applies (Lax in Chromium, none in some others)',
          ],
        },
      ],
      headers: {
        'strict-transport-security': 'max-age=63072000; includeSubDomains; preload',
        'content-security-policy':
          "default-src 'self'; script-src 'self' 'nonce-abc'; object-src 'none'; frame-ancestors 'none'",
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'strict-origin-when-cross-origin',
        'permissions-policy': 'camera=(), microphone=(), geolocation=()',
        'cross-origin-opener-policy': 'same-origin',
        'cross-origin-embedder-policy': 'require-corp',
        'cross-origin-resource-policy': 'same-origin',
        'x-powered-by': 'Express',
      },
    },
  },
  example: { url: 'https://example.com/' },
  async run(input, ctx) {
    let page: FetchedPage | null = null
    let method: 'HEAD' | 'GET' = 'HEAD'
    try {
      page = await fetchPage(input.url, ctx, { field: 'url', method: 'HEAD', timeoutMs: 10_000, maxBytes: 64 * 1024 })
    } catch (err) {
      // some servers drop HEAD requests; GET below decides whether the site is reachable
      if (!(err instanceof HandlerUpstreamError)) throw err
    }
    // 405/501 (HEAD not allowed) and other errors: many servers answer GET differently
    if (page === null || page.status >= 400) {
      method = 'GET'
      page = await fetchPage(input.url, ctx, { field: 'url', method: 'GET', timeoutMs: 12_000, maxBytes: 256 * 1024 })
    }
    const https = new URL(page.finalUrl).protocol === 'https:'
    const cookies = page.hops.flatMap((hop) =>
      headerValues(hop.headers, 'set-cookie')
        .map((line) => parseSetCookie(line))
        .filter((c) => c !== null)
        .map((c) => ({ ...c, setBy: hop.url })),
    )
    const graded = gradeHeaders(page.headers, https, cookies)
    const headers: Record<string, string | string[]> = {}
    for (const name of SHOWN) {
      const v = page.headers[name]
      if (v !== undefined) headers[name] = v
    }
    return {
      body: {
        url: page.url,
        finalUrl: page.finalUrl,
        status: page.status,
        method,
        redirects: page.redirects,
        https,
        grade: graded.grade,
        score: graded.score,
        gradingScale: GRADING_SCALE,
        checks: graded.checks,
        cookies: graded.cookies,
        headers,
      },
    }
  },
})
