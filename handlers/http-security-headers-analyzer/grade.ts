/**
 * The grading of http-security-headers-analyzer, kept apart from fetching so every rule can be
 * tested on headers directly (HSTS over a trusted TLS certificate cannot be served from a test).
 *
 * Each check has a weight (its maximum points, 100 in all). pass earns all of them, partial half
 * (rounded down), fail none; not_applicable (e.g. no cookies set) earns all, since there is
 * nothing to fault. Grade from the score: A ≥ 90, B ≥ 75, C ≥ 60, D ≥ 40, else F; a page whose
 * final answer came over plain HTTP is F whatever its headers (anyone on the path can change them).
 */
import { headerValue, type Headers, type SetCookie } from '../_shared/webpage-fetch.js'

export type CheckResult = 'pass' | 'partial' | 'fail' | 'not_applicable'

export interface Check {
  id: string
  title: string
  result: CheckResult
  points: number
  maxPoints: number
  /** the header value(s) the check read, null when absent */
  value: string | null
  /** what was found, and what is missing or risky */
  notes: string[]
}

export interface GradedCookie extends SetCookie {
  /** the URL whose answer set it */
  setBy: string
  issues: string[]
}

export const GRADING_SCALE =
  'score = points earned / 100; weights: HSTS 20, CSP 25, framing 10, X-Content-Type-Options 10, Referrer-Policy 10, Permissions-Policy 5, COOP 4, COEP 3, CORP 3, cookies 5, disclosure 5; ' +
  'pass = full weight, partial = half, fail = 0, not_applicable = full; grade A ≥ 90, B ≥ 75, C ≥ 60, D ≥ 40, else F; a page served over plain HTTP is F.'

const WEIGHTS = {
  hsts: 20,
  csp: 25,
  framing: 10,
  contentTypeOptions: 10,
  referrerPolicy: 10,
  permissionsPolicy: 5,
  coop: 4,
  coep: 3,
  corp: 3,
  cookies: 5,
  disclosure: 5,
} as const

const HALF_YEAR = 15_552_000 // 180 days, the usual minimum recommended for HSTS

function check(
  id: keyof typeof WEIGHTS,
  title: string,
  result: CheckResult,
  value: string | null,
  notes: string[],
): Check {
  const maxPoints = WEIGHTS[id]
  const points =
    result === 'pass' || result === 'not_applicable' ? maxPoints : result === 'partial' ? Math.floor(maxPoints / 2) : 0
  return { id, title, result, points, maxPoints, value, notes }
}

/** A CSP policy as directive → source list (the first occurrence of a directive wins, as in browsers). */
export function parseCsp(policy: string): Map<string, string[]> {
  const out = new Map<string, string[]>()
  for (const part of policy.split(';')) {
    const [name, ...values] = part.trim().split(/\s+/)
    if (!name) continue
    const key = name.toLowerCase()
    if (!out.has(key)) out.set(key, values)
  }
  return out
}

export function gradeHsts(value: string | undefined, https: boolean): Check {
  const title = 'Strict-Transport-Security (HSTS)'
  if (!https)
    return check('hsts', title, 'fail', value ?? null, [
      'the page is not served over HTTPS; browsers ignore HSTS sent over plain HTTP',
    ])
  if (value === undefined)
    return check('hsts', title, 'fail', null, ['header missing: browsers may still reach the site over plain HTTP'])
  const dirs = value.split(';').map((d) => d.trim().toLowerCase())
  const maxAgeRaw = dirs
    .find((d) => d.startsWith('max-age='))
    ?.slice(8)
    .replace(/"/g, '')
  const maxAge = maxAgeRaw !== undefined && /^\d+$/.test(maxAgeRaw) ? Number(maxAgeRaw) : null
  const sub = dirs.includes('includesubdomains')
  const preload = dirs.includes('preload')
  const notes = [
    maxAge === null
      ? 'max-age missing or invalid: the header is ignored'
      : `max-age ${maxAge} s (${Math.round(maxAge / 86_400)} days)`,
    sub ? 'includeSubDomains set' : 'includeSubDomains not set',
    preload ? 'preload set' : 'preload not set',
  ]
  if (preload && (maxAge === null || maxAge < 31_536_000 || !sub))
    notes.push('preload list entry requires max-age ≥ 31536000 and includeSubDomains')
  if (maxAge === null || maxAge === 0) return check('hsts', title, 'fail', value, notes)
  if (maxAge < HALF_YEAR) return check('hsts', title, 'partial', value, [...notes, 'max-age below 180 days'])
  return check('hsts', title, 'pass', value, notes)
}

export function gradeCsp(
  enforced: string | undefined,
  reportOnly: string | undefined,
): { check: Check; policy: Map<string, string[]> | null } {
  const title = 'Content-Security-Policy'
  if (enforced === undefined) {
    if (reportOnly !== undefined)
      return {
        check: check('csp', title, 'partial', reportOnly, [
          'only Content-Security-Policy-Report-Only is sent: violations are reported, not blocked',
        ]),
        policy: null,
      }
    return {
      check: check('csp', title, 'fail', null, [
        'header missing: no restriction on where scripts and other content may load from',
      ]),
      policy: null,
    }
  }
  // several policies (repeated header or comma-joined) all apply; the first is analysed
  const policies = enforced
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
  const policy = parseCsp(policies[0] ?? '')
  const notes: string[] = []
  if (policies.length > 1) notes.push(`${policies.length} policies are sent; the first is analysed`)
  const issues: string[] = []
  const defaultSrc = policy.get('default-src')
  const scriptDirective = policy.has('script-src') ? 'script-src' : policy.has('default-src') ? 'default-src' : null
  if (!defaultSrc) issues.push('no default-src: content types without their own directive are unrestricted')
  if (!scriptDirective) issues.push('neither script-src nor default-src: scripts are unrestricted')
  else {
    const src = policy.get(scriptDirective)!.map((s) => s.toLowerCase())
    const hashOrNonce = src.some((s) => /^'(nonce-|sha256-|sha384-|sha512-)/.test(s))
    if (src.includes("'unsafe-inline'")) {
      if (hashOrNonce)
        notes.push(
          `${scriptDirective} has 'unsafe-inline' with a nonce or hash: CSP2+ browsers ignore 'unsafe-inline' there`,
        )
      else issues.push(`${scriptDirective} allows 'unsafe-inline': inline scripts (the usual XSS payload) run`)
    }
    if (src.includes("'unsafe-eval'"))
      issues.push(`${scriptDirective} allows 'unsafe-eval': eval() and new Function() run`)
    const broad = src.filter((s) => s === '*' || s === 'http:' || s === 'https:' || s === 'data:')
    if (broad.length && !src.includes("'strict-dynamic'"))
      issues.push(`${scriptDirective} allows ${broad.join(' ')}: scripts may load from almost anywhere`)
  }
  if (!policy.has('object-src') && !(defaultSrc ?? []).some((s) => s.toLowerCase() === "'none'"))
    notes.push("object-src is not restricted to 'none'")
  return { check: check('csp', title, issues.length ? 'partial' : 'pass', enforced, [...issues, ...notes]), policy }
}

export function gradeFraming(xfo: string | undefined, csp: Map<string, string[]> | null): Check {
  const title = 'Clickjacking protection (X-Frame-Options / frame-ancestors)'
  const fa = csp?.get('frame-ancestors')
  if (fa)
    return check('framing', title, 'pass', `frame-ancestors ${fa.join(' ')}`, [
      'CSP frame-ancestors set (it takes precedence over X-Frame-Options)',
    ])
  if (xfo === undefined)
    return check('framing', title, 'fail', null, [
      'neither X-Frame-Options nor CSP frame-ancestors: any site can frame the page',
    ])
  const v = xfo.trim().toUpperCase()
  if (v === 'DENY' || v === 'SAMEORIGIN') return check('framing', title, 'pass', xfo, [`X-Frame-Options ${v}`])
  if (v.startsWith('ALLOW-FROM'))
    return check('framing', title, 'partial', xfo, [
      'ALLOW-FROM is obsolete and ignored by current browsers; use CSP frame-ancestors',
    ])
  return check('framing', title, 'fail', xfo, ['X-Frame-Options value not recognised (DENY or SAMEORIGIN expected)'])
}

export function gradeContentTypeOptions(value: string | undefined): Check {
  const title = 'X-Content-Type-Options'
  if (value === undefined)
    return check('contentTypeOptions', title, 'fail', null, ['header missing: browsers may MIME-sniff responses'])
  if (value.trim().toLowerCase() === 'nosniff') return check('contentTypeOptions', title, 'pass', value, ['nosniff'])
  return check('contentTypeOptions', title, 'fail', value, ['the only valid value is nosniff'])
}

const REFERRER_GOOD = new Set(['no-referrer', 'same-origin', 'strict-origin', 'strict-origin-when-cross-origin'])
const REFERRER_WEAK = new Set(['origin', 'origin-when-cross-origin', 'no-referrer-when-downgrade'])

export function gradeReferrerPolicy(value: string | undefined): Check {
  const title = 'Referrer-Policy'
  if (value === undefined)
    return check('referrerPolicy', title, 'partial', null, [
      'header missing: current browsers default to strict-origin-when-cross-origin, older ones send full URLs',
    ])
  // the last value the browser knows wins (fallback lists)
  const tokens = value
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean)
  const known = tokens.filter((x) => REFERRER_GOOD.has(x) || REFERRER_WEAK.has(x) || x === 'unsafe-url')
  const effective = known[known.length - 1]
  if (!effective) return check('referrerPolicy', title, 'fail', value, ['no recognised policy value'])
  if (REFERRER_GOOD.has(effective))
    return check('referrerPolicy', title, 'pass', value, [`effective policy ${effective}`])
  if (effective === 'unsafe-url')
    return check('referrerPolicy', title, 'fail', value, [
      'unsafe-url sends the full URL (path and query) to every site, even over HTTP',
    ])
  return check('referrerPolicy', title, 'partial', value, [
    `effective policy ${effective} sends more than the origin, or the origin even on same-site requests`,
  ])
}

export function gradePermissionsPolicy(value: string | undefined, featurePolicy: string | undefined): Check {
  const title = 'Permissions-Policy'
  if (value !== undefined)
    return check('permissionsPolicy', title, 'pass', value, [
      `${value.split(',').filter((s) => s.trim()).length} features restricted`,
    ])
  if (featurePolicy !== undefined)
    return check('permissionsPolicy', title, 'partial', featurePolicy, [
      'only the deprecated Feature-Policy header is sent',
    ])
  return check('permissionsPolicy', title, 'fail', null, [
    'header missing: camera, microphone, geolocation etc. are not restricted for embedded content',
  ])
}

export function gradeCoop(value: string | undefined): Check {
  const title = 'Cross-Origin-Opener-Policy'
  const v = value?.split(';')[0]!.trim().toLowerCase()
  if (v === 'same-origin' || v === 'same-origin-allow-popups' || v === 'noopener-allow-popups')
    return check('coop', title, 'pass', value!, [`${v}: cross-origin windows cannot keep a handle on this one`])
  if (value === undefined) return check('coop', title, 'fail', null, ['header missing (defaults to unsafe-none)'])
  return check('coop', title, 'fail', value, [`${v} does not isolate the browsing context`])
}

export function gradeCoep(value: string | undefined): Check {
  const title = 'Cross-Origin-Embedder-Policy'
  const v = value?.split(';')[0]!.trim().toLowerCase()
  if (v === 'require-corp' || v === 'credentialless') return check('coep', title, 'pass', value!, [`${v}`])
  if (value === undefined)
    return check('coep', title, 'fail', null, [
      'header missing (defaults to unsafe-none): the page cannot be cross-origin isolated',
    ])
  return check('coep', title, 'fail', value, [`${v} does not require opt-in from embedded resources`])
}

export function gradeCorp(value: string | undefined): Check {
  const title = 'Cross-Origin-Resource-Policy'
  const v = value?.trim().toLowerCase()
  if (v === 'same-origin' || v === 'same-site')
    return check('corp', title, 'pass', value!, [`${v}: other sites cannot embed this response`])
  if (v === 'cross-origin')
    return check('corp', title, 'partial', value!, [
      'cross-origin: any site may embed this response (fine for public assets)',
    ])
  if (value === undefined) return check('corp', title, 'fail', null, ['header missing'])
  return check('corp', title, 'fail', value, ['value not recognised'])
}

/** Finds each cookie's weaknesses and grades them together. */
export function gradeCookies(
  cookies: Array<SetCookie & { setBy: string }>,
  https: boolean,
): { check: Check; cookies: GradedCookie[] } {
  const title = 'Cookie attributes (Secure, HttpOnly, SameSite)'
  const graded = cookies.map((c) => {
    const issues: string[] = []
    if (!c.secure && https) issues.push('no Secure: can be sent over plain HTTP')
    if (!c.httpOnly) issues.push('no HttpOnly: readable by page scripts')
    if (!c.sameSite) issues.push('no SameSite: browser default applies (Lax in Chromium, none in some others)')
    else if (c.sameSite.toLowerCase() === 'none' && !c.secure)
      issues.push('SameSite=None without Secure: rejected by current browsers')
    return { ...c, issues }
  })
  if (graded.length === 0)
    return { check: check('cookies', title, 'not_applicable', null, ['no cookies set']), cookies: graded }
  const insecure = graded.filter((c) =>
    c.issues.some((i) => i.startsWith('no Secure') || i.startsWith('SameSite=None')),
  )
  const weak = graded.filter((c) => c.issues.length > 0)
  const notes = weak.map((c) => `${c.name}: ${c.issues.join('; ')}`)
  const value = graded.map((c) => c.name).join(', ')
  if (insecure.length) return { check: check('cookies', title, 'fail', value, notes), cookies: graded }
  if (weak.length) return { check: check('cookies', title, 'partial', value, notes), cookies: graded }
  return {
    check: check('cookies', title, 'pass', value, [
      `${graded.length} cookie(s), all Secure, HttpOnly and with SameSite`,
    ]),
    cookies: graded,
  }
}

const DISCLOSING = [
  'x-powered-by',
  'x-aspnet-version',
  'x-aspnetmvc-version',
  'x-generator',
  'x-drupal-cache',
  'x-runtime',
]

export function gradeDisclosure(headers: Headers): Check {
  const title = 'Software disclosure (Server, X-Powered-By)'
  const server = headerValue(headers, 'server')
  const found = DISCLOSING.map((h) => [h, headerValue(headers, h)] as const).filter(
    ([, v]) => v !== undefined,
  ) as Array<readonly [string, string]>
  const all = [...(server !== undefined ? ([['server', server]] as const) : []), ...found]
  if (all.length === 0) return check('disclosure', title, 'pass', null, ['no Server or X-Powered-By header'])
  const value = all.map(([k, v]) => `${k}: ${v}`).join('; ')
  const versioned = all.filter(([, v]) => /\d/.test(v))
  const notes = all.map(([k, v]) =>
    /\d/.test(v) ? `${k} discloses a version (${v})` : `${k} names the software (${v})`,
  )
  if (versioned.length) return check('disclosure', title, 'fail', value, notes)
  if (found.length) return check('disclosure', title, 'partial', value, notes)
  return check('disclosure', title, 'pass', value, [...notes, 'a product name without a version is a minor disclosure'])
}

export function gradeOf(score: number, https: boolean): 'A' | 'B' | 'C' | 'D' | 'F' {
  if (!https) return 'F'
  return score >= 90 ? 'A' : score >= 75 ? 'B' : score >= 60 ? 'C' : score >= 40 ? 'D' : 'F'
}

/** Every check on one answer's headers, with the score and grade. */
export function gradeHeaders(headers: Headers, https: boolean, cookies: Array<SetCookie & { setBy: string }>) {
  const h = (n: string) => headerValue(headers, n)
  const csp = gradeCsp(h('content-security-policy'), h('content-security-policy-report-only'))
  const cookieGrade = gradeCookies(cookies, https)
  const checks = [
    gradeHsts(h('strict-transport-security'), https),
    csp.check,
    gradeFraming(h('x-frame-options'), csp.policy),
    gradeContentTypeOptions(h('x-content-type-options')),
    gradeReferrerPolicy(h('referrer-policy')),
    gradePermissionsPolicy(h('permissions-policy'), h('feature-policy')),
    gradeCoop(h('cross-origin-opener-policy')),
    gradeCoep(h('cross-origin-embedder-policy')),
    gradeCorp(h('cross-origin-resource-policy')),
    cookieGrade.check,
    gradeDisclosure(headers),
  ]
  const score = checks.reduce((s, c) => s + c.points, 0)
  return { score, grade: gradeOf(score, https), checks, cookies: cookieGrade.cookies }
}
