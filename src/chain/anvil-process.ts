/**
 * anvil as a child process of ours: started through a small sh wrapper (POSIX) that stops it when
 * we die, its output watched for "Listening on", and a stop() that waits for it to exit.
 */
import { spawn, type ChildProcess } from 'node:child_process'

// A small sh wrapper that ties anvil's life to ours even if Node dies without running 'exit'
// handlers (SIGKILL, an unhandled SIGTERM from a test runner): Node holds the wrapper's stdin
// pipe, and when that closes the watchdog stops anvil. SIGTERM to the wrapper is forwarded and
// the wrapper waits, so anvil can write --state before stop() resolves. The first stdout line
// reports anvil's pid.
const WRAPPER = `
exec 3<&0
"$@" </dev/null &
anvil=$!
printf 'tollgate-devnet anvil-pid %s\\n' "$anvil"
(read -r _ <&3; kill -TERM "$anvil" 2>/dev/null) &
watchdog=$!
trap 'kill -TERM "$anvil" 2>/dev/null' TERM INT
wait "$anvil"; status=$?
while kill -0 "$anvil" 2>/dev/null; do wait "$anvil"; status=$?; done
kill "$watchdog" 2>/dev/null
exit "$status"
`

/** Children still running, killed on process exit as a second line of defence. */
const live = new Set<ChildProcess>()
let exitHookInstalled = false
function installExitHook(): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on('exit', () => {
    for (const child of live) {
      try {
        child.kill('SIGTERM')
      } catch {
        // already gone
      }
    }
  })
}

/** Keeps the last lines of a stream for error messages without holding all of anvil's chatter. */
function tail(limit: number): { push(line: string): void; text(): string } {
  const lines: string[] = []
  return {
    push(line) {
      lines.push(line)
      if (lines.length > limit) lines.shift()
    },
    text: () => lines.join('\n'),
  }
}

function onLines(stream: NodeJS.ReadableStream, fn: (line: string) => void): void {
  let buf = ''
  stream.setEncoding('utf8')
  stream.on('data', (chunk: string) => {
    buf += chunk
    let i: number
    while ((i = buf.indexOf('\n')) >= 0) {
      fn(buf.slice(0, i).replace(/\r$/, ''))
      buf = buf.slice(i + 1)
    }
  })
  stream.on('end', () => {
    if (buf) fn(buf)
  })
}

export interface AnvilProcessOptions {
  /** how long to wait for "Listening on" */
  startTimeoutMs: number
  /** anvil's own chatter goes to `debug` */
  logger?: { debug?(msg: string): void }
}

/** One anvil process: `listening` resolves with its RPC URL; `stop()` ends it (idempotent). */
export class AnvilProcess {
  /** the RPC URL, once anvil prints "Listening on"; rejects when it fails to start in time */
  readonly listening: Promise<string>
  private readonly child: ChildProcess
  private readonly posix = process.platform !== 'win32'
  private readonly out = tail(40)
  private readonly err = tail(40)
  private readonly exitedPromise: Promise<void>
  private exited = false
  private anvilPid: number | undefined
  private stopping: Promise<void> | undefined

  constructor(
    private readonly binary: string,
    args: string[],
    private readonly opts: AnvilProcessOptions,
  ) {
    this.child = this.posix
      ? spawn('/bin/sh', ['-c', WRAPPER, 'tollgate-devnet', binary, ...args], {
          stdio: ['pipe', 'pipe', 'pipe'],
          detached: true, // its own process group, so a last-resort kill reaches anvil too
        })
      : spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    live.add(this.child)
    installExitHook()
    this.anvilPid = this.posix ? undefined : this.child.pid
    this.exitedPromise = new Promise<void>((resolve) => {
      this.child.once('exit', () => {
        this.exited = true
        live.delete(this.child)
        resolve()
      })
    })
    onLines(this.child.stderr!, (line) => this.err.push(line))
    this.listening = this.watchStart()
  }

  /** anvil's process id (the wrapper reports it on POSIX), for diagnostics */
  get pid(): number | undefined {
    return this.anvilPid
  }

  private watchStart(): Promise<string> {
    const { child, opts } = this
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`anvil did not start within ${opts.startTimeoutMs} ms`)),
        opts.startTimeoutMs,
      )
      onLines(child.stdout!, (line) => {
        const pidMatch = /^tollgate-devnet anvil-pid (\d+)$/.exec(line)
        if (pidMatch) {
          this.anvilPid = Number(pidMatch[1])
          return
        }
        this.out.push(line)
        opts.logger?.debug?.(`anvil: ${line}`)
        const m = /Listening on (\S+):(\d+)/.exec(line)
        if (m) {
          clearTimeout(timer)
          resolve(`http://127.0.0.1:${m[2]}`)
        }
      })
      child.once('error', (e) => {
        clearTimeout(timer)
        reject(new Error(`could not run anvil (${this.binary}): ${e.message}`))
      })
      child.once('exit', (code, signal) => {
        clearTimeout(timer)
        reject(new Error(`anvil exited before it was ready (code ${code}, signal ${signal})`))
      })
    })
  }

  /** SIGTERM (anvil writes --state), then after 10 s SIGKILL to its process group; waits for the exit. */
  stop(): Promise<void> {
    this.stopping ??= this.terminate()
    return this.stopping
  }

  private async terminate(): Promise<void> {
    const { child } = this
    if (!this.exited) {
      child.kill('SIGTERM')
      const timeout = new Promise<'timeout'>((r) => setTimeout(r, 10_000, 'timeout').unref())
      if ((await Promise.race([this.exitedPromise, timeout])) === 'timeout') {
        // anvil ignored SIGTERM: kill its whole process group.
        try {
          if (this.posix && child.pid) process.kill(-child.pid, 'SIGKILL')
          else child.kill('SIGKILL')
        } catch {
          // exited in the meantime
        }
        await this.exitedPromise
      }
    }
    child.stdin?.destroy()
  }

  /** anvil's stderr and its last stdout lines, for an error message ('' when it printed nothing) */
  diagnostics(): string {
    return [
      this.err.text() && `anvil stderr:\n${this.err.text()}`,
      this.out.text() && `anvil stdout (last lines):\n${this.out.text()}`,
    ]
      .filter(Boolean)
      .join('\n')
  }
}
