import { isIP } from 'node:net'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import { fetchPage, headerValues, isHtmlType, PAGE_MAX_BYTES, parseSetCookie } from '../_shared/webpage-fetch.js'
import { absolute, documentBase, loadHtml, relList, squash } from '../_shared/webpage-html.js'
import {
  CMP_MARKERS,
  cookiePattern,
  POLICY_LINKS,
  TRACKER_HOSTS,
  TRACKER_SNIPPETS,
  TRACKING_COOKIES,
  type TrackerCategory,
} from './known-lists.js'

type Severity = 'high' | 'medium' | 'low' | 'info'

interface Finding {
  id: string
  severity: Severity
  message: string
  evidence?: string[]
}

interface Input {
  url: string
}

const DISCLAIMER =
  'A signal scan of one page load, fetched without running its scripts: it reports observable signals (cookies, third-party requests in the HTML, consent tooling, policy links, HTTPS). It is not legal advice and cannot establish that a site complies with, or breaches, the GDPR or the ePrivacy rules.'

/** Public second-level labels under country codes (co.uk, com.au, ...): the site is then three labels long. */
const PUBLIC_SECOND_LEVEL = new Set(['co', 'com', 'net', 'org', 'gov', 'ac', 'edu', 'ne', 'or', 'gv', 'go'])

/** The site a host belongs to (its registrable domain, approximated without the public suffix list). */
export function siteOf(host: string): string {
  const h = host.toLowerCase().replace(/\.$/, '')
  if (isIP(h.replace(/^\[|\]$/g, ''))) return h
  const labels = h.split('.')
  if (
    labels.length >= 3 &&
    labels[labels.length - 1]!.length === 2 &&
    PUBLIC_SECOND_LEVEL.has(labels[labels.length - 2]!)
  )
    return labels.slice(-3).join('.')
  return labels.slice(-2).join('.')
}

const safeDecode = (s: string) => {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

const trackerFor = (host: string) => TRACKER_HOSTS.find((t) => host === t.host || host.endsWith(`.${t.host}`)) ?? null
const TRACKING_COOKIE_RES = TRACKING_COOKIES.map((c) => ({ ...c, re: cookiePattern(c.pattern) }))

export default defineHandler<Input>({
  slug: 'gdpr-compliance-scanner',
  description:
    'Scan a public web page for GDPR/ePrivacy signals: cookies set before consent, third-party and known tracker hosts, a consent-management platform, privacy/cookie policy and imprint links, forms over HTTP and HTTPS. Findings with severity; a signal scan, not legal advice.',
  network: true,
  timeoutMs: 20_000,
  inputSchema: {
    type: 'object',
    required: ['url'],
    additionalProperties: false,
    properties: {
      url: {
        type: 'string',
        minLength: 4,
        maxLength: 2048,
        description: 'absolute http(s) URL of a public HTML page; redirects are followed (up to 5)',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'url, finalUrl, status, redirects, https, disclaimer (a signal scan, not legal advice), summary {high,medium,low,info}, findings [{id,severity,message,evidence}], ' +
      'cookies [{name,domain,secure,httpOnly,sameSite,persistent,lifetimeSeconds,thirdParty,tracker,setBy}] (set by the first page load, before any consent; values not returned), ' +
      'thirdPartyHosts [{host,elements,tracker}], trackers [{name,category,hosts,blockedUntilConsent}], consentManagement {detected,platforms [{name,evidence}]}, ' +
      'policyLinks {privacy,cookie,imprint} (URLs), forms {total,insecure [action URLs]}, limits.',
    schema: {
      type: 'object',
      properties: {
        finalUrl: { type: 'string' },
        https: { type: 'boolean' },
        disclaimer: { type: 'string' },
        summary: { type: 'object' },
        findings: { type: 'array' },
        cookies: { type: 'array' },
        thirdPartyHosts: { type: 'array' },
        trackers: { type: 'array' },
        consentManagement: { type: 'object' },
        policyLinks: { type: 'object' },
        forms: { type: 'object' },
      },
    },
    example: {
      url: 'https://www.example.com/start',
      finalUrl: 'https://www.example.com/',
      status: 200,
      redirects: [{ url: 'https://www.example.com/start', status: 302 }],
      https: false,
      disclaimer:
        'A signal scan of one page load, fetched without running its scripts: it reports observable signals (cookies, third-party requests in the HTML, consent tooling, policy links, HTTPS). It is not legal ad…',
      summary: { high: 4, medium: 3, low: 2, info: 2 },
      findings: [
        {
          id: 'no-https',
          severity: 'high',
          message:
            'the page is served over plain HTTP: personal data sent to or from it is not protected in transit (Art. 32 GDPR, security of processing)',
        },
        {
          id: 'tracking-cookies-before-consent',
          severity: 'high',
          message: '1 analytics/advertising cookie(s) are set by the server before any consent choice',
          evidence: ['_ga (Google Analytics)'],
        },
        {
          id: 'trackers-without-consent-tool',
          severity: 'high',
          message: '2 known tracker(s) load from the HTML and no consent-management platform was found',
          evidence: ['Google Tag Manager / gtag.js', 'Google Analytics'],
        },
      ],
      cookies: [
        {
          name: 'lb',
          domain: 'www.example.com',
          secure: false,
          httpOnly: false,
          sameSite: null,
          persistent: false,
          lifetimeSeconds: null,
          thirdParty: false,
          tracker: null,
          setBy: 'https://www.example.com/start',
        },
        {
          name: '_ga',
          domain: 'www.example.com',
          secure: false,
          httpOnly: false,
          sameSite: null,
          persistent: true,
          lifetimeSeconds: 63072000,
          thirdParty: false,
          tracker: { name: 'Google Analytics', category: 'analytics' },
          setBy: 'https://www.example.com/',
        },
        {
          name: 'PHPSESSID',
          domain: 'www.example.com',
          secure: false,
          httpOnly: true,
          sameSite: null,
          persistent: false,
          lifetimeSeconds: null,
          thirdParty: false,
          tracker: null,
          setBy: 'https://www.example.com/',
        },
      ],
      thirdPartyHosts: [
        { host: 'cdn.example-widgets.net', elements: { script: 1 }, tracker: null },
        {
          host: 'fonts.googleapis.com',
          elements: { link: 1 },
          tracker: { host: 'fonts.googleapis.com', name: 'Google Fonts', category: 'fonts' },
        },
        { host: 'static.example.com', elements: { script: 1 }, tracker: null },
      ],
      trackers: [
        {
          name: 'Google Tag Manager / gtag.js',
          category: 'tag-manager',
          hosts: ['www.googletagmanager.com'],
          blockedUntilConsent: false,
        },
        {
          name: 'YouTube (use youtube-nocookie.com for embeds)',
          category: 'video-embed',
          hosts: ['www.youtube.com'],
          blockedUntilConsent: false,
        },
        { name: 'Google Fonts', category: 'fonts', hosts: ['fonts.googleapis.com'], blockedUntilConsent: false },
      ],
      consentManagement: { detected: false, platforms: [] },
      policyLinks: {
        privacy: ['https://www.example.com/datenschutz'],
        cookie: [],
        imprint: ['https://www.example.com/impressum'],
      },
      forms: { total: 2, insecure: ['http://forms.example.com/submit', 'https://www.example.com/search'] },
      limits:
        'scripts are not run, so cookies and requests that tags create in the browser (e.g. _ga set by gtag.js) are not seen; third parties are judged by registrable domain, approximated without the public suffix list',
    },
  },
  example: { url: 'https://example.com/' },
  async run(input, ctx) {
    const page = await fetchPage(input.url, ctx, { field: 'url', maxBytes: PAGE_MAX_BYTES })
    if (!isHtmlType(page.mimeType) && page.mimeType !== null)
      throw new HandlerInputError('url', `the URL answered ${page.mimeType}, not an HTML page`, 422)
    const final = new URL(page.finalUrl)
    const pageSite = siteOf(final.hostname)
    const https = final.protocol === 'https:'
    const findings: Finding[] = []
    const add = (f: Finding) => findings.push(f)

    if (!https)
      add({
        id: 'no-https',
        severity: 'high',
        message:
          'the page is served over plain HTTP: personal data sent to or from it is not protected in transit (Art. 32 GDPR, security of processing)',
      })
    else if (page.redirects.length && new URL(page.url).protocol === 'http:')
      add({ id: 'https-redirect', severity: 'info', message: 'the HTTP address redirects to HTTPS' })

    // cookies from every answer of the first load: none of them can have waited for a consent choice
    const cookies = page.hops.flatMap((hop) =>
      headerValues(hop.headers, 'set-cookie').flatMap((line) => {
        const c = parseSetCookie(line)
        if (!c) return []
        const hopHost = new URL(hop.url).hostname
        const domain = c.domain ?? hopHost
        const tracker = TRACKING_COOKIE_RES.find((t) => t.re.test(c.name))
        return [
          {
            name: c.name,
            domain,
            secure: c.secure,
            httpOnly: c.httpOnly,
            sameSite: c.sameSite,
            persistent: c.persistent,
            lifetimeSeconds: c.lifetimeSeconds,
            thirdParty: siteOf(domain) !== pageSite,
            tracker: tracker ? { name: tracker.name, category: tracker.category } : null,
            setBy: hop.url,
          },
        ]
      }),
    )
    const trackingCookies = cookies.filter((c) => c.tracker)
    if (trackingCookies.length) {
      add({
        id: 'tracking-cookies-before-consent',
        severity: 'high',
        message: `${trackingCookies.length} analytics/advertising cookie(s) are set by the server before any consent choice`,
        evidence: trackingCookies.map((c) => `${c.name} (${c.tracker!.name})`),
      })
    }
    const otherPersistent = cookies.filter((c) => !c.tracker && c.persistent && (c.lifetimeSeconds ?? 0) > 0)
    if (otherPersistent.length) {
      add({
        id: 'persistent-cookies-before-consent',
        severity: 'medium',
        message: `${otherPersistent.length} persistent cookie(s) are set before any consent choice; they need consent unless strictly necessary for the service`,
        evidence: otherPersistent.map((c) => `${c.name} (${Math.round((c.lifetimeSeconds ?? 0) / 86_400)} days)`),
      })
    }
    const sessionCookies = cookies.filter((c) => !c.tracker && !(c.persistent && (c.lifetimeSeconds ?? 0) > 0))
    if (sessionCookies.length)
      add({
        id: 'session-cookies',
        severity: 'info',
        message: `${sessionCookies.length} session cookie(s) set on load (usually strictly necessary, e.g. sessions, load balancing)`,
        evidence: sessionCookies.map((c) => c.name),
      })

    const $ = await loadHtml(page.body, page.charset)
    const base = documentBase($, page.finalUrl)

    // third-party resources the HTML makes the browser load
    const hosts = new Map<string, Record<string, number>>()
    const trackers = new Map<
      string,
      { name: string; category: TrackerCategory; hosts: Set<string>; loaded: boolean; blocked: boolean }
    >()
    const noteTracker = (t: { name: string; category: TrackerCategory }, host: string | null, blocked: boolean) => {
      const e = trackers.get(t.name) ?? {
        name: t.name,
        category: t.category,
        hosts: new Set<string>(),
        loaded: false,
        blocked: false,
      }
      if (host) e.hosts.add(host)
      if (blocked) e.blocked = true
      else e.loaded = true
      trackers.set(t.name, e)
    }
    const resources: Array<[string, string, string | undefined]> = []
    $('script[src]').each((_, el) => void resources.push(['script', el.attribs.src!, el.attribs.type]))
    $('iframe[src]').each((_, el) => void resources.push(['iframe', el.attribs.src!, undefined]))
    $('img[src]').each((_, el) => void resources.push(['img', el.attribs.src!, undefined]))
    $('embed[src], video[src], audio[src], source[src]').each(
      (_, el) => void resources.push([el.name, el.attribs.src!, undefined]),
    )
    $('object[data]').each((_, el) => void resources.push(['object', el.attribs.data!, undefined]))
    $('link[href]').each((_, el) => {
      const rel = relList(el)
      if (
        rel.includes('stylesheet') ||
        rel.includes('icon') ||
        rel.includes('preload') ||
        rel.includes('modulepreload')
      )
        resources.push(['link', el.attribs.href!, undefined])
    })
    for (const [element, ref, type] of resources) {
      const u = absolute(ref, base)
      if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) continue
      const host = u.hostname.toLowerCase()
      if (siteOf(host) === pageSite) continue
      const counts = hosts.get(host) ?? {}
      counts[element] = (counts[element] ?? 0) + 1
      hosts.set(host, counts)
      const t = trackerFor(host)
      // consent tools hold back tags written as <script type="text/plain"> until the visitor agrees
      const blocked =
        element === 'script' &&
        type !== undefined &&
        !/^(text|application)\/(javascript|ecmascript)$|^module$|^$/i.test(type.trim())
      if (t) noteTracker(t, host, blocked)
    }
    const inline: Array<{ code: string; blocked: boolean }> = []
    $('script:not([src])').each((_, el) => {
      const type = (el.attribs.type ?? '').trim()
      if (/json/i.test(type)) return
      inline.push({
        code: $(el).text().slice(0, 200_000),
        blocked: type !== '' && !/^(text|application)\/(javascript|ecmascript)$|^module$/i.test(type),
      })
    })
    for (const s of TRACKER_SNIPPETS)
      for (const code of inline) if (s.pattern.test(code.code)) noteTracker(s, null, code.blocked)

    const thirdPartyHosts = [...hosts]
      .map(([host, elements]) => ({ host, elements, tracker: trackerFor(host) }))
      .sort((a, b) => a.host.localeCompare(b.host))
    const trackerList = [...trackers.values()].map((t) => ({
      name: t.name,
      category: t.category,
      hosts: [...t.hosts].sort(),
      blockedUntilConsent: t.blocked && !t.loaded,
    }))

    // consent-management platform
    const haystack = [
      ...$('script[src]')
        .toArray()
        .map((el) => el.attribs.src!),
      ...$('link[href]')
        .toArray()
        .map((el) => el.attribs.href!),
      ...inline.map((i) => i.code),
    ]
    const platforms = CMP_MARKERS.flatMap((m) => {
      for (const h of haystack) {
        const hit = m.pattern.exec(h)
        if (hit) return [{ name: m.name, evidence: hit[0] }]
      }
      return []
    })
    const cmp = platforms.length > 0

    const tracking = trackerList.filter((t) => t.category !== 'fonts' && t.category !== 'video-embed')
    const loadedEarly = tracking.filter((t) => !t.blockedUntilConsent)
    if (loadedEarly.length && !cmp) {
      add({
        id: 'trackers-without-consent-tool',
        severity: 'high',
        message: `${loadedEarly.length} known tracker(s) load from the HTML and no consent-management platform was found`,
        evidence: loadedEarly.map((t) => t.name),
      })
    } else if (loadedEarly.length) {
      add({
        id: 'trackers-load-before-consent',
        severity: 'medium',
        message: `${loadedEarly.length} known tracker(s) are plain script tags or snippets in the HTML; unless the consent tool intercepts them, they load before the visitor chooses`,
        evidence: loadedEarly.map((t) => t.name),
      })
    }
    const blockedTrackers = tracking.filter((t) => t.blockedUntilConsent)
    if (blockedTrackers.length)
      add({
        id: 'trackers-held-for-consent',
        severity: 'info',
        message: `${blockedTrackers.length} tracker tag(s) are held back (non-executable script type) until consent`,
        evidence: blockedTrackers.map((t) => t.name),
      })
    if (cmp)
      add({
        id: 'consent-tool',
        severity: 'info',
        message: `consent-management platform found: ${platforms.map((p) => p.name).join(', ')}`,
      })
    else if (!tracking.length && !trackingCookies.length)
      add({
        id: 'no-consent-tool',
        severity: 'info',
        message:
          'no consent-management platform found; none may be needed when no non-essential cookies or trackers are used',
      })

    const fonts = trackerList.find((t) => t.category === 'fonts')
    if (fonts)
      add({
        id: 'google-fonts',
        severity: 'medium',
        message:
          "fonts are loaded from Google's servers, which receive visitors' IP addresses (a German court found this unlawful without consent: LG München I, 3 O 17493/20); self-host the fonts",
        evidence: fonts.hosts,
      })
    const video = thirdPartyHosts.filter((h) => h.tracker?.category === 'video-embed' && h.elements.iframe)
    if (video.length)
      add({
        id: 'video-embeds',
        severity: 'medium',
        message:
          "embedded videos load the provider's player (and its cookies) before consent; use a click-to-load placeholder or youtube-nocookie.com",
        evidence: video.map((h) => h.host),
      })
    const others = thirdPartyHosts.filter((h) => !h.tracker)
    if (others.length)
      add({
        id: 'third-party-hosts',
        severity: 'low',
        message: `${others.length} other third-party host(s) receive visitors' IP addresses when the page loads; each needs a legal basis and, outside the EEA, a transfer mechanism`,
        evidence: others.map((h) => h.host),
      })

    // policy links
    const policyLinks: Record<keyof typeof POLICY_LINKS, string[]> = { privacy: [], cookie: [], imprint: [] }
    $('a[href]').each((_, el) => {
      const u = absolute(el.attribs.href, base)
      if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) return
      const label = `${squash($(el).text())} ${el.attribs.title ?? ''} ${el.attribs['aria-label'] ?? ''} ${safeDecode(u.pathname)}`
      for (const kind of Object.keys(POLICY_LINKS) as Array<keyof typeof POLICY_LINKS>) {
        if (POLICY_LINKS[kind].test(label) && !policyLinks[kind].includes(u.toString()) && policyLinks[kind].length < 5)
          policyLinks[kind].push(u.toString())
      }
    })
    if (!policyLinks.privacy.length)
      add({
        id: 'privacy-policy-missing',
        severity: 'high',
        message: 'no link to a privacy policy found on the page (Art. 13 GDPR information must be easy to reach)',
      })
    if (!policyLinks.cookie.length)
      add({
        id: 'cookie-policy-missing',
        severity: 'low',
        message: 'no link to a cookie policy found (it may be part of the privacy policy)',
      })
    if (!policyLinks.imprint.length)
      add({
        id: 'imprint-missing',
        severity: 'info',
        message:
          'no imprint / legal notice link found (required for commercial sites in Germany and Austria, among others)',
      })

    // forms
    const forms = $('form').toArray()
    const insecure = forms
      .map((f) => absolute(f.attribs.action ?? '', base)?.toString() ?? page.finalUrl)
      .filter((action) => action.startsWith('http:'))
    if (insecure.length)
      add({
        id: 'forms-over-http',
        severity: 'high',
        message: `${insecure.length} form(s) send their data over plain HTTP`,
        evidence: [...new Set(insecure)],
      })

    const summary = { high: 0, medium: 0, low: 0, info: 0 }
    for (const f of findings) summary[f.severity]++
    const order: Record<Severity, number> = { high: 0, medium: 1, low: 2, info: 3 }
    findings.sort((a, b) => order[a.severity] - order[b.severity])
    return {
      body: {
        url: page.url,
        finalUrl: page.finalUrl,
        status: page.status,
        redirects: page.redirects,
        https,
        disclaimer: DISCLAIMER,
        summary,
        findings,
        cookies,
        thirdPartyHosts,
        trackers: trackerList,
        consentManagement: { detected: cmp, platforms },
        policyLinks,
        forms: { total: forms.length, insecure: [...new Set(insecure)] },
        limits:
          'scripts are not run, so cookies and requests that tags create in the browser (e.g. _ga set by gtag.js) are not seen; third parties are judged by registrable domain, approximated without the public suffix list',
      },
    }
  },
})
