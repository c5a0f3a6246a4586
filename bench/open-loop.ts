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
import { appendFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { connect as netConnect, type Socket } from 'node:net'

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
  /** the generator's own CPU time (user + system) per request sent, in µs */
  generatorCpuUsPerRequest: number
  /** requests that found all connections busy and waited for one (0 when there are enough) */
  waitedForConnection: number
  non2xx: number
  errors: number
}

/** Runs the generator in a child process and returns its measurements. */
export function openLoop(opts: OpenLoopOptions): Promise<OpenLoopResult> {
  return new Promise((resolve, reject) => {
    // one V8 background thread, as the servers run (Procfile): the generator's GC must not take both cores
    const child = spawn(
      process.execPath,
      ['--v8-pool-size=1', '--import', 'tsx', fileURLToPath(import.meta.url), JSON.stringify(opts)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    )
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
  const pool = new RawPool(new URL(opts.url), opts.connections ?? 64, requestBytes(opts))
  await pool.open()
  const eld = monitorEventLoopDelay({ resolution: 1 })
  const slowLog: string[] | undefined = process.env.OPEN_LOOP_SLOW_LOG ? [] : undefined
  // CLOCK_MONOTONIC ms at performance.now() === 0, to line slow requests up with `perf sched -k mono`
  const monoAt = Number(process.hrtime.bigint()) / 1e6 - performance.now()
  // warm-up at the same rate (connections used, JIT warm), not measured
  await phase(pool, opts.rate, opts.warmupSeconds ?? 1, () => {})
  const lat: number[] = []
  const fromDue: number[] = []
  let non2xx = 0
  let errors = 0
  eld.enable()
  const cpu0 = process.cpuUsage()
  const sent = await phase(pool, opts.rate, opts.seconds, (r) => {
    if (r === 'error') errors++
    else if (r.status < 200 || r.status > 299) non2xx++
    else {
      if (slowLog && r.end - r.sent > 10) slowLog.push(`${(monoAt + r.sent).toFixed(3)} ${(r.end - r.sent).toFixed(2)}`)
      lat.push(r.end - r.sent)
      fromDue.push(r.end - r.due)
    }
  })
  eld.disable()
  const cpu = process.cpuUsage(cpu0)
  pool.close()
  if (slowLog) appendFileSync(process.env.OPEN_LOOP_SLOW_LOG!, slowLog.join('\n') + '\n')
  const pct = (a: number[], p: number) => Number(percentile(a, p).toFixed(2))
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
    generatorCpuUsPerRequest: Math.round((cpu.user + cpu.system) / Math.max(1, sent)),
    waitedForConnection: pool.waited,
    non2xx,
    errors,
  }
}

/** The `p` quantile (0..1) of an ascending list; NaN when it is empty. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]! : NaN
}

type Outcome = { status: number; due: number; sent: number; end: number } | 'error'

/** The whole request, serialized once: every request of a run is the same bytes. */
function requestBytes(opts: OpenLoopOptions): Buffer {
  const u = new URL(opts.url)
  const body = opts.body === undefined ? undefined : Buffer.from(opts.body)
  const lines = [
    `${opts.method ?? 'GET'} ${u.pathname}${u.search} HTTP/1.1`,
    `host: ${u.host}`,
    'connection: keep-alive',
  ]
  for (const [k, v] of Object.entries(opts.headers ?? {}))
    if (!/^(host|connection|content-length)$/i.test(k)) lines.push(`${k}: ${v}`)
  if (body) lines.push(`content-length: ${body.length}`)
  const head = Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1')
  return body ? Buffer.concat([head, body]) : head
}

/**
 * Keep-alive HTTP/1.1 connections that each carry one request at a time, written as prepared
 * bytes; an answer is read up to its Content-Length (chunked bodies are read to their last chunk).
 * The generator costs a fraction of a general client's CPU per request, so on a 2-core machine it
 * takes less from the server it measures.
 */
class RawPool {
  private idle: RawConnection[] = []
  private queue: ((c: RawConnection) => void)[] = []
  private all: RawConnection[] = []
  /** requests that found every connection busy and waited for one */
  waited = 0
  constructor(
    private url: URL,
    private size: number,
    private bytes: Buffer,
  ) {}

  async open(): Promise<void> {
    for (let i = 0; i < this.size; i++) this.all.push(await RawConnection.connect(this.url))
    this.idle = [...this.all]
  }

  request(): Promise<number> {
    const c = this.idle.pop()
    if (c) return this.send(c)
    this.waited++
    return new Promise<RawConnection>((resolve) => this.queue.push(resolve)).then((c) => this.send(c))
  }

  private send(c: RawConnection): Promise<number> {
    return c.request(this.bytes).finally(() => {
      if (c.broken) {
        this.all = this.all.filter((x) => x !== c)
        void RawConnection.connect(this.url).then(
          (n) => {
            this.all.push(n)
            this.release(n)
          },
          () => {},
        )
      } else this.release(c)
    })
  }

  private release(c: RawConnection) {
    const next = this.queue.shift()
    if (next) next(c)
    else this.idle.push(c)
  }

  close() {
    for (const c of this.all) c.socket.destroy()
  }
}

class RawConnection {
  broken = false
  private buf: Buffer = Buffer.alloc(0)
  private pending?: { resolve(status: number): void; reject(err: Error): void }
  private constructor(readonly socket: Socket) {
    socket.setNoDelay(true)
    socket.on('data', (d: Buffer) => {
      this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d
      this.parse()
    })
    const fail = (err: Error) => {
      this.broken = true
      this.pending?.reject(err)
      this.pending = undefined
    }
    socket.on('error', fail)
    socket.on('close', () => fail(new Error('connection closed')))
  }

  static connect(url: URL): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const s = netConnect({ host: url.hostname, port: Number(url.port || 80) }, () => resolve(new RawConnection(s)))
      s.once('error', reject)
    })
  }

  request(bytes: Buffer): Promise<number> {
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject }
      this.socket.write(bytes)
    })
  }

  private parse() {
    const end = this.buf.indexOf('\r\n\r\n')
    if (end < 0 || !this.pending) return
    const head = this.buf.toString('latin1', 0, end)
    const status = Number(head.slice(9, 12))
    const len = /\r\ncontent-length: *(\d+)/i.exec(head)
    let total: number
    if (len) total = end + 4 + Number(len[1])
    else if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
      const last = this.buf.indexOf('\r\n0\r\n\r\n', end)
      if (last < 0) return
      total = last + 7
    } else {
      this.broken = true
      this.socket.destroy()
      return this.pending.reject(new Error('answer without a length'))
    }
    if (this.buf.length < total) return
    this.buf = this.buf.subarray(total)
    const p = this.pending
    this.pending = undefined
    p.resolve(status)
  }
}

/** sends `rate * seconds` requests, each when it is due, and waits for every answer */
function phase(pool: RawPool, rate: number, seconds: number, onDone: (o: Outcome) => void): Promise<number> {
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
        .request()
        .then((status) => onDone({ status, due, sent: at, end: performance.now() }))
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
