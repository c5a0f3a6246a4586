import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import type { Socket } from 'node:net'
import { FRAME, FrameReader, type Frame } from './frame-codec.js'
import type { HandlerPool, HandlerPoolOptions, PoolOutcome } from './pool-types.js'
import { handlerProcessEnv } from './handler-process-env.js'
import { readAnswer, writeCall } from './pool-messages.js'
import type { PoolResult, PoolTask } from './run-task.js'
import { workerExecArgv, workerModule } from './worker-options.js'

/** what the buyer reads (after "the endpoint failed: ") when the process running the call is gone */
const DIED = 'the handler process died'

/**
 * Hosted handlers in handler processes this process starts and supervises (it never runs handler
 * code itself), in two lanes:
 *
 * - **compute** (`maxThreads` processes, one call at a time each): whatever a call does to its
 *   process (a V8 fatal error, a native crash, `process.abort()` or `process.exit()`, memory past
 *   `memoryMb` of heap or `rssMb` resident) ends that process and that call only; a call past its
 *   time is answered `timeout` and its process is killed. A concurrent call is always in another
 *   process, so it is untouched.
 * - **I/O** (`ioThreads` processes, `ioConcurrency` calls at once each), for handlers that mostly
 *   wait on a provider or a public host (`network: true` or `providers` in their module), started
 *   at its first call. Past its time a call is answered `timeout` and its outbound requests are
 *   aborted (the task signal, at the deadline sent with it); a process still running such a call
 *   at twice its time is killed. Calls sharing a process share its fate: if it dies, all of them
 *   are answered `crashed`.
 *
 * A process that dies is replaced at once; its calls are answered `crashed` (the proxy voids their
 * payments). `maxQueue` bounds the calls waiting in each lane: past it a call is answered `busy`
 * at once instead of waiting out its timeout (which counts from dispatch, queue time included).
 *
 * @example
 *   const pool = createProcessPool({ maxThreads: 2, memoryMb: 256 })
 *   const out = await pool.run({ file, slug }, input, ctx, 10_000) // { kind: 'ok', ... } or crashed, timeout, busy
 */
export function createProcessPool(opts: HandlerPoolOptions): HandlerPool {
  const compute = new ProcessLane(opts, opts.maxThreads, 1)
  // one process is started now, so the first call does not wait for it
  compute.warm()
  let io: ProcessLane | undefined
  const ioLane = () => (io ??= new ProcessLane(opts, opts.ioThreads ?? 1, opts.ioConcurrency ?? 32))
  return {
    run: (handler, input, ctx, timeoutMs) =>
      (handler.io ? ioLane() : compute).run({ file: handler.file, slug: handler.slug, input, ctx }, timeoutMs),
    close: async () => {
      await Promise.all([compute.close(), io?.close()])
    },
  }
}

interface Call {
  id: number
  task: PoolTask
  timeoutMs: number
  deadline: number
  resolve: (out: PoolOutcome) => void
  /** the caller has its answer (a timeout is answered before the call ends in the I/O lane) */
  answered: boolean
  timer: NodeJS.Timeout
  stuck?: NodeJS.Timeout
  child?: Child
}

interface Child {
  proc: ChildProcess
  channel: Socket
  ready: boolean
  calls: Map<number, Call>
  /** why the supervisor killed it, for the answers of its calls */
  stoppedFor?: { message: string; detail: string }
  gone: Promise<void>
}

// Linux: a handler process dies with its supervisor even when that is killed outright (SIGKILL, a
// crash), where no exit handler runs; setpriv sets the parent-death signal and execs node.
const SETPRIV = process.platform === 'linux' && existsSync('/usr/bin/setpriv') ? '/usr/bin/setpriv' : undefined
/** the resident-memory check runs this often while a process has calls */
const RSS_CHECK_MS = 100
/** a process that exited may still have answers in its socket; they are read for this long */
const DRAIN_MS = 200

const entry = workerModule(import.meta.url, 'handler-process')
// From source, handler processes load TypeScript with tsx whatever loader this process uses (a
// test runner's may take seconds to start); compiled, they need only what this process was given.
const moduleLoading = entry.endsWith('.ts')
  ? ['--import', import.meta.resolve('tsx')]
  : workerExecArgv(process.execArgv)

// Elsewhere, and on a plain exit: the processes of this supervisor go with it.
const live = new Set<ChildProcess>()
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL')
})

class ProcessLane {
  readonly #children = new Set<Child>()
  readonly #queue: Call[] = []
  readonly #slots: number
  readonly #capacity: number
  /** calls queued or running, answered or not */
  #outstanding = 0
  #starting = 0
  #failedStarts = 0
  #nextId = 1
  #closing = false
  #restart: NodeJS.Timeout | undefined
  #rssTimer: NodeJS.Timeout | undefined
  /** called when the last outstanding call ends (close waits for it) */
  #idle: (() => void) | undefined

  constructor(
    private readonly opts: HandlerPoolOptions,
    private readonly size: number,
    private readonly perChild: number,
  ) {
    this.#slots = size * perChild
    this.#capacity = this.#slots + (opts.maxQueue ?? 512)
  }

  run(task: PoolTask, timeoutMs: number): Promise<PoolOutcome> {
    if (this.#closing)
      return Promise.resolve({
        kind: 'crashed',
        message: 'the handler pool is closed',
        detail: 'the proxy is shutting down',
      })
    if (this.#outstanding >= this.#capacity)
      return Promise.resolve({ kind: 'busy', queued: this.#outstanding - this.#slots })
    this.#outstanding++
    return new Promise<PoolOutcome>((resolve) => {
      const id = this.#nextId
      this.#nextId = (this.#nextId % 0xffff_ffff) + 1
      const call: Call = {
        id,
        task,
        timeoutMs,
        deadline: Date.now() + timeoutMs,
        resolve,
        answered: false,
        timer: setTimeout(() => this.#overran(call), timeoutMs),
      }
      this.#queue.push(call)
      this.#pump()
    })
  }

  /** Starts a process if none is running or starting. */
  warm(): void {
    if (this.#children.size === 0 && !this.#closing) this.#start()
  }

  async close(): Promise<void> {
    this.#closing = true
    clearTimeout(this.#restart)
    for (const call of this.#queue.splice(0))
      this.#end(call, { kind: 'crashed', message: 'the handler pool closed', detail: 'the proxy is shutting down' })
    // calls already answered `timeout` may still be finishing: a bounded wait, then the processes go
    if (this.#outstanding > 0) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([
        new Promise<void>((r) => (this.#idle = r)),
        new Promise((r) => (timer = setTimeout(r, 5_000))),
      ])
      clearTimeout(timer)
    }
    for (const child of this.#children) {
      // a process still starting would read the end only once it is up: it has nothing to finish
      if (!child.ready) child.proc.kill('SIGKILL')
      else child.channel.end() // a handler process exits when its channel ends
    }
    const kill = setTimeout(() => {
      for (const child of this.#children) child.proc.kill('SIGKILL')
    }, 1_000)
    await Promise.all([...this.#children].map((c) => c.gone))
    clearTimeout(kill)
    clearInterval(this.#rssTimer)
  }

  /** Hands waiting calls to processes with room, and starts processes for the calls left waiting. */
  #pump(): void {
    while (this.#queue.length > 0) {
      const child = this.#roomyChild()
      if (!child) break
      this.#dispatch(child, this.#queue.shift()!)
    }
    if (this.#closing || this.#restart) return
    const wanted = Math.min(
      this.size - this.#children.size,
      Math.ceil(this.#queue.length / this.perChild) - this.#starting,
    )
    for (let i = 0; i < wanted; i++) this.#start()
  }

  /** a ready process with room: an idle one in the compute lane, the least busy one in the I/O lane */
  #roomyChild(): Child | undefined {
    let best: Child | undefined
    for (const c of this.#children) {
      if (!c.ready || c.calls.size >= this.perChild || c.stoppedFor) continue
      if (!best || c.calls.size < best.calls.size) best = c
      if (c.calls.size === 0) break
    }
    return best
  }

  #dispatch(child: Child, call: Call): void {
    call.child = child
    child.calls.set(call.id, call)
    // the I/O lane's calls share a process, so each stops its own outbound requests at its deadline
    writeCall(child.channel, call.id, this.perChild > 1 ? { ...call.task, deadline: call.deadline } : call.task)
    this.#rssTimer ??= setInterval(() => this.#checkMemory(), RSS_CHECK_MS).unref()
  }

  #overran(call: Call): void {
    const timeout: PoolOutcome = { kind: 'timeout', timeoutMs: call.timeoutMs }
    const child = call.child
    if (!child) {
      this.#queue.splice(this.#queue.indexOf(call), 1)
      this.#end(call, timeout)
      return
    }
    this.#answer(call, timeout)
    if (this.perChild === 1) {
      this.#stop(child, {
        message: `was stopped: its ${call.task.slug} call ran past ${call.timeoutMs} ms`,
        detail: DIED,
      })
      return
    }
    call.stuck = setTimeout(() => {
      if (child.calls.has(call.id))
        this.#stop(child, {
          message: `was stopped: its ${call.task.slug} call still ran at twice its ${call.timeoutMs} ms`,
          detail: 'the handler process was restarted: another call on it ran far past its time limit',
        })
    }, call.timeoutMs)
    call.stuck.unref()
  }

  /** The call ended (answered by its process, or its process is gone): its slot is free. */
  #end(call: Call, out: PoolOutcome): void {
    clearTimeout(call.timer)
    clearTimeout(call.stuck)
    this.#outstanding--
    this.#answer(call, out)
    if (this.#outstanding === 0) this.#idle?.()
  }

  #answer(call: Call, out: PoolOutcome): void {
    if (call.answered) return
    call.answered = true
    call.resolve(out)
  }

  #stop(child: Child, why: { message: string; detail: string }): void {
    child.stoppedFor ??= why
    child.proc.kill('SIGKILL')
  }

  #start(): void {
    const args = [...moduleLoading, `--max-old-space-size=${this.opts.memoryMb}`, '--v8-pool-size=1', entry]
    const proc = SETPRIV
      ? spawn(SETPRIV, ['--pdeathsig', 'KILL', '--', process.execPath, ...args], {
          stdio: ['ignore', 'inherit', 'inherit', 'pipe'],
          env: handlerProcessEnv(process.env),
        })
      : spawn(process.execPath, args, {
          stdio: ['ignore', 'inherit', 'inherit', 'pipe'],
          env: handlerProcessEnv(process.env),
        })
    live.add(proc)
    const channel = proc.stdio[3] as Socket
    // the pool alone keeps no process running: a call keeps it alive through its timer
    proc.unref()
    channel.unref()
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined
    let drained = false
    let markGone: () => void = () => {}
    const child: Child = {
      proc,
      channel,
      ready: false,
      calls: new Map(),
      gone: new Promise<void>((r) => (markGone = r)),
    }
    this.#children.add(child)
    this.#starting++
    const finish = () => {
      if (!exited || !drained) return
      live.delete(proc)
      this.#gone(child, exited.code, exited.signal)
      markGone()
    }
    const reader = new FrameReader((frame) => this.#onFrame(child, frame))
    channel.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk)
      } catch (err) {
        this.#stop(child, { message: `was stopped: it sent a bad frame (${(err as Error).message})`, detail: DIED })
      }
    })
    // the exit says what happened; the socket is only read to its end
    channel.on('error', () => {})
    channel.on('close', () => {
      drained = true
      finish()
    })
    // 'exit' rather than 'close': a process the handler started may hold the socket open
    proc.on('exit', (code, signal) => {
      exited = { code, signal }
      setTimeout(() => {
        drained = true
        channel.destroy()
        finish()
      }, DRAIN_MS).unref()
      finish()
    })
    proc.on('error', (err) => {
      // not started at all (spawn failed): no 'exit' follows
      if (proc.pid === undefined && !exited) {
        exited = { code: null, signal: null }
        drained = true
        process.stderr.write(`tollgate: a handler process could not start: ${err.message}\n`)
        finish()
      }
    })
  }

  #onFrame(child: Child, frame: Frame): void {
    if (frame.type === FRAME.ready) {
      child.ready = true
      this.#starting--
      this.#failedStarts = 0
      this.#pump()
      return
    }
    const call = child.calls.get(frame.id)
    if (frame.type !== FRAME.result || !call) return
    child.calls.delete(frame.id)
    const r = readAnswer<PoolResult>(frame)
    this.#end(call, r.kind === 'expired' ? { kind: 'timeout', timeoutMs: call.timeoutMs } : r)
    this.#pump()
  }

  #gone(child: Child, code: number | null, signal: NodeJS.Signals | null): void {
    if (!this.#children.delete(child)) return
    if (!child.ready) {
      this.#starting--
      if (!this.#closing) this.#failedStarts++
    }
    const how = child.stoppedFor?.message ?? (signal ? `was killed by ${signal}` : `exited with code ${code}`)
    if (!this.#closing)
      this.opts.log?.(
        `handler process ${child.proc.pid ?? '?'} ${how}${child.calls.size ? `; ${child.calls.size} call(s) in flight on it answered crashed (${[...new Set([...child.calls.values()].map((c) => c.task.slug))].join(', ')})` : ''}; ${child.ready ? 'replacing it' : 'it had not started'}`,
      )
    for (const call of child.calls.values()) {
      this.#end(call, {
        kind: 'crashed',
        message: `handler process ${child.proc.pid ?? '?'} ${how} (${call.task.slug})`,
        detail: child.stoppedFor?.detail ?? DIED,
      })
    }
    child.calls.clear()
    if (this.#closing) return
    if (this.#failedStarts === 0) {
      // replaced at once, so the lane keeps its processes warm
      if (this.#children.size < this.size) this.#start()
      this.#pump()
      return
    }
    // processes that die before they are up (a broken build, no memory): back off, up to 2 s,
    // and after three in a row the waiting calls are answered rather than left to time out
    if (this.#failedStarts >= 3 && ![...this.#children].some((c) => c.ready)) {
      for (const call of this.#queue.splice(0))
        this.#end(call, {
          kind: 'crashed',
          message: `handler processes fail to start (the last ${how})`,
          detail: 'the handler processes cannot start',
        })
    }
    this.#restart ??= setTimeout(
      () => {
        this.#restart = undefined
        if (this.#closing) return
        if (this.#children.size === 0) this.#start()
        this.#pump()
      },
      Math.min(2_000, 100 * 2 ** (this.#failedStarts - 1)),
    )
    this.#restart.unref()
  }

  /** Stops a process whose resident memory passed `rssMb`: memory the heap limit does not see (buffers, WebAssembly, native libraries). */
  #checkMemory(): void {
    const limitKb = (this.opts.rssMb ?? 1536) * 1024
    let busy = false
    for (const child of this.#children) {
      if (child.calls.size === 0 || child.stoppedFor || child.proc.pid === undefined) continue
      busy = true
      const kb = residentKb(child.proc.pid)
      if (kb !== undefined && kb > limitKb) {
        this.#stop(child, {
          message: `was stopped: it passed its memory limit (${Math.round(kb / 1024)} MB resident, HANDLER_RSS_MB=${this.opts.rssMb ?? 1536})`,
          detail: 'the handler process passed its memory limit',
        })
      }
    }
    if (!busy) {
      clearInterval(this.#rssTimer)
      this.#rssTimer = undefined
    }
  }
}

/** Resident memory of a process in kB (Linux /proc), or undefined where that cannot be read. */
function residentKb(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))
    return m ? Number(m[1]) : undefined
  } catch {
    return undefined
  }
}
