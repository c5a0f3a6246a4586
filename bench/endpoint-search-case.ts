/**
 * The endpoint search index at 100,000 endpoints, in process (the index answers from memory; the
 * route around it adds what the other marketplace rows measure): build time, then p50/p99 of a
 * query mix (one word common and rare, a word's start, a word's inside, two words, filters, a miss,
 * a second page). Synthetic endpoints: words drawn Zipf-like from a 3,000-word vocabulary.
 *
 *   part of `npm run bench:marketplace`; alone: node --import tsx bench/endpoint-search-case.ts
 */
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { EndpointSearchIndex, type SearchableEndpoint } from '../src/services/marketplace/endpoint-search.js'
import { prng } from '../test/helpers/prng.js'

export interface SearchCaseResult {
  endpoints: number
  buildMs: number
  rows: Array<{ name: string; n: number; p50: number; p99: number; cpuMs: number; hits: number }>
}

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'tor', 'vex', 'dra', 'sil', 'qu', 'pen', 'ash', 'rin', 'zo', 'bel', 'cor']

function vocabulary(rand: () => number, size: number): string[] {
  const words = new Set<string>(['hash', 'weather', 'price', 'wallet', 'token', 'image', 'search', 'convert'])
  while (words.size < size) {
    let w = ''
    const parts = 2 + Math.floor(rand() * 3)
    for (let i = 0; i < parts; i++) w += SYLLABLES[Math.floor(rand() * SYLLABLES.length)]
    words.add(w)
  }
  return [...words]
}

export function runEndpointSearchCase(n = 100_000): SearchCaseResult {
  const rand = prng(35)
  const vocab = vocabulary(rand, 3000)
  // Zipf-like: low ranks far more often
  const word = () => vocab[Math.floor(vocab.length * rand() ** 3)]!
  const words = (k: number) => Array.from({ length: k }, word)
  const endpoints: SearchableEndpoint[] = []
  for (let i = 0; i < n; i++) {
    const slug = `${words(2).join('-')}-${i}`
    endpoints.push({
      id: `ep-${i}`,
      url: `https://proxy.example/ns${i % 5000}/svc${i % 7}/${slug}`,
      namespace: `ns${i % 5000}`,
      service: `svc${i % 7}`,
      slug,
      name: words(2).join(' '),
      description: words(12 + Math.floor(rand() * 10)).join(' '),
      tags: words(3),
      inputFields: words(3),
      price: BigInt(1000 * (1 + (i % 20))),
      schemes: i % 10 === 0 ? ['exact', 'deferred'] : ['exact'],
      network: 'eip155:84532',
      methods: i % 3 === 0 ? ['GET'] : ['GET', 'POST'],
      example: false,
    })
  }
  const t0 = performance.now()
  const index = new EndpointSearchIndex(endpoints)
  const buildMs = performance.now() - t0
  const second = index.search({ text: vocab[0], limit: 20 }).nextCursor
  const cases: Array<[string, (i: number) => Parameters<typeof index.search>[0]]> = [
    ['one common word', () => ({ text: vocab[0], limit: 20 })],
    ['one word, varied', (i) => ({ text: vocab[(i * 7) % vocab.length], limit: 20 })],
    ['a word start (prefix)', (i) => ({ text: vocab[(i * 13) % 500]!.slice(0, 4), limit: 20 })],
    ['a word inside (substring)', (i) => ({ text: vocab[(i * 11) % 500]!.slice(1, 5), limit: 20 })],
    ['two words', (i) => ({ text: `${vocab[i % 50]} ${vocab[(i * 3) % 300]}`, limit: 20 })],
    ['words + price, method, namespace', (i) => ({ text: vocab[i % 100], maxPrice: 5000n, method: 'POST', limit: 20 })],
    ['one word, second page', () => ({ text: vocab[0], limit: 20, cursor: second })],
    // a filter makes the index score every match (a word's ranked matches serve unfiltered queries)
    ['one common word + a filter (every match)', () => ({ text: vocab[0], maxPrice: 10n ** 9n, limit: 20 })],
    ['no match', (i) => ({ text: `zzz${i}`, limit: 20 })],
    ['no words (every endpoint)', () => ({ limit: 20 })],
  ]
  // warm up the JIT on every shape
  for (const [, q] of cases) for (let i = 0; i < 50; i++) index.search(q(i))
  // the machine's own noise: a loop over 100,000 numbers (as much memory as a broad query reads),
  // timed the same way; its p99 is what preemption alone adds on this machine at this moment
  const column = new Float64Array(n).fill(1)
  const control = (): number => {
    let sum = 0
    for (let i = 0; i < column.length; i++) sum += column[i]
    return sum
  }
  const measure = (name: string, run: (i: number) => number) => {
    const times: number[] = []
    let hits = 0
    const runs = 1000
    const cpu0 = process.cpuUsage()
    for (let i = 0; i < runs; i++) {
      const s = performance.now()
      const got = run(i)
      times.push(performance.now() - s)
      hits += got
    }
    const cpu = process.cpuUsage(cpu0)
    times.sort((a, b) => a - b)
    return {
      name,
      cpuMs: (cpu.user + cpu.system) / 1000 / runs,
      n: runs,
      p50: times[runs >> 1]!,
      p99: times[Math.floor(runs * 0.99)]!,
      hits: Math.round(hits / runs),
    }
  }
  const rows = cases.map(([name, q]) => measure(name, (i) => index.search(q(i)).total))
  rows.push(measure(`control: a loop over ${n} numbers`, () => (control() > 0 ? 0 : 1)))
  return { endpoints: n, buildMs, rows }
}

export function printEndpointSearchCase(r: SearchCaseResult): void {
  console.log(`endpoint search: ${r.endpoints} endpoints in memory (index built in ${Math.round(r.buildMs)} ms)`)
  console.log(
    [
      'case'.padEnd(36),
      'n'.padStart(6),
      'p50 ms'.padStart(9),
      'p99 ms'.padStart(9),
      'CPU ms'.padStart(9),
      'matches'.padStart(9),
    ].join(' '),
  )
  for (const row of r.rows)
    console.log(
      [
        row.name.padEnd(36),
        String(row.n).padStart(6),
        row.p50.toFixed(3).padStart(9),
        row.p99.toFixed(3).padStart(9),
        row.cpuMs.toFixed(3).padStart(9),
        String(row.hits).padStart(9),
      ].join(' '),
    )
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) printEndpointSearchCase(runEndpointSearchCase())
