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
/** the best score one word can have in one endpoint */
const MAX_WORD_SCORE = NAME * EXACT
/** single words whose ranked matches an index keeps */
const RANKED_WORDS = 256
/** a word matching fewer endpoints is scored on each query (cheaper than keeping its ranking) */
const RANK_MIN = 32_768
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

/** A posting in rank order: sort keys descending, the docs, and how many are not examples. */
interface Ranked {
  keys: Float64Array
  docs: Int32Array
  shown: number
}

/**
 * Per-doc filter columns in typed arrays, so a filter reads a few contiguous numbers instead of the
 * endpoint object (at 100,000 endpoints the objects' scattered reads were most of a query's time).
 */
class FilterColumns {
  readonly example: Uint8Array
  /** how many docs are examples */
  readonly examples: number
  readonly namespace: Int32Array
  readonly network: Int32Array
  /** the price as a double; `exactPrice` marks the docs whose price a double cannot hold */
  readonly price: Float64Array
  readonly exactPrice: Uint8Array
  readonly schemes: Int32Array
  readonly methods: Int32Array
  readonly #ids = { namespace: new Map<string, number>(), network: new Map<string, number>() }
  readonly #bits = { scheme: new Map<string, number>(), method: new Map<string, number>() }
  /** more than 30 distinct schemes or methods: those filters read the objects */
  readonly wideBits = { scheme: false, method: false }

  constructor(docs: readonly SearchableEndpoint[]) {
    const n = docs.length
    this.example = new Uint8Array(n)
    this.namespace = new Int32Array(n)
    this.network = new Int32Array(n)
    this.price = new Float64Array(n)
    this.exactPrice = new Uint8Array(n)
    this.schemes = new Int32Array(n)
    this.methods = new Int32Array(n)
    let examples = 0
    for (let i = 0; i < n; i++) {
      const d = docs[i]
      this.example[i] = d.example ? 1 : 0
      examples += this.example[i]
      this.namespace[i] = d.namespace === null ? -1 : this.#id('namespace', d.namespace, true)
      this.network[i] = this.#id('network', d.network, true)
      this.price[i] = Number(d.price)
      this.exactPrice[i] = d.price > BigInt(Number.MAX_SAFE_INTEGER) ? 1 : 0
      for (const s of d.schemes) this.schemes[i] |= this.#bit('scheme', s, true)
      for (const m of d.methods) this.methods[i] |= this.#bit('method', m, true)
    }
    this.examples = examples
  }

  /** Whether the query filters nothing but (maybe) the example listings. */
  static onlyExamples(q: EndpointSearchQuery): boolean {
    return (
      q.namespace === undefined &&
      q.network === undefined &&
      q.maxPrice === undefined &&
      q.scheme === undefined &&
      q.method === undefined &&
      q.where === undefined
    )
  }

  /** the id of a value, -2 when no doc has it (nothing matches) */
  #id(kind: 'namespace' | 'network', value: string, add = false): number {
    const ids = this.#ids[kind]
    let id = ids.get(value)
    if (id === undefined && add) ids.set(value, (id = ids.size))
    return id ?? -2
  }

  /** the bit of a value; 0 when no doc has it; -1 when past 30 distinct values (read the objects) */
  #bit(kind: 'scheme' | 'method', value: string, add = false): number {
    const bits = this.#bits[kind]
    let b = bits.get(value)
    if (b === undefined && add) {
      if (bits.size >= 30) {
        this.wideBits[kind] = true
        return 0
      }
      bits.set(value, (b = 1 << bits.size))
    }
    return b ?? (this.wideBits[kind] ? -1 : 0)
  }

  /** The query's filters as a predicate over doc numbers; undefined when nothing filters. */
  compile(q: EndpointSearchQuery, docs: readonly SearchableEndpoint[]): ((i: number) => boolean) | undefined {
    const checks: Array<(i: number) => boolean> = []
    if (!q.includeExamples) checks.push((i) => this.example[i] === 0)
    if (q.namespace !== undefined) {
      const id = this.#id('namespace', q.namespace)
      checks.push((i) => this.namespace[i] === id)
    }
    if (q.network !== undefined) {
      const id = this.#id('network', q.network)
      checks.push((i) => this.network[i] === id)
    }
    if (q.maxPrice !== undefined) {
      const max = q.maxPrice
      const limit = Number(max)
      checks.push((i) =>
        this.exactPrice[i] === 1 || limit > Number.MAX_SAFE_INTEGER ? docs[i].price <= max : this.price[i] <= limit,
      )
    }
    for (const [kind, value, column] of [
      ['scheme', q.scheme, this.schemes],
      ['method', q.method, this.methods],
    ] as const) {
      if (value === undefined) continue
      const bit = this.#bit(kind, value)
      if (bit === -1) {
        const field = kind === 'scheme' ? 'schemes' : 'methods'
        checks.push((i) => docs[i][field].includes(value))
      } else checks.push((i) => (column[i] & bit) !== 0)
    }
    if (q.where !== undefined) {
      const where = q.where as (e: SearchableEndpoint) => boolean
      checks.push((i) => where(docs[i]))
    }
    if (checks.length === 0) return undefined
    if (checks.length === 1) return checks[0]
    if (checks.length === 2) {
      const [a, b] = checks
      return (i) => a(i) && b(i)
    }
    return (i) => {
      for (const c of checks) if (!c(i)) return false
      return true
    }
  }
}

/** A search index over one set of endpoints; immutable once built. */
export class EndpointSearchIndex<E extends SearchableEndpoint = SearchableEndpoint> {
  readonly #docs: E[]
  /** docs by their slug's words joined with '-', for the whole-slug rank */
  readonly #bySlug = new Map<string, number[]>()
  /** each doc's place in the tie order (shorter slug first, then URL) */
  readonly #order: Int32Array
  readonly #byOrder: Int32Array
  readonly #postings = new Map<string, Posting>()
  /** every distinct word joined by U+0001, so a word-inside match is one indexOf scan */
  readonly #vocabText: string
  readonly #vocabStarts: Int32Array
  readonly #vocab: string[]
  readonly #filters: FilterColumns
  readonly #rankedWords = new Map<string, Ranked>()
  /** how many #candidates the last #rankedOrMatched left when it ranked nothing */
  #matchedCount = 0
  /** per doc: the summed score of the words so far, and the best score of the current word */
  readonly #score: Float64Array
  readonly #word: Float64Array
  /** scratch lists of doc numbers, reused by every query (a query allocates no per-match memory) */
  readonly #touched: Int32Array
  readonly #candidates: Int32Array

  /** how many matches make a single word's ranking worth keeping (RANK_MIN; tests lower it) */
  readonly #rankMin: number

  constructor(endpoints: readonly E[], opts: { rankMin?: number } = {}) {
    this.#rankMin = opts.rankMin ?? RANK_MIN
    if (endpoints.length > MAX_INDEXED) throw new Error(`endpoint search: at most ${MAX_INDEXED} endpoints`)
    this.#docs = [...endpoints]
    const n = this.#docs.length
    this.#docs.forEach((d, i) => {
      const key = wordsOf(d.slug).join('-')
      const same = this.#bySlug.get(key)
      if (same) same.push(i)
      else this.#bySlug.set(key, [i])
    })
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
    this.#filters = new FilterColumns(this.#docs)
    this.#score = new Float64Array(n)
    this.#word = new Float64Array(n)
    this.#touched = new Int32Array(n)
    this.#candidates = new Int32Array(n)
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
    const keep = this.#filters.compile(q, this.#docs)
    const top = new TopKeys(q.limit)
    let total = 0
    const unfiltered = FilterColumns.onlyExamples(q)
    if (words.length === 0 && unfiltered) {
      // every endpoint in tie order: the page starts where the cursor left off
      const byOrder = this.#byOrder
      const from = Number.isFinite(after) ? Math.max(0, ORDER_BITS - after) : 0
      total = q.includeExamples ? byOrder.length : byOrder.length - this.#filters.examples
      for (let place = from; place < byOrder.length && !top.overflowed; place++)
        if (keep === undefined || keep(byOrder[place])) top.offer(ORDER_BITS - 1 - place, after)
    } else if (words.length === 1 && unfiltered && this.#rankedOrMatched(words[0]) === undefined) {
      // one word matching few endpoints: scored as they are read
      total = this.#offerScored(this.#matchedCount, words, keep, top, after)
    } else if (words.length === 1 && unfiltered) {
      // one word matching many, nothing but examples filtered: read its matches in rank order
      const ranked = this.#rankedWords.get(words[0])!
      const wholeSlug = this.#bySlug.get(words[0])
      total = q.includeExamples ? ranked.docs.length : ranked.shown
      const order = this.#order
      for (const i of wholeSlug ?? [])
        if (keep === undefined || keep(i)) top.offer(WHOLE_SLUG * ORDER_BITS + (ORDER_BITS - 1 - order[i]), after)
      // keys descend: skip those at or above the cursor by binary search
      let lo = 0
      let hi = ranked.keys.length
      while (lo < hi) {
        const mid = (lo + hi) >>> 1
        if (ranked.keys[mid] >= after) lo = mid + 1
        else hi = mid
      }
      for (let j = lo; j < ranked.keys.length && !top.overflowed; j++) {
        const i = ranked.docs[j]
        if (wholeSlug?.includes(i) || (keep !== undefined && !keep(i))) continue
        top.offer(ranked.keys[j], after)
      }
    } else if (words.length === 0) {
      const byOrder = this.#byOrder
      for (let place = 0; place < byOrder.length; place++) {
        if (keep !== undefined && !keep(byOrder[place])) continue
        total++
        top.offer(ORDER_BITS - 1 - place, after)
      }
    } else total = this.#offerScored(this.#match(words), words, keep, top, after)
    const keys = top.sorted()
    const hits = keys.map((k) => {
      const place = ORDER_BITS - 1 - (k % ORDER_BITS)
      return { endpoint: this.#docs[this.#byOrder[place]], score: Math.floor(k / ORDER_BITS) }
    })
    // another page exists when this one is full and something ranks below its last key
    const more = keys.length === q.limit && top.below > 0
    return { hits, total, nextCursor: more ? encodeSearchCursor(keys[keys.length - 1]) : undefined }
  }

  /**
   * Docs matching every word: their number is returned, the docs are the first that many of
   * #candidates, and their summed scores are left in #score (the caller clears them).
   */
  #match(words: string[]): number {
    const best = this.#word
    const score = this.#score
    const touched = this.#touched
    const candidates = this.#candidates
    let count = -1
    for (const word of words) {
      let nTouched = 0
      const note = (p: Posting, kind: number) => {
        const { docs, weights } = p
        for (let j = 0; j < docs.length; j++) {
          const s = weights[j] * kind
          const doc = docs[j]
          const was = best[doc]
          if (was === 0) touched[nTouched++] = doc
          if (was < s) best[doc] = s
        }
      }
      const exact = this.#postings.get(word)
      if (exact) note(exact, EXACT)
      this.#eachContaining(word, (w) => note(this.#postings.get(w)!, w.startsWith(word) ? PREFIX : INSIDE))
      let next = 0
      if (count === -1) {
        for (let t = 0; t < nTouched; t++) {
          const doc = touched[t]
          score[doc] = best[doc]
          candidates[next++] = doc
        }
      } else {
        for (let c = 0; c < count; c++) {
          const doc = candidates[c]
          if (best[doc] === 0) score[doc] = 0
          else {
            score[doc] += best[doc]
            candidates[next++] = doc
          }
        }
      }
      for (let t = 0; t < nTouched; t++) best[touched[t]] = 0
      count = next
      if (count === 0) break
    }
    return Math.max(count, 0)
  }

  /**
   * Offers the first `count` #candidates (scores in #score, cleared here) that pass `keep`; returns
   * how many passed.
   */
  #offerScored(
    count: number,
    words: string[],
    keep: ((i: number) => boolean) | undefined,
    top: TopKeys,
    after: number,
  ): number {
    const candidates = this.#candidates
    const wholeSlug = this.#bySlug.get(words.join('-'))
    const score = this.#score
    const order = this.#order
    let total = 0
    for (let c = 0; c < count; c++) {
      const i = candidates[c]
      if (keep !== undefined && !keep(i)) continue
      total++
      const s = score[i] + (wholeSlug !== undefined && wholeSlug.includes(i) ? WHOLE_SLUG : 0)
      top.offer(s * ORDER_BITS + (ORDER_BITS - 1 - order[i]), after)
    }
    for (let c = 0; c < count; c++) score[candidates[c]] = 0
    return total
  }

  /**
   * A word matching at least RANK_MIN endpoints (itself, the words it begins, the words it is
   * inside) gets its matches ranked best first with their sort keys, kept for the snapshot's life
   * (the most recent RANKED_WORDS such words), so its later pages and repeats read k entries: the
   * ranking is returned. A word matching fewer is cheaper to score on each query: undefined is
   * returned, with its matches left in #candidates (#matchedCount of them) and #score.
   */
  #rankedOrMatched(word: string): Ranked | undefined {
    let r = this.#rankedWords.get(word)
    if (r) {
      // most recently used last
      this.#rankedWords.delete(word)
      this.#rankedWords.set(word, r)
      return r
    }
    const count = this.#match([word])
    this.#matchedCount = count
    if (count < this.#rankMin) return undefined
    // a single word's score is one of a few small integers (weight × kind ≤ 32): bucket the
    // matches by score, best first, and fill each bucket in tie order by walking the tie order once
    const starts = new Int32Array(MAX_WORD_SCORE + 2)
    for (let c = 0; c < count; c++) starts[MAX_WORD_SCORE - this.#score[this.#candidates[c]] + 1]++
    for (let b = 1; b < starts.length; b++) starts[b] += starts[b - 1]
    const keys = new Float64Array(count)
    const docs = new Int32Array(count)
    let shown = 0
    for (let place = 0; place < this.#byOrder.length; place++) {
      const doc = this.#byOrder[place]
      const score = this.#score[doc]
      if (score === 0) continue
      const at = starts[MAX_WORD_SCORE - score]++
      docs[at] = doc
      keys[at] = score * ORDER_BITS + (ORDER_BITS - 1 - place)
      if (this.#filters.example[doc] === 0) shown++
    }
    for (let c = 0; c < count; c++) this.#score[this.#candidates[c]] = 0
    r = { keys, docs, shown }
    if (this.#rankedWords.size >= RANKED_WORDS) this.#rankedWords.delete(this.#rankedWords.keys().next().value!)
    this.#rankedWords.set(word, r)
    return r
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
}

/** The best `limit` keys below a bound, and how many others below it did not fit. */
class TopKeys {
  /** ascending: keys[0] is the worst kept */
  readonly #keys: Float64Array
  #size = 0
  below = 0
  /** the list is full and one more below the bound was offered: a next page exists */
  get overflowed(): boolean {
    return this.below > 0
  }
  constructor(readonly limit: number) {
    this.#keys = new Float64Array(Math.max(limit, 0))
  }

  offer(key: number, bound: number): void {
    if (key >= bound) return
    const keys = this.#keys
    let size = this.#size
    if (size === this.limit) {
      this.below++
      if (size === 0 || key <= keys[0]) return
      // drop the worst: shift left while finding the place
      let j = 1
      while (j < size && keys[j] < key) {
        keys[j - 1] = keys[j]
        j++
      }
      keys[j - 1] = key
      return
    }
    let j = size
    while (j > 0 && keys[j - 1] > key) {
      keys[j] = keys[j - 1]
      j--
    }
    keys[j] = key
    this.#size = ++size
  }

  /** best first */
  sorted(): number[] {
    return Array.from(this.#keys.subarray(0, this.#size)).reverse()
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
