/**
 * The endpoint search index: every listed endpoint (platform, catalog and bazaar) by what it does,
 * answered from memory. Built once per marketplace snapshot (so it follows registry and catalog
 * changes as the snapshot does), never per request.
 *
 * Ranking: each query word scores its best match in one endpoint, a match in the slug, service,
 * namespace or entry name above one in the tags or input field names, and that above one in the
 * description; in each field an exact word above a word it begins, above a word it is inside.
 * Every query word must match. The endpoint whose whole slug is the query comes first.
 *
 * @example
 *   const index = new EndpointSearchIndex(endpoints)
 *   const page = index.search({ text: 'hash', limit: 10 })   // page.hits[0].endpoint.slug === 'hash-generator'
 */

/** One endpoint as the index sees it. */
export interface SearchableEndpoint {
  id: string
  url: string
  /** the seller's namespace (platform endpoints); null for catalog and bazaar endpoints */
  namespace: string | null
  /** the service (platform) or the entry's name (catalog, bazaar) */
  service: string
  /** the last path segment of the URL (platform: the endpoint's slug) */
  slug: string
  /** the marketplace entry's display name */
  name: string
  description: string
  tags: readonly string[]
  inputFields: readonly string[]
  /** atomic units of the asset (USDC: 6 decimals) */
  price: bigint
  schemes: readonly string[]
  /** CAIP-2 */
  network: string
  methods: readonly string[]
  /** a made-up listing (catalog entries on `.example` hosts): shown only when asked for */
  example: boolean
}

export interface EndpointSearchQuery {
  /** words; empty lists every endpoint in the index's order */
  text?: string
  namespace?: string
  /** atomic units, inclusive */
  maxPrice?: bigint
  scheme?: string
  /** CAIP-2 */
  network?: string
  method?: string
  includeExamples?: boolean
  /** any other condition a route puts on its results (e.g. a payee, or having a Bazaar item) */
  where?: (endpoint: never) => boolean
  limit: number
  /** from a previous page's `nextCursor` */
  cursor?: string
}

interface EndpointSearchHit<E> {
  endpoint: E
  score: number
}

export interface EndpointSearchPage<E> {
  hits: EndpointSearchHit<E>[]
  /** matches passing the filters, on every page */
  total: number
  nextCursor: string | undefined
}

// field classes and their weights: a name match outranks any tag match, which outranks any description match
const NAME = 8
const TAG = 3
const DESCRIPTION = 1
// match kinds
const EXACT = 4
const PREFIX = 2
const INSIDE = 1
/** the endpoint whose slug is the whole query is first whatever else matches */
const WHOLE_SLUG = 10_000
/** a query word shorter than this matches whole words and word starts only ("a" is inside everything) */
const MIN_INSIDE = 3
const MAX_WORDS = 16
// composite sort key: score above, the endpoint's place in the tie order below
const ORDER_BITS = 2 ** 22
const MAX_INDEXED = ORDER_BITS - 1

/** Lower-case words of a text: ASCII spaces and punctuation separate; letters of any script and digits do not. */
export function wordsOf(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9\u0080-\uffff]+/)
    .filter(Boolean)
}

interface Posting {
  docs: Int32Array
  /** the best field weight of the word in each doc */
  weights: Uint8Array
}

/** A search index over one set of endpoints; immutable once built. */
export class EndpointSearchIndex<E extends SearchableEndpoint = SearchableEndpoint> {
  readonly #docs: E[]
  readonly #slugs: string[]
  /** each doc's place in the tie order (shorter slug first, then URL) */
  readonly #order: Int32Array
  readonly #byOrder: Int32Array
  readonly #postings = new Map<string, Posting>()
  /** every distinct word joined by U+0001, so a word-inside match is one indexOf scan */
  readonly #vocabText: string
  readonly #vocabStarts: Int32Array
  readonly #vocab: string[]
  /** per doc: the summed score of the words so far, and the best score of the current word */
  readonly #score: Float64Array
  readonly #word: Float64Array

  constructor(endpoints: readonly E[]) {
    if (endpoints.length > MAX_INDEXED) throw new Error(`endpoint search: at most ${MAX_INDEXED} endpoints`)
    this.#docs = [...endpoints]
    const n = this.#docs.length
    this.#slugs = this.#docs.map((d) => wordsOf(d.slug).join('-'))
    const sorted = this.#docs
      .map((d, i) => i)
      .sort((a, b) => {
        const da = this.#docs[a]
        const db = this.#docs[b]
        return da.slug.length - db.slug.length || (da.url < db.url ? -1 : da.url > db.url ? 1 : 0)
      })
    this.#order = new Int32Array(n)
    this.#byOrder = Int32Array.from(sorted)
    sorted.forEach((doc, place) => (this.#order[doc] = place))
    const building = new Map<string, { docs: number[]; weights: number[] }>()
    const best = new Map<string, number>()
    for (let i = 0; i < n; i++) this.#indexDoc(i, this.#docs[i], building, best)
    for (const [w, p] of building)
      this.#postings.set(w, { docs: Int32Array.from(p.docs), weights: Uint8Array.from(p.weights) })
    this.#vocab = [...this.#postings.keys()]
    this.#vocabStarts = new Int32Array(this.#vocab.length)
    let at = 0
    this.#vocab.forEach((w, i) => {
      this.#vocabStarts[i] = at
      at += w.length + 1
    })
    this.#vocabText = this.#vocab.join('\u0001')
    this.#score = new Float64Array(n)
    this.#word = new Float64Array(n)
  }

  get size(): number {
    return this.#docs.length
  }

  #indexDoc(
    i: number,
    d: E,
    postings: Map<string, { docs: number[]; weights: number[] }>,
    best: Map<string, number>,
  ): void {
    best.clear()
    const add = (text: string, weight: number) => {
      for (const w of wordsOf(text)) if ((best.get(w) ?? 0) < weight) best.set(w, weight)
    }
    add(d.description, DESCRIPTION)
    for (const t of d.tags) add(t, TAG)
    for (const f of d.inputFields) add(splitCamel(f), TAG)
    add(d.name, NAME)
    add(d.service, NAME)
    add(d.namespace ?? '', NAME)
    add(d.slug, NAME)
    for (const [w, weight] of best) {
      let p = postings.get(w)
      if (!p) postings.set(w, (p = { docs: [], weights: [] }))
      p.docs.push(i)
      p.weights.push(weight)
    }
  }

  /** One page of the endpoints matching every word and every filter, best first. */
  search(q: EndpointSearchQuery): EndpointSearchPage<E> {
    const words = [...new Set(wordsOf(q.text ?? ''))].slice(0, MAX_WORDS)
    const after = q.cursor === undefined ? Infinity : decodeSearchCursor(q.cursor)
    const keep = (i: number) => this.#passes(this.#docs[i], q)
    const top = new TopKeys(q.limit)
    let total = 0
    if (words.length === 0) {
      for (let place = 0; place < this.#byOrder.length; place++) {
        const i = this.#byOrder[place]
        if (!keep(i)) continue
        total++
        top.offer(ORDER_BITS - 1 - place, after)
      }
    } else {
      const candidates = this.#match(words)
      const whole = words.join('-')
      for (const i of candidates) {
        if (!keep(i)) continue
        total++
        const score = this.#score[i] + (this.#slugs[i] === whole ? WHOLE_SLUG : 0)
        top.offer(score * ORDER_BITS + (ORDER_BITS - 1 - this.#order[i]), after)
      }
      for (const i of candidates) this.#score[i] = 0
    }
    const keys = top.sorted()
    const hits = keys.map((k) => {
      const place = ORDER_BITS - 1 - (k % ORDER_BITS)
      return { endpoint: this.#docs[this.#byOrder[place]], score: Math.floor(k / ORDER_BITS) }
    })
    // another page exists when this one is full and something ranks below its last key
    const more = keys.length === q.limit && top.below > 0
    return { hits, total, nextCursor: more ? encodeSearchCursor(keys[keys.length - 1]) : undefined }
  }

  /** Docs matching every word, their summed scores left in #score (the caller clears them). */
  #match(words: string[]): number[] {
    let candidates: number[] | undefined
    const best = this.#word
    const touched: number[] = []
    for (const word of words) {
      const note = (p: Posting, kind: number) => {
        const { docs, weights } = p
        for (let j = 0; j < docs.length; j++) {
          const s = weights[j] * kind
          const doc = docs[j]
          if (best[doc] === 0) touched.push(doc)
          if (best[doc] < s) best[doc] = s
        }
      }
      const exact = this.#postings.get(word)
      if (exact) note(exact, EXACT)
      this.#eachContaining(word, (w) => note(this.#postings.get(w)!, w.startsWith(word) ? PREFIX : INSIDE))
      const next: number[] = []
      if (candidates === undefined) {
        for (const doc of touched) {
          this.#score[doc] = best[doc]
          next.push(doc)
        }
      } else {
        for (const doc of candidates) {
          if (best[doc] === 0) this.#score[doc] = 0
          else {
            this.#score[doc] += best[doc]
            next.push(doc)
          }
        }
      }
      for (const doc of touched) best[doc] = 0
      touched.length = 0
      candidates = next
      if (candidates.length === 0) break
    }
    return candidates ?? []
  }

  /** Each indexed word other than `word` itself that `word` begins, or is inside when long enough. */
  #eachContaining(word: string, visit: (w: string) => void): void {
    const text = this.#vocabText
    const starts = this.#vocabStarts
    const inside = word.length >= MIN_INSIDE
    let from = 0
    for (;;) {
      const at = text.indexOf(word, from)
      if (at < 0) return
      let lo = 0
      let hi = starts.length - 1
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1
        if (starts[mid] <= at) lo = mid
        else hi = mid - 1
      }
      const w = this.#vocab[lo]
      if (w !== word && (inside || at === starts[lo])) visit(w)
      if (lo + 1 >= starts.length) return
      from = starts[lo + 1]
    }
  }

  #passes(d: E, q: EndpointSearchQuery): boolean {
    if (d.example && !q.includeExamples) return false
    if (q.namespace !== undefined && d.namespace !== q.namespace) return false
    if (q.maxPrice !== undefined && d.price > q.maxPrice) return false
    if (q.scheme !== undefined && !d.schemes.includes(q.scheme)) return false
    if (q.network !== undefined && d.network !== q.network) return false
    if (q.method !== undefined && !d.methods.includes(q.method)) return false
    return q.where === undefined || (q.where as (e: E) => boolean)(d)
  }
}

/** The best `limit` keys below a bound, and how many others below it did not fit. */
class TopKeys {
  readonly #keys: number[] = []
  below = 0
  constructor(readonly limit: number) {}

  offer(key: number, bound: number): void {
    if (key >= bound) return
    const keys = this.#keys
    if (keys.length === this.limit) {
      // ascending: keys[0] is the worst kept
      this.below++
      if (key <= keys[0]) return
      keys.shift()
    }
    let lo = 0
    let hi = keys.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (keys[mid] < key) lo = mid + 1
      else hi = mid
    }
    keys.splice(lo, 0, key)
  }

  /** best first */
  sorted(): number[] {
    return [...this.#keys].reverse()
  }
}

/** `inputEncoding` → "input encoding": field names are searchable by their words. */
function splitCamel(name: string): string {
  return `${name} ${name.replace(/([a-z0-9])([A-Z])/g, '$1 $2')}`
}

function encodeSearchCursor(key: number): string {
  return Buffer.from(`s${key}`, 'utf8').toString('base64url')
}

/** The sort key inside a cursor, or NaN when it is not one of ours. */
export function decodeSearchCursor(cursor: string): number {
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(cursor)) return NaN
  const m = /^s([0-9]{1,20})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'))
  return m ? Number(m[1]) : NaN
}
