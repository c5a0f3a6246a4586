import { defineHandler } from '../../src/pool/handler-contract.js'
import {
  fetchPage,
  headerValue,
  headerValues,
  isHtmlType,
  PAGE_MAX_BYTES,
  parseSetCookie,
  type Headers,
} from '../_shared/webpage-fetch.js'
import { absolute, documentBase, loadHtml, scriptSources } from '../_shared/webpage-html.js'
import { SIGNATURES, type Signature } from './signatures.js'

interface Input {
  url: string
}

export interface Evidence {
  source: 'header' | 'cookie' | 'meta' | 'script' | 'link' | 'html' | 'implied'
  /** header, cookie or meta name; for implied: the technology that implies it */
  name?: string
  /** the text the pattern matched (cut at 200 characters) */
  match: string
}

export interface Detection {
  name: string
  category: string
  website: string
  /** only when the matching evidence carried one */
  version: string | null
  implied: boolean
  evidence: Evidence[]
}

/** What the page exposes, collected once for every signature. */
export interface PageTraits {
  headers: Headers
  cookies: string[]
  meta: Map<string, string[]>
  scripts: string[]
  links: string[]
  html: string
}

const cut = (s: string) => (s.length > 200 ? `${s.slice(0, 200)}…` : s)

/** Runs the signature table over a page's traits. */
export function detect(traits: PageTraits, table: Signature[] = SIGNATURES): Detection[] {
  const found = new Map<string, Detection>()
  for (const sig of table) {
    const evidence: Evidence[] = []
    let version: string | null = null
    // `whole`: the evidence shown (a full header value or URL rather than the part of it that matched)
    const hit = (m: RegExpExecArray | null, ev: Omit<Evidence, 'match'>, whole?: string) => {
      if (!m) return
      evidence.push({ ...ev, match: cut(whole ?? (m[0] || (ev.name ?? ''))) })
      if (!version && m.groups?.version) version = m.groups.version
    }
    for (const [name, pattern] of Object.entries(sig.headers ?? {})) {
      const v = headerValue(traits.headers, name)
      if (v !== undefined) hit(pattern.exec(v), { source: 'header', name }, v)
    }
    for (const pattern of sig.cookies ?? [])
      for (const c of traits.cookies) hit(pattern.exec(c), { source: 'cookie', name: c })
    for (const [name, pattern] of Object.entries(sig.meta ?? {}))
      for (const v of traits.meta.get(name) ?? []) hit(pattern.exec(v), { source: 'meta', name }, v)
    for (const pattern of sig.scripts ?? [])
      for (const s of traits.scripts) hit(pattern.exec(s), { source: 'script' }, s)
    for (const pattern of sig.links ?? []) for (const l of traits.links) hit(pattern.exec(l), { source: 'link' }, l)
    for (const pattern of sig.html ?? []) hit(pattern.exec(traits.html), { source: 'html' })
    if (evidence.length)
      found.set(sig.name, {
        name: sig.name,
        category: sig.category,
        website: sig.website,
        version,
        implied: false,
        evidence: dedupe(evidence),
      })
  }
  // implied technologies, transitively; a detected one only gains the extra evidence
  const byName = new Map(table.map((s) => [s.name, s]))
  const queue = [...found.values()]
  while (queue.length) {
    const d = queue.shift()!
    for (const name of byName.get(d.name)?.implies ?? []) {
      const sig = byName.get(name)
      if (!sig) continue
      const existing = found.get(name)
      const ev: Evidence = { source: 'implied', name: d.name, match: `${d.name} runs on ${name}` }
      if (existing) {
        if (!existing.evidence.some((e) => e.source === 'implied' && e.name === d.name)) existing.evidence.push(ev)
        continue
      }
      const nd: Detection = {
        name,
        category: sig.category,
        website: sig.website,
        version: null,
        implied: true,
        evidence: [ev],
      }
      found.set(name, nd)
      queue.push(nd)
    }
  }
  return [...found.values()].sort((a, b) => a.category.localeCompare(b.category) || a.name.localeCompare(b.name))
}

function dedupe(evidence: Evidence[]): Evidence[] {
  const seen = new Set<string>()
  return evidence
    .filter((e) => {
      const k = `${e.source}|${e.name ?? ''}|${e.match}`
      if (seen.has(k)) return false
      seen.add(k)
      return true
    })
    .slice(0, 10)
}

export default defineHandler<Input>({
  slug: 'tech-stack-detector',
  description:
    'Detect the technologies behind a public web page (web servers, CDNs, frameworks, CMSs, e-commerce platforms, analytics and more) from its headers, cookies, meta generator, script and stylesheet URLs and HTML markers, with the evidence for each.',
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
        description: 'absolute http(s) URL of a public page; redirects are followed (up to 5)',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'url, finalUrl, status, redirects, technologies [{name,category,website,version (null unless the evidence carries one),implied (true when only implied by another detection),evidence [{source (header | cookie | meta | script | link | html | implied),name,match}]}], ' +
      `categories {category: [names]}, signaturesChecked, and limits: scripts are not executed, so tools injected only at run time are not seen.`,
    schema: {
      type: 'object',
      properties: {
        finalUrl: { type: 'string' },
        status: { type: 'integer' },
        technologies: { type: 'array' },
        categories: { type: 'object' },
        signaturesChecked: { type: 'integer' },
      },
    },
    example: {
      url: 'https://www.example.com/',
      finalUrl: 'https://www.example.com/',
      status: 200,
      redirects: [],
      technologies: [
        {
          name: 'Google Analytics',
          category: 'Analytics',
          website: 'https://marketingplatform.google.com/about/analytics/',
          version: null,
          implied: false,
          evidence: [
            { source: 'script', match: 'https://www.googletagmanager.com/gtag/js?id=G-ABC123' },
            { source: 'html', match: 'googletagmanager.com/gtag/js' },
          ],
        },
        {
          name: 'Cloudflare',
          category: 'CDN',
          website: 'https://www.cloudflare.com',
          version: null,
          implied: false,
          evidence: [{ source: 'header', name: 'cf-ray', match: '84a1b2c3d4e5-FRA' }],
        },
        {
          name: 'jsDelivr',
          category: 'CDN',
          website: 'https://www.jsdelivr.com',
          version: null,
          implied: false,
          evidence: [
            { source: 'link', match: 'https://cdn.jsdelivr.net/npm/bootstrap@5.3.2/dist/css/bootstrap.min.css' },
          ],
        },
      ],
      categories: {
        Analytics: ['Google Analytics'],
        CDN: ['Cloudflare', 'jsDelivr'],
        CMS: ['WordPress'],
        'E-commerce': ['WooCommerce'],
        'Font script': ['Google Fonts'],
        'JavaScript framework': ['Vue.js'],
        'JavaScript library': ['jQuery'],
        'Payment processor': ['Stripe'],
        'Programming language': ['PHP'],
        'UI framework': ['Bootstrap'],
        'Web server': ['Nginx'],
      },
      signaturesChecked: 84,
      limits:
        'the page is read as served (up to 2 MB); scripts are not executed, so technologies loaded only at run time are not seen',
    },
  },
  example: { url: 'https://example.com/' },
  async run(input, ctx) {
    const page = await fetchPage(input.url, ctx, { field: 'url', maxBytes: PAGE_MAX_BYTES })
    const cookies = [
      ...new Set(
        page.hops.flatMap((h) =>
          headerValues(h.headers, 'set-cookie')
            .map((l) => parseSetCookie(l)?.name)
            .filter((n): n is string => !!n),
        ),
      ),
    ]
    const traits: PageTraits = { headers: page.headers, cookies, meta: new Map(), scripts: [], links: [], html: '' }
    // markup is only read from HTML answers; headers and cookies count for any answer
    if (isHtmlType(page.mimeType) || page.mimeType === null) {
      const $ = await loadHtml(page.body, page.charset)
      const base = documentBase($, page.finalUrl)
      $('meta[content]').each((_, el) => {
        const name = (el.attribs.name ?? el.attribs.property ?? '').trim().toLowerCase()
        if (!name) return
        traits.meta.set(name, [...(traits.meta.get(name) ?? []), el.attribs.content!.trim()])
      })
      traits.scripts = scriptSources($, base)
      $('link[href]').each((_, el) => {
        const u = absolute(el.attribs.href, base)
        if (u) traits.links.push(u.toString())
      })
      traits.html = $.html()
    }
    const technologies = detect(traits)
    const categories: Record<string, string[]> = {}
    for (const t of technologies) (categories[t.category] ??= []).push(t.name)
    return {
      body: {
        url: page.url,
        finalUrl: page.finalUrl,
        status: page.status,
        redirects: page.redirects,
        technologies,
        categories,
        signaturesChecked: SIGNATURES.length,
        limits:
          'the page is read as served (up to 2 MB); scripts are not executed, so technologies loaded only at run time are not seen',
      },
    }
  },
})
