import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import { fetchPage, headerValue, isHtmlType, isJsonType, PAGE_MAX_BYTES } from '../_shared/webpage-fetch.js'
import {
  canonicalUrls,
  documentBase,
  loadHtml,
  mainText,
  metaContent,
  pageHeadings,
  pageImages,
  pageLanguage,
  pageLinks,
  pageTitle,
  squash,
} from '../_shared/webpage-html.js'

const MATCH_TEXT_MAX = 2_000
const MATCH_HTML_MAX = 5_000
const MAX_JSON_DEPTH = 1_000

interface Input {
  url: string
  selector?: string
  maxMatches: number
  maxTextLength: number
  maxLinks: number
  maxImages: number
}

export default defineHandler<Input>({
  slug: 'web-scraper',
  description:
    'Fetch a public web page and extract its title, meta description, canonical URL, language, readable main text, headings, links and images; optionally the text, HTML and attributes of elements matching a CSS selector.',
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
        description: 'absolute http(s) URL of a public page (pages over 2 MB are cut at 2 MB)',
      },
      selector: {
        type: 'string',
        minLength: 1,
        maxLength: 300,
        description:
          'optional CSS selector (e.g. "article h2 a", "table.prices td"); the matching elements are returned in `matches`',
      },
      maxMatches: {
        type: 'integer',
        minimum: 1,
        maximum: 100,
        default: 20,
        description: 'at most this many selector matches are returned (1–100); `matchCount` gives the full count',
      },
      maxTextLength: {
        type: 'integer',
        minimum: 0,
        maximum: 200_000,
        default: 20_000,
        description: 'main text is cut to this many characters (0–200000)',
      },
      maxLinks: {
        type: 'integer',
        minimum: 0,
        maximum: 1000,
        default: 200,
        description: 'at most this many links are listed (0–1000); the counts cover all of them',
      },
      maxImages: {
        type: 'integer',
        minimum: 0,
        maximum: 500,
        default: 100,
        description: 'at most this many images are listed (0–500)',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'url, finalUrl, status, redirects [{url,status}], contentType, bytes, truncated (body cut at 2 MB), kind (html | text | json). ' +
      'For HTML: title, description, canonical, language (null when the page does not declare them), text (readable main text from <main>, the only <article>, or <body> without nav/header/footer/aside; scripts and styles stripped), ' +
      'textSource, textLength, textTruncated, headings [{level,text}], links [{url,text,rel,internal}], linkCounts {internal,external,total}, images [{src,alt,width,height}], imageCount, ' +
      'and with a selector: selector, matchCount, matches [{tag,text,html,attributes}] (text cut at 2000, html at 5000 characters). For text/*: text. For JSON: json (parsed).',
    schema: {
      type: 'object',
      properties: {
        url: { type: 'string' },
        finalUrl: { type: 'string' },
        status: { type: 'integer' },
        redirects: { type: 'array' },
        contentType: { type: ['string', 'null'] },
        bytes: { type: 'integer' },
        truncated: { type: 'boolean' },
        kind: { type: 'string', enum: ['html', 'text', 'json'] },
        title: { type: ['string', 'null'] },
        description: { type: ['string', 'null'] },
        canonical: { type: ['string', 'null'] },
        language: { type: ['string', 'null'] },
        text: { type: 'string' },
        headings: { type: 'array' },
        links: { type: 'array' },
        images: { type: 'array' },
        matches: { type: 'array' },
      },
    },
    example: {
      url: 'https://www.example.com/shop/',
      finalUrl: 'https://www.example.com/shop/',
      status: 200,
      redirects: [],
      contentType: 'text/html; charset=utf-8',
      bytes: 889,
      truncated: false,
      kind: 'html',
      title: 'Widgets & Co',
      description: 'We sell widgets.',
      canonical: 'https://www.example.com/products',
      language: 'en-GB',
      text: 'Our widgets\nWidgets are great.\nPrices\nSmall 3 EUR\nLarge 5 EUR\nPartner Mail us skip',
      textSource: 'main',
      textLength: 82,
      textTruncated: false,
      headings: [
        { level: 1, text: 'Our widgets' },
        { level: 2, text: 'Prices' },
      ],
      links: [
        { url: 'https://www.example.com/', text: 'Home', rel: [], internal: true },
        { url: 'https://www.example.com/about', text: 'About', rel: [], internal: true },
        { url: 'https://other.example.org/x?y=1', text: 'Partner', rel: ['nofollow'], internal: false },
      ],
      linkCounts: { internal: 2, external: 2, total: 4 },
      images: [
        { src: 'https://www.example.com/shop/img/small.png', alt: 'A small widget', width: '10', height: null },
        { src: 'http://cdn.example.net/large.png', alt: null, width: null, height: null },
      ],
      imageCount: 2,
    },
  },
  example: { url: 'https://example.com/', maxMatches: 20, maxTextLength: 20_000, maxLinks: 200, maxImages: 100 },
  async run(input, ctx) {
    const page = await fetchPage(input.url, ctx, { field: 'url', maxBytes: PAGE_MAX_BYTES })
    const contentType = headerValue(page.headers, 'content-type') ?? null
    const meta = {
      url: page.url,
      finalUrl: page.finalUrl,
      status: page.status,
      redirects: page.redirects,
      contentType,
      bytes: page.body.length,
      truncated: page.truncated,
    }
    const kind = classify(page.mimeType, page.body)
    if (kind === 'json') {
      if (input.selector)
        throw new HandlerInputError('selector', 'the URL answered JSON; a CSS selector applies to HTML pages only', 422)
      if (page.truncated)
        throw new HandlerInputError('url', `the JSON document is larger than ${PAGE_MAX_BYTES} bytes`, 422)
      let json: unknown
      try {
        json = JSON.parse(decode(page.body, page.charset))
      } catch {
        throw new HandlerInputError(
          'url',
          'the URL answered with a JSON content type but the body is not valid JSON',
          422,
        )
      }
      // JSON.parse takes any depth, but sending the answer (serialising it) recurses per level and overflows
      if (jsonDepth(json) > MAX_JSON_DEPTH)
        throw new HandlerInputError(
          'url',
          `the JSON document nests more than ${MAX_JSON_DEPTH} levels deep; it cannot be returned as JSON`,
          422,
        )
      return { body: { ...meta, kind, json } }
    }
    if (kind === 'text') {
      if (input.selector)
        throw new HandlerInputError(
          'selector',
          'the URL answered plain text; a CSS selector applies to HTML pages only',
          422,
        )
      const text = decode(page.body, page.charset)
      return {
        body: {
          ...meta,
          kind,
          text: text.slice(0, input.maxTextLength),
          textLength: text.length,
          textTruncated: text.length > input.maxTextLength,
        },
      }
    }
    if (kind === null)
      throw new HandlerInputError(
        'url',
        `the URL answered ${page.mimeType ?? 'an unlabelled binary body'}; only HTML, text and JSON can be scraped`,
        422,
      )

    const $ = await loadHtml(page.body, page.charset)
    const base = documentBase($, page.finalUrl)
    let selected: Record<string, unknown> = {}
    if (input.selector) {
      let found
      try {
        // $(string) would build new elements from a selector that looks like markup ("<p>x</p>"); find() only selects
        found = $.root().find(input.selector)
      } catch (err) {
        throw new HandlerInputError('selector', `selector is not a valid CSS selector: ${(err as Error).message}`)
      }
      selected = {
        selector: input.selector,
        matchCount: found.length,
        matches: found
          .toArray()
          .slice(0, input.maxMatches)
          .map((el) => {
            const html = $.html(el) ?? ''
            const text = squash($(el).text())
            return {
              tag: el.type === 'tag' ? el.name : el.type,
              text: text.slice(0, MATCH_TEXT_MAX),
              html: html.slice(0, MATCH_HTML_MAX),
              htmlTruncated: html.length > MATCH_HTML_MAX,
              attributes: el.type === 'tag' ? { ...el.attribs } : {},
            }
          }),
      }
    }
    const { text, source } = mainText($)
    const links = pageLinks($, base, page.finalUrl)
    const images = pageImages($, base)
    const internal = links.filter((l) => l.internal).length
    return {
      body: {
        ...meta,
        kind,
        title: pageTitle($),
        description: metaContent($, 'description'),
        canonical: canonicalUrls($, base)[0] ?? null,
        language: pageLanguage($),
        text: text.slice(0, input.maxTextLength),
        textSource: source,
        textLength: text.length,
        textTruncated: text.length > input.maxTextLength,
        headings: pageHeadings($, 500),
        links: links.slice(0, input.maxLinks),
        linkCounts: { internal, external: links.length - internal, total: links.length },
        images: images.slice(0, input.maxImages),
        imageCount: images.length,
        ...selected,
      },
    }
  },
})

/** html, text or json from the media type; an unlabelled body is sniffed (HTML markup, else UTF-8 text); null = refuse. */
function classify(mime: string | null, body: Buffer): 'html' | 'text' | 'json' | null {
  if (isHtmlType(mime)) return 'html'
  if (isJsonType(mime)) return 'json'
  if (mime?.startsWith('text/') || mime === 'application/xml' || mime?.endsWith('+xml')) return 'text'
  if (mime === null) {
    const head = body.subarray(0, 1024).toString('utf8').trimStart().toLowerCase()
    if (head.startsWith('<!doctype html') || head.startsWith('<html')) return 'html'
    if (
      body.length === 0 ||
      (!body.includes(0) &&
        new TextDecoder('utf-8', { fatal: false }).decode(body.subarray(0, 4096)).indexOf('\ufffd') === -1)
    )
      return 'text'
  }
  return null
}

/** Nesting depth of parsed JSON, without recursion (stops counting past MAX_JSON_DEPTH). */
function jsonDepth(value: unknown): number {
  let max = 0
  const stack: Array<{ v: unknown; d: number }> = [{ v: value, d: 0 }]
  while (stack.length && max <= MAX_JSON_DEPTH) {
    const { v, d } = stack.pop()!
    if (v === null || typeof v !== 'object') continue
    max = Math.max(max, d + 1)
    for (const c of Array.isArray(v) ? v : Object.values(v))
      if (c !== null && typeof c === 'object') stack.push({ v: c, d: d + 1 })
  }
  return max
}

/** Decodes with the declared charset when the runtime knows it, else UTF-8. */
function decode(body: Buffer, charset: string | null): string {
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(body)
  } catch {
    return new TextDecoder('utf-8').decode(body)
  }
}
