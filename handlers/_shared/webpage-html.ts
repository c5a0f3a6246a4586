/**
 * Reading a fetched HTML page with cheerio (htmlparser2/parse5 underneath) for the webpage
 * handlers: what the document declares (title, meta tags, canonical, language), its headings,
 * links, images, scripts and readable text. cheerio is imported lazily (handler modules load in
 * the main thread for their metadata).
 *
 * @example
 *   const $ = await loadHtml(page.body, page.charset)
 *   const base = documentBase($, page.finalUrl)
 *   const links = pageLinks($, base)
 */
import type { CheerioAPI } from 'cheerio'
import type { AnyNode, Element } from 'domhandler'
import { HandlerInputError } from '../../src/pool/handler-contract.js'
import { bareHost } from './webpage-fetch.js'

/**
 * Parses HTML bytes; the encoding is sniffed (BOM, <meta charset>, then the HTTP charset, else
 * UTF-8). A page nesting elements deeper than MAX_PARSE_DEPTH is refused (422 on `field`): parse5
 * checks the stack of open elements at every tag, so its time grows with the square of the depth
 * (40,000 nested <div>s, a 200 KB page, took 50 s of CPU).
 */
export async function loadHtml(body: Buffer, charset: string | null, field = 'url'): Promise<CheerioAPI> {
  const depth = nestingEstimate(body, charset)
  if (depth > MAX_PARSE_DEPTH)
    throw new HandlerInputError(
      field,
      `the page nests elements more than ${MAX_PARSE_DEPTH} levels deep; it cannot be analysed`,
      422,
    )
  const { loadBuffer } = await import('cheerio')
  let $: CheerioAPI
  try {
    $ = loadBuffer(body, { encoding: { transportLayerEncodingLabel: charset ?? undefined } })
  } catch {
    // a label the decoder does not implement (Content-Type: text/html; charset=x-user-defined threw
    // "Encoding not recognized"): the page is read as if it declared none
    $ = loadBuffer(body)
  }
  limitDepth($.root()[0]!)
  return $
}

/** Nesting (as estimated by nestingEstimate) above which a page is not parsed. */
export const MAX_PARSE_DEPTH = 2_048

/** Elements that open no level: void elements, and those whose end tag the parser implies (a new <p>, <li>, <td> closes the last). */
const NO_LEVEL = new Set([
  'area',
  'base',
  'basefont',
  'bgsound',
  'br',
  'col',
  'embed',
  'frame',
  'hr',
  'img',
  'input',
  'keygen',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
  'p',
  'li',
  'dt',
  'dd',
  'option',
  'optgroup',
  'rb',
  'rp',
  'rt',
  'rtc',
  'tr',
  'td',
  'th',
  'tbody',
  'thead',
  'tfoot',
  'caption',
  'colgroup',
  'html',
  'head',
  'body',
])
/** Elements whose start tag closes an open element of the same name instead of nesting in it. */
const SAME_NAME_CLOSES = new Set(['a', 'button', 'nobr', 'select'])
/** Elements whose content is text up to their end tag. */
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title', 'xmp', 'iframe', 'noembed', 'noframes'])

/**
 * How deep the page's elements nest, estimated in one linear pass over its tags (an end tag closes
 * the elements opened after its match, as the parser does). Stops counting past MAX_PARSE_DEPTH.
 */
export function nestingEstimate(body: Buffer, charset: string | null): number {
  const utf16 =
    body[0] === 0xfe && body[1] === 0xff
      ? 'utf-16be'
      : body[0] === 0xff && body[1] === 0xfe
        ? 'utf-16le'
        : /^utf-16/.test(charset ?? '')
          ? charset!
          : null
  let html: string
  try {
    html = (utf16 ? new TextDecoder(utf16).decode(body) : body.toString('latin1')).toLowerCase()
  } catch {
    html = body.toString('latin1').toLowerCase()
  }
  const stack: string[] = []
  const open = new Map<string, number>()
  let foreign = 0 // open <svg>/<math>: there "/>" closes the element
  let max = 0
  let i = 0
  while (i < html.length && max <= MAX_PARSE_DEPTH) {
    const lt = html.indexOf('<', i)
    if (lt === -1) break
    if (html.startsWith('<!--', lt)) {
      const end = html.indexOf('-->', lt + 4)
      if (end === -1) break
      i = end + 3
      continue
    }
    const gt = html.indexOf('>', lt + 1)
    if (gt === -1) break
    i = gt + 1
    const m = /^<(\/?)([a-z][^\s/>]*)/.exec(html.slice(lt, Math.min(gt + 1, lt + 100)))
    if (!m) continue
    const name = m[2]!
    const closeUpTo = (target: string) => {
      for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
        open.set(top, open.get(top)! - 1)
        if (top === 'svg' || top === 'math') foreign--
        if (top === target) break
      }
    }
    if (m[1]) {
      if (open.get(name)) closeUpTo(name)
      continue
    }
    // a second <a>, <button>, <nobr> or <select> closes the open one; a <form> inside a form is dropped
    if (name === 'form' && open.get('form')) continue
    if (SAME_NAME_CLOSES.has(name) && open.get(name)) closeUpTo(name)
    if (RAW_TEXT.has(name)) {
      const end = html.indexOf(`</${name}`, i)
      if (end === -1) break
      i = end
      continue
    }
    if (NO_LEVEL.has(name) || (foreign > 0 && html[gt - 1] === '/')) continue
    stack.push(name)
    open.set(name, (open.get(name) ?? 0) + 1)
    if (name === 'svg' || name === 'math') foreign++
    max = Math.max(max, stack.length)
  }
  return max
}

/**
 * Deepest element nesting kept. cheerio's text(), html() and clone() recurse once per level and
 * overflow the stack a few thousand levels down (a 30 KB page of nested <div>s is enough).
 * Chromium's parser caps nesting at 512 the same way: an element that would sit deeper is
 * attached at the deepest level instead, beside its would-be parent, and keeps its own text.
 */
export const MAX_DOM_DEPTH = 512

type Tree = AnyNode & { children?: AnyNode[] }
const relink = (parent: AnyNode, kids: AnyNode[]) => {
  kids.forEach((n, i) => {
    n.parent = parent as Element
    n.prev = kids[i - 1] ?? null
    n.next = kids[i + 1] ?? null
  })
  ;(parent as Tree).children = kids
}

/** Caps element nesting at MAX_DOM_DEPTH as described above, without recursion. */
function limitDepth(root: AnyNode): void {
  const stack: Array<{ node: Tree; depth: number }> = [{ node: root, depth: 0 }]
  while (stack.length) {
    const { node, depth } = stack.pop()!
    if (!node.children?.length) continue
    if (depth < MAX_DOM_DEPTH - 1) {
      for (const c of node.children) stack.push({ node: c, depth: depth + 1 })
      continue
    }
    // node is at the last level that may hold elements: every element below it becomes its child,
    // in document order, keeping only its text (and comments); its elements move up beside it
    const flat: AnyNode[] = []
    const pending = [...node.children].reverse()
    while (pending.length) {
      const n = pending.pop() as Tree
      flat.push(n)
      if (!n.children?.length) continue
      const nested = n.children.filter((c) => (c as Tree).children !== undefined)
      if (nested.length === 0) continue
      relink(
        n,
        n.children.filter((c) => (c as Tree).children === undefined),
      )
      for (let i = nested.length - 1; i >= 0; i--) pending.push(nested[i]!)
    }
    relink(node, flat)
  }
}

/** Collapses runs of white space to one space and trims. */
export const squash = (s: string) => s.replace(/\s+/g, ' ').trim()

/** The URL relative links resolve against: <base href> when present and valid, else the page URL. */
export function documentBase($: CheerioAPI, pageUrl: string): URL {
  const href = $('base[href]').first().attr('href')
  if (href) {
    try {
      return new URL(href.trim(), pageUrl)
    } catch {
      // an invalid <base> is ignored, as browsers do
    }
  }
  return new URL(pageUrl)
}

/** An absolute URL, or null when the reference cannot be resolved. */
export function absolute(ref: string | undefined, base: URL): URL | null {
  if (ref === undefined) return null
  const r = ref.trim()
  if (!r) return null
  try {
    return new URL(r, base)
  } catch {
    return null
  }
}

/** content of the first <meta name=…> or <meta property=…> with that key (case-insensitive key). */
export function metaContent($: CheerioAPI, key: string): string | null {
  const k = key.toLowerCase()
  let found: string | null = null
  $('meta').each((_, el) => {
    const name = (el.attribs.name ?? el.attribs.property ?? el.attribs['http-equiv'] ?? '').trim().toLowerCase()
    if (name === k && el.attribs.content !== undefined) {
      found = squash(el.attribs.content)
      return false
    }
    return undefined
  })
  return found
}

/** Every <meta name|property> whose key starts with a prefix (og:, twitter:), first value per key. */
export function metaWithPrefix($: CheerioAPI, prefix: string): Record<string, string> {
  const out: Record<string, string> = {}
  $('meta').each((_, el) => {
    const name = (el.attribs.property ?? el.attribs.name ?? '').trim().toLowerCase()
    if (name.startsWith(prefix) && el.attribs.content !== undefined && !(name in out))
      out[name] = squash(el.attribs.content)
  })
  return out
}

export function pageTitle($: CheerioAPI): string | null {
  const t = $('head title').first().text() || $('title').first().text()
  return t ? squash(t) || null : null
}

export function pageLanguage($: CheerioAPI): string | null {
  return $('html').attr('lang')?.trim() || null
}

/** Every <link rel=canonical> href, resolved (more than one is itself a finding). */
export function canonicalUrls($: CheerioAPI, base: URL): string[] {
  const out: string[] = []
  $('link[rel]').each((_, el) => {
    if (!relList(el).includes('canonical')) return
    const u = absolute(el.attribs.href, base)
    if (u) out.push(u.toString())
  })
  return out
}

export const relList = (el: Element) => (el.attribs.rel ?? '').toLowerCase().split(/\s+/).filter(Boolean)

export interface Heading {
  level: number
  text: string
}

export function pageHeadings($: CheerioAPI, max = Infinity): Heading[] {
  const out: Heading[] = []
  $('h1, h2, h3, h4, h5, h6').each((_, el) => {
    if (out.length >= max) return false
    out.push({ level: Number(el.name.slice(1)), text: squash($(el).text()) })
    return undefined
  })
  return out
}

export interface PageLink {
  url: string
  text: string
  rel: string[]
  /** same host as the page (a leading "www." ignored on both sides); false for other hosts and for mailto:/tel: */
  internal: boolean
}

/** <a href> links, resolved against the document base; javascript: and bare fragments are skipped. */
export function pageLinks($: CheerioAPI, base: URL, pageUrl: string): PageLink[] {
  const host = bareHost(pageUrl)
  const out: PageLink[] = []
  $('a[href]').each((_, el) => {
    const href = el.attribs.href!.trim()
    if (href === '' || href.startsWith('#') || /^javascript:/i.test(href)) return
    const u = absolute(href, base)
    if (!u) return
    const web = u.protocol === 'http:' || u.protocol === 'https:'
    const text = squash($(el).text()) || squash(el.attribs['aria-label'] ?? '') || squash(el.attribs.title ?? '')
    out.push({ url: u.toString(), text, rel: relList(el), internal: web && bareHost(u) === host })
  })
  return out
}

export interface PageImage {
  src: string
  /** null when the alt attribute is absent; "" is a deliberate empty alt (decorative image) */
  alt: string | null
  width: string | null
  height: string | null
}

export function pageImages($: CheerioAPI, base: URL): PageImage[] {
  const out: PageImage[] = []
  $('img').each((_, el) => {
    const raw = el.attribs.src ?? el.attribs['data-src']
    const u = absolute(raw, base)
    out.push({
      src: u ? u.toString() : (raw ?? ''),
      alt: el.attribs.alt === undefined ? null : squash(el.attribs.alt),
      width: el.attribs.width ?? null,
      height: el.attribs.height ?? null,
    })
  })
  return out
}

/** Absolute URLs of <script src>, in document order. */
export function scriptSources($: CheerioAPI, base: URL): string[] {
  const out: string[] = []
  $('script[src]').each((_, el) => {
    const u = absolute(el.attribs.src, base)
    if (u) out.push(u.toString())
  })
  return out
}

/** Text of inline scripts (JSON-LD and other data blocks included), each cut at maxChars. */
export function inlineScripts($: CheerioAPI, maxChars = 100_000): string[] {
  const out: string[] = []
  $('script:not([src])').each((_, el) => {
    out.push($(el).text().slice(0, maxChars))
  })
  return out
}

export interface JsonLdBlock {
  /** @type values found at the top level and in @graph */
  types: string[]
  /** false when the block is not valid JSON */
  valid: boolean
}

/** The JSON-LD blocks of the page with their @type values. */
export function jsonLd($: CheerioAPI): JsonLdBlock[] {
  const out: JsonLdBlock[] = []
  $('script[type]').each((_, el) => {
    if ((el.attribs.type ?? '').trim().toLowerCase() !== 'application/ld+json') return
    let data: unknown
    try {
      data = JSON.parse($(el).text())
    } catch {
      out.push({ types: [], valid: false })
      return
    }
    const types = new Set<string>()
    const visit = (v: unknown) => {
      if (Array.isArray(v)) return v.forEach(visit)
      if (v === null || typeof v !== 'object') return
      const o = v as Record<string, unknown>
      const t = o['@type']
      for (const x of Array.isArray(t) ? t : [t]) if (typeof x === 'string') types.add(x)
      if (Array.isArray(o['@graph'])) o['@graph'].forEach(visit)
    }
    visit(data)
    out.push({ types: [...types], valid: true })
  })
  return out
}

const SKIP = new Set([
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'math',
  'iframe',
  'object',
  'embed',
  'canvas',
  'head',
  'select',
  'datalist',
])
const BLOCK = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'br',
  'caption',
  'dd',
  'details',
  'div',
  'dl',
  'dt',
  'fieldset',
  'figcaption',
  'figure',
  'footer',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hr',
  'li',
  'main',
  'nav',
  'ol',
  'p',
  'pre',
  'section',
  'summary',
  'table',
  'tbody',
  'thead',
  'tfoot',
  'tr',
  'ul',
])
const CELL = new Set(['td', 'th'])

/** Text of a subtree as a reader sees it: block elements on their own lines, scripts/styles/hidden parts left out. */
export function readableTextOf(nodes: AnyNode[]): string {
  const parts: string[] = []
  // source line breaks are white space, except inside <pre>
  const walk = (n: AnyNode, pre: boolean) => {
    if (n.type === 'text') {
      const data = (n as unknown as { data: string }).data
      parts.push(pre ? data : data.replace(/\s+/g, ' '))
      return
    }
    if (n.type !== 'tag' && n.type !== 'root') return
    const el = n as Element
    if (n.type === 'tag') {
      if (SKIP.has(el.name) || el.attribs.hidden !== undefined || el.attribs['aria-hidden'] === 'true') return
      if (BLOCK.has(el.name)) parts.push('\n')
      else if (CELL.has(el.name)) parts.push(' \t ')
    }
    for (const c of el.children) walk(c, pre || el.name === 'pre')
    if (n.type === 'tag' && BLOCK.has(el.name)) parts.push('\n')
  }
  for (const n of nodes) walk(n, false)
  return parts
    .join('')
    .split('\n')
    .map((l) => squash(l.replace(/\u00a0/g, ' ')))
    .filter(Boolean)
    .join('\n')
}

/**
 * The page's main readable text. Taken from <main> (or [role=main]), else from the page's only
 * <article>, else from <body> without its <nav>, <header>, <footer> and <aside> (site chrome).
 */
export function mainText($: CheerioAPI): { text: string; source: 'main' | 'article' | 'body' } {
  const main = $('main, [role="main"]').first()
  if (main.length) return { text: readableTextOf(main.toArray()), source: 'main' }
  const articles = $('article')
  if (articles.length === 1) return { text: readableTextOf(articles.toArray()), source: 'article' }
  const body = $('body').first().clone()
  body.find('nav, header, footer, aside').remove()
  return { text: readableTextOf(body.length ? body.toArray() : $.root().toArray()), source: 'body' }
}

/** Words in a text (runs of letters/digits, any script). */
export const countWords = (text: string) => text.match(/[\p{L}\p{N}][\p{L}\p{N}'’-]*/gu)?.length ?? 0
