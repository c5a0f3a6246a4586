import {
  defineHandler,
  HandlerInputError,
  HandlerUpstreamError,
  type HandlerContext,
} from '../../src/pool/handler-contract.js'
import { fetchPage, headerValue, isHtmlType, PAGE_MAX_BYTES } from '../_shared/webpage-fetch.js'
import {
  canonicalUrls,
  countWords,
  documentBase,
  jsonLd,
  loadHtml,
  metaContent,
  metaWithPrefix,
  pageHeadings,
  pageImages,
  pageLanguage,
  pageLinks,
  pageTitle,
  readableTextOf,
} from '../_shared/webpage-html.js'
import { isDisallowed, parseRobotsTxt } from './robots-txt.js'

type Severity = 'high' | 'medium' | 'low' | 'info'

interface Issue {
  id: string
  severity: Severity
  message: string
}

const PENALTY: Record<Severity, number> = { high: 15, medium: 7, low: 3, info: 0 }
const SCORING =
  'score = 100 − 15 per high, − 7 per medium, − 3 per low issue (info issues cost nothing), never below 0. Title 30–60 and meta description 50–160 characters are the ranges search engines display without cutting.'

const TITLE_RANGE = [30, 60] as const
const DESCRIPTION_RANGE = [50, 160] as const
const THIN_CONTENT_WORDS = 300

interface Input {
  url: string
  checkRobotsAndSitemap: boolean
}

export default defineHandler<Input>({
  slug: 'seo-analyzer',
  description:
    "Audit a public web page for on-page SEO: title, meta description, headings, canonical, robots directives, Open Graph/Twitter tags, image alt text, links, word count, language, viewport, JSON-LD structured data, plus the site's robots.txt and sitemap.xml; issues with severity and a 0–100 score.",
  network: true,
  timeoutMs: 30_000,
  inputSchema: {
    type: 'object',
    required: ['url'],
    additionalProperties: false,
    properties: {
      url: {
        type: 'string',
        minLength: 4,
        maxLength: 2048,
        description: 'absolute http(s) URL of a public HTML page (pages over 2 MB are read up to 2 MB)',
      },
      checkRobotsAndSitemap: {
        type: 'boolean',
        default: true,
        description: "also fetch /robots.txt and /sitemap.xml of the page's origin (two more requests)",
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'url, finalUrl, status, redirects, https, score (0–100), scoring (how the score is computed), issues [{id,severity (high | medium | low | info),message}], ' +
      'title {text,length}, metaDescription {text,length}, headings {counts {h1..h6}, h1 [texts], skippedLevels [{from,to,text}]}, canonical {urls,selfReferencing}, ' +
      'robots {meta,xRobotsTag,noindex,nofollow}, openGraph {og:* tags}, twitter {twitter:* tags}, images {total,withAlt,emptyAlt,missingAlt,altCoverage}, ' +
      'links {internal,external,nofollow}, wordCount, language, viewport, structuredData {jsonLdBlocks,invalidJsonLd,jsonLdTypes,microdataItems}, ' +
      'robotsTxt {url,found,status,disallowsPage,sitemaps} and sitemap {url,found,status,urlCount} (null when not checked).',
    schema: {
      type: 'object',
      properties: {
        finalUrl: { type: 'string' },
        status: { type: 'integer' },
        score: { type: 'integer' },
        issues: { type: 'array' },
        title: { type: 'object' },
        metaDescription: { type: 'object' },
        headings: { type: 'object' },
        images: { type: 'object' },
        links: { type: 'object' },
        wordCount: { type: 'integer' },
        robotsTxt: { type: ['object', 'null'] },
        sitemap: { type: ['object', 'null'] },
      },
    },
    example: {
      url: 'https://www.example.com/good',
      finalUrl: 'https://www.example.com/good',
      status: 200,
      redirects: [],
      https: false,
      score: 93,
      scoring:
        'score = 100 − 15 per high, − 7 per medium, − 3 per low issue (info issues cost nothing), never below 0. Title 30–60 and meta description 50–160 characters are the ranges search engines display without cutting.',
      issues: [
        {
          id: 'no-https',
          severity: 'medium',
          message: 'the page is served over plain HTTP; search engines prefer HTTPS pages',
        },
      ],
      title: { text: 'Handmade oak furniture from the Black Forest', length: 44 },
      metaDescription: {
        text: 'Tables, chairs and shelves made to order from local oak, delivered across Europe within six weeks.',
        length: 98,
      },
      headings: { counts: { h1: 1, h2: 2, h3: 1, h4: 0, h5: 0, h6: 0 }, h1: ['Oak furniture'], skippedLevels: [] },
      canonical: { urls: ['https://www.example.com/good'], selfReferencing: true },
      robots: { meta: null, xRobotsTag: null, noindex: false, nofollow: false },
      openGraph: { 'og:title': 'Oak furniture', 'og:description': 'Made to order', 'og:image': '/og.png' },
      twitter: { 'twitter:card': 'summary_large_image' },
      images: { total: 2, withAlt: 1, emptyAlt: 1, missingAlt: 0, altCoverage: 100 },
      links: { internal: 1, external: 1, nofollow: 1 },
      wordCount: 327,
      language: 'en',
      viewport: 'width=device-width, initial-scale=1',
      structuredData: {
        jsonLdBlocks: 1,
        invalidJsonLd: 0,
        jsonLdTypes: ['Organization', 'Product', 'Thing'],
        microdataItems: 0,
      },
      robotsTxt: {
        url: 'https://www.example.com/robots.txt',
        found: true,
        status: 200,
        error: null,
        disallowsPage: false,
        sitemaps: ['/sitemap.xml'],
      },
      sitemap: { url: 'https://www.example.com/sitemap.xml', found: true, status: 200, error: null, urlCount: 2 },
    },
  },
  example: { url: 'https://example.com/', checkRobotsAndSitemap: true },
  async run(input, ctx) {
    const page = await fetchPage(input.url, ctx, { field: 'url', maxBytes: PAGE_MAX_BYTES })
    if (!isHtmlType(page.mimeType) && page.mimeType !== null) {
      throw new HandlerInputError('url', `the URL answered ${page.mimeType}, not an HTML page`, 422)
    }
    const $ = await loadHtml(page.body, page.charset)
    const base = documentBase($, page.finalUrl)
    const issues: Issue[] = []
    const add = (id: string, severity: Severity, message: string) => issues.push({ id, severity, message })
    const final = new URL(page.finalUrl)

    if (page.status < 200 || page.status >= 300)
      add(
        'http-status',
        'high',
        `the page answered HTTP ${page.status}; search engines index only pages that answer 200`,
      )
    const https = final.protocol === 'https:'
    if (!https) add('no-https', 'medium', 'the page is served over plain HTTP; search engines prefer HTTPS pages')
    if (page.truncated)
      add(
        'page-size',
        'low',
        `the page is larger than ${PAGE_MAX_BYTES} bytes; only the first ${PAGE_MAX_BYTES} bytes were analysed`,
      )

    const title = pageTitle($)
    if (!title) add('title-missing', 'high', 'no <title>')
    else if (title.length < TITLE_RANGE[0])
      add(
        'title-short',
        'low',
        `title is ${title.length} characters; ${TITLE_RANGE[0]}–${TITLE_RANGE[1]} use the space search results give`,
      )
    else if (title.length > TITLE_RANGE[1])
      add(
        'title-long',
        'low',
        `title is ${title.length} characters; search results cut it after about ${TITLE_RANGE[1]}`,
      )
    if ($('title').length > 1)
      add('title-multiple', 'low', `${$('title').length} <title> elements; only the first is used`)

    const description = metaContent($, 'description')
    if (!description)
      add('description-missing', 'medium', 'no meta description; search engines will pick a snippet themselves')
    else if (description.length < DESCRIPTION_RANGE[0])
      add(
        'description-short',
        'low',
        `meta description is ${description.length} characters; ${DESCRIPTION_RANGE[0]}–${DESCRIPTION_RANGE[1]} recommended`,
      )
    else if (description.length > DESCRIPTION_RANGE[1])
      add(
        'description-long',
        'low',
        `meta description is ${description.length} characters; snippets are cut after about ${DESCRIPTION_RANGE[1]}`,
      )

    const headings = pageHeadings($)
    const counts = Object.fromEntries(
      [1, 2, 3, 4, 5, 6].map((l) => [`h${l}`, headings.filter((h) => h.level === l).length]),
    )
    const h1 = headings.filter((h) => h.level === 1).map((h) => h.text)
    if (h1.length === 0) add('h1-missing', 'high', 'no <h1> heading')
    else if (h1.length > 1) add('h1-multiple', 'low', `${h1.length} <h1> headings; one main heading is clearer`)
    const skippedLevels: Array<{ from: number; to: number; text: string }> = []
    for (let i = 0, prev = 0; i < headings.length; prev = headings[i]!.level, i++) {
      const h = headings[i]!
      if (h.level > prev + 1) skippedLevels.push({ from: prev, to: h.level, text: h.text })
    }
    if (skippedLevels.length)
      add(
        'heading-order',
        'low',
        `heading levels are skipped ${skippedLevels.length} time(s) (e.g. h${skippedLevels[0]!.from || '-'} → h${skippedLevels[0]!.to})`,
      )

    const canonicals = canonicalUrls($, base)
    const normalise = (u: string) => u.replace(/#.*$/, '')
    const selfReferencing = canonicals.length > 0 ? normalise(canonicals[0]!) === normalise(page.finalUrl) : null
    if (canonicals.length === 0) add('canonical-missing', 'low', 'no <link rel="canonical">')
    else if (new Set(canonicals).size > 1)
      add(
        'canonical-conflict',
        'medium',
        `${canonicals.length} different canonical URLs; search engines may ignore them all`,
      )
    else if (!selfReferencing)
      add(
        'canonical-elsewhere',
        'info',
        `the canonical URL points to another page (${canonicals[0]}); this page is declared a duplicate`,
      )

    const robotsMeta = metaContent($, 'robots')
    const xRobotsTag = headerValue(page.headers, 'x-robots-tag') ?? null
    const directives = `${robotsMeta ?? ''},${xRobotsTag ?? ''}`.toLowerCase()
    const noindex = /\b(noindex|none)\b/.test(directives)
    const nofollow = /\b(nofollow|none)\b/.test(directives)
    if (noindex) add('noindex', 'high', 'robots directives forbid indexing (noindex)')
    if (nofollow) add('nofollow', 'medium', 'robots directives tell crawlers not to follow links (nofollow)')

    const openGraph = metaWithPrefix($, 'og:')
    const missingOg = ['og:title', 'og:description', 'og:image'].filter((k) => !openGraph[k])
    if (missingOg.length)
      add('open-graph', 'low', `Open Graph tags missing: ${missingOg.join(', ')} (link previews on social sites)`)
    const twitter = metaWithPrefix($, 'twitter:')
    if (!twitter['twitter:card'])
      add('twitter-card', 'info', 'no twitter:card tag (X/Twitter falls back to Open Graph)')

    const imgs = pageImages($, base)
    const missingAlt = imgs.filter((i) => i.alt === null).length
    const emptyAlt = imgs.filter((i) => i.alt === '').length
    const altCoverage = imgs.length ? Math.round(((imgs.length - missingAlt) / imgs.length) * 1000) / 10 : null
    if (missingAlt > 0)
      add(
        'image-alt',
        altCoverage! < 50 ? 'medium' : 'low',
        `${missingAlt} of ${imgs.length} images have no alt attribute`,
      )

    const links = pageLinks($, base, page.finalUrl)
    const internal = links.filter((l) => l.internal).length
    if (internal === 0) add('no-internal-links', 'low', 'no links to other pages of the site')

    const body = $('body').first()
    const wordCount = countWords(readableTextOf(body.length ? body.toArray() : $.root().toArray()))
    if (wordCount < THIN_CONTENT_WORDS)
      add(
        'thin-content',
        'low',
        `${wordCount} words of visible text; pages under ${THIN_CONTENT_WORDS} words often rank as thin content`,
      )

    const language = pageLanguage($)
    if (!language) add('lang-missing', 'low', 'no lang attribute on <html>')
    const viewport = metaContent($, 'viewport')
    if (!viewport) add('viewport-missing', 'medium', 'no <meta name="viewport">: the page is not mobile-friendly')

    const blocks = jsonLd($)
    const jsonLdTypes = [...new Set(blocks.flatMap((b) => b.types))]
    const invalidJsonLd = blocks.filter((b) => !b.valid).length
    const microdataItems = $('[itemscope]').length
    if (invalidJsonLd) add('jsonld-invalid', 'medium', `${invalidJsonLd} JSON-LD block(s) are not valid JSON`)
    if (blocks.length === 0 && microdataItems === 0)
      add('structured-data-missing', 'info', 'no structured data (JSON-LD or microdata)')

    let robotsTxt: Record<string, unknown> | null = null
    let sitemap: Record<string, unknown> | null = null
    if (input.checkRobotsAndSitemap) {
      const [r, s] = await Promise.all([
        fetchSmall(`${final.origin}/robots.txt`, ctx),
        fetchSmall(`${final.origin}/sitemap.xml`, ctx),
      ])
      const robotsFound = r.status === 200 && !looksLikeHtml(r.text)
      const parsed = robotsFound ? parseRobotsTxt(r.text!) : null
      const disallowsPage = parsed ? isDisallowed(parsed, final.pathname + final.search) : null
      robotsTxt = {
        url: `${final.origin}/robots.txt`,
        found: robotsFound,
        status: r.status,
        error: r.error,
        disallowsPage,
        sitemaps: parsed?.sitemaps ?? [],
      }
      const sitemapFound = s.status === 200 && /<(urlset|sitemapindex)[\s>]/.test(s.text ?? '')
      sitemap = {
        url: `${final.origin}/sitemap.xml`,
        found: sitemapFound,
        status: s.status,
        error: s.error,
        urlCount: sitemapFound ? (s.text!.match(/<loc[\s>]/g)?.length ?? 0) : null,
      }
      if (!robotsFound) add('robots-txt-missing', 'low', 'no robots.txt at the site root')
      if (disallowsPage)
        add('robots-txt-blocks', 'high', 'robots.txt disallows this page for all crawlers (user-agent *)')
      if (!sitemapFound) {
        if (parsed?.sitemaps.length)
          add('sitemap-elsewhere', 'info', `no /sitemap.xml, but robots.txt names ${parsed.sitemaps.length} sitemap(s)`)
        else add('sitemap-missing', 'low', 'no /sitemap.xml and no Sitemap line in robots.txt')
      }
    }

    const score = Math.max(0, 100 - issues.reduce((s, i) => s + PENALTY[i.severity], 0))
    return {
      body: {
        url: page.url,
        finalUrl: page.finalUrl,
        status: page.status,
        redirects: page.redirects,
        https,
        score,
        scoring: SCORING,
        issues,
        title: { text: title, length: title?.length ?? 0 },
        metaDescription: { text: description, length: description?.length ?? 0 },
        headings: { counts, h1, skippedLevels },
        canonical: { urls: canonicals, selfReferencing },
        robots: { meta: robotsMeta, xRobotsTag, noindex, nofollow },
        openGraph,
        twitter,
        images: { total: imgs.length, withAlt: imgs.length - missingAlt - emptyAlt, emptyAlt, missingAlt, altCoverage },
        links: {
          internal,
          external: links.length - internal,
          nofollow: links.filter((l) => l.rel.includes('nofollow')).length,
        },
        wordCount,
        language,
        viewport,
        structuredData: { jsonLdBlocks: blocks.length, invalidJsonLd, jsonLdTypes, microdataItems },
        robotsTxt,
        sitemap,
      },
    }
  },
})

const looksLikeHtml = (text: string | null) => text !== null && /^\s*<(!doctype|html|head|body)/i.test(text)

/** robots.txt / sitemap.xml of the same origin: a failure is part of the answer, not an error of the call. */
async function fetchSmall(
  url: string,
  ctx: HandlerContext,
): Promise<{ status: number | null; text: string | null; error: string | null }> {
  try {
    const r = await fetchPage(url, ctx, { field: 'url', maxBytes: 1024 * 1024, timeoutMs: 8_000, maxRedirects: 3 })
    return { status: r.status, text: r.body.toString('utf8'), error: null }
  } catch (err) {
    if (err instanceof HandlerUpstreamError || err instanceof HandlerInputError)
      return { status: null, text: null, error: err.message }
    throw err
  }
}
