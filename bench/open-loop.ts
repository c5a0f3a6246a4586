/**
 * An open-loop load generator: sends requests at a fixed rate, evenly spaced, whether or not
 * earlier ones have answered (a slow server cannot slow the arrivals down), over enough
 * keep-alive connections that no request waits for one. autocannon's `overallRate` is not this:
 * each connection sends back to back until it has used its share of the second, then waits for
 * the next second, so "1,000/s" is a burst at full load followed by silence, and its latency
 * histogram adds synthetic samples for the gaps.
 *
 * Latency is reported from send to answer (as autocannon measures it), and also from when each
 * request was due, with the generator's own longest stall: a gap between the two is the
 * generator's lateness (its GC on a 2-core machine), not the server's.
 *
 * Runs in its own process (its own event loop and heap, as a real client would be):
 *
 * @example
 *   const r = await openLoop({ url, method: 'POST', headers, body, rate: 1000, seconds: 5 })
 *   console.log(r.p99)
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { Pool } from 'undici'

export interface OpenLoopOptions {
  url: string
  method?: string
  headers?: Record<string, string>
  body?: string
  /** requests per second */
  rate: number
  seconds: number
  /** sent at the same rate first and not measured (default 1) */
  warmupSeconds?: number
  /** keep-alive connections to spread requests over (default 64: enough that none waits for one) */
  connections?: number
}

export interface OpenLoopResult {
  sent: number
  /** 2xx answers per second of the run */
  rps: number
  /** latency in ms from sending each request to its whole answer, over 2xx answers */
  p50: number
  p90: number
  p99: number
  p999: number
  max: number
  /** the same from when each request was due (includes the generator's own lateness) */
  fromDue: { p50: number; p99: number; max: number }
  /** the generator's longest event-loop stall during the measured phase (its own GC/JIT) */
  generatorStallMs: number
  non2xx: number
  errors: number
}

/** Runs the generator in a child process and returns its measurements. */
export function openLoop(opts: OpenLoopOptions): Promise<OpenLoopResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), JSON.stringify(opts)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.on('error', reject)
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`open-loop generator exited with ${code}`))
      try {
        resolve(JSON.parse(out) as OpenLoopResult)
      } catch (err) {
        reject(err)
      }
    })
  })
}

async function run(opts: OpenLoopOptions): Promise<OpenLoopResult> {
  const u = new URL(opts.url)
  const pool = new Pool(u.origin, { connections: opts.connections ?? 64, pipelining: 1 })
  const request = { path: u.pathname + u.search, method: (opts.method ?? 'GET') as 'GET', headers: opts.headers, body: opts.body } as RequestOptions
  const eld = monitorEventLoopDelay({ resolution: 1 })
  // warm-up at the same rate (connections opened, JIT warm), not measured
  await phase(pool, request, opts.rate, opts.warmupSeconds ?? 1, () => {})
  const lat: number[] = []
  const fromDue: number[] = []
  let non2xx = 0
  let errors = 0
  eld.enable()
  const sent = await phase(pool, request, opts.rate, opts.seconds, (r) => {
    if (r === 'error') errors++
    else if (r.status < 200 || r.status > 299) non2xx++
    else {
      lat.push(r.end - r.sent)
      fromDue.push(r.end - r.due)
    }
  })
  eld.disable()
  await pool.close()
  const pct = (a: number[], p: number) => (a.length ? Number(a[Math.min(a.length - 1, Math.floor(a.length * p))]!.toFixed(2)) : NaN)
  lat.sort((a, b) => a - b)
  fromDue.sort((a, b) => a - b)
  return {
    sent,
    rps: lat.length / opts.seconds,
    p50: pct(lat, 0.5),
    p90: pct(lat, 0.9),
    p99: pct(lat, 0.99),
    p999: pct(lat, 0.999),
    max: pct(lat, 1),
    fromDue: { p50: pct(fromDue, 0.5), p99: pct(fromDue, 0.99), max: pct(fromDue, 1) },
    generatorStallMs: Number((eld.max / 1e6).toFixed(1)),
    non2xx,
    errors,
  }
}

type RequestOptions = Parameters<Pool['request']>[0]
type Outcome = { status: number; due: number; sent: number; end: number } | 'error'

/** sends `rate * seconds` requests, each when it is due, and waits for every answer */
function phase(pool: Pool, request: RequestOptions, rate: number, seconds: number, onDone: (o: Outcome) => void): Promise<number> {
  const interval = 1000 / rate
  const total = Math.round(rate * seconds)
  const start = performance.now()
  let sent = 0
  let done = 0
  return new Promise((finish) => {
    if (total === 0) return finish(0)
    const fire = (due: number) => {
      sent++
      const at = performance.now()
      pool
        .request(request)
        .then(async (res) => {
          await res.body.dump()
          onDone({ status: res.statusCode, due, sent: at, end: performance.now() })
        })
        .catch(() => onDone('error'))
        .finally(() => {
          if (++done === total) finish(sent)
        })
    }
    // wake about once a millisecond and send everything that has come due since
    const tick = () => {
      const now = performance.now()
      while (sent < total && start + sent * interval <= now) fire(start + sent * interval)
      if (sent < total) setTimeout(tick, Math.max(0, Math.min(1, start + sent * interval - performance.now())))
    }
    tick()
  })
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const opts = JSON.parse(process.argv[2] ?? '{}') as OpenLoopOptions
  process.stdout.write(JSON.stringify(await run(opts)))
}
