import { defineHandler } from '../../src/pool/handler-contract.js'
import { QUICKJS_WORKER_SOURCE } from './quickjs-worker-source.js'

const MAX_CODE = 100_000
const MAX_LOG_BYTES = 256 * 1024
const MAX_LOG_LINES = 1000
const MAX_RESULT_BYTES = 1024 * 1024
/** QuickJS's own stack limit; the thread's V8 stack is made much larger so QuickJS reports overflow first. */
const STACK_BYTES = 512 * 1024
/** Extra time past the program's limit for starting the thread and compiling QuickJS before the hard kill. */
const HARD_KILL_GRACE_MS = 1500

let compiled: Promise<WebAssembly.Module> | undefined

/** QuickJS's WebAssembly, compiled once per pool worker and shared with every sandbox thread. */
async function quickjsWasm(): Promise<WebAssembly.Module> {
  compiled ??= (async () => {
    const [{ createRequire }, { readFile }] = await Promise.all([import('node:module'), import('node:fs/promises')])
    const fromQuickjs = createRequire(createRequire(import.meta.url).resolve('quickjs-emscripten'))
    return WebAssembly.compile(await readFile(fromQuickjs.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
  })()
  return compiled
}

interface Input {
  code: string
  timeLimitMs: number
  memoryLimitMb: number
}

interface WorkerReply {
  ok: boolean
  result: unknown
  error: { name: string; message: string; stack?: string } | null
  timedOut: boolean
  logs: { level: string; message: string }[]
  logsTruncated: boolean
  crashed?: boolean
}

export default defineHandler<Input>({
  slug: 'code-sandbox',
  description:
    'Run untrusted JavaScript (ES2023) in a QuickJS interpreter compiled to WebAssembly, in its own thread, isolated from the host (no filesystem, network or Node APIs), with time and memory limits; returns the completion value as JSON and captured console output.',
  timeoutMs: 15_000,
  inputSchema: {
    type: 'object',
    required: ['code'],
    additionalProperties: false,
    properties: {
      code: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_CODE,
        description: `JavaScript source (a script, not a module), at most ${MAX_CODE} characters. The value of the last expression is returned (a returned Promise is awaited); console.log/info/warn/error/debug are captured`,
      },
      timeLimitMs: {
        type: 'integer',
        minimum: 10,
        maximum: 5000,
        default: 1000,
        description: 'time limit in milliseconds (10–5000); execution is interrupted when it runs out',
      },
      memoryLimitMb: {
        type: 'integer',
        minimum: 1,
        maximum: 64,
        default: 32,
        description: 'heap limit of the interpreter in MiB (1–64)',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description: `ok, result (JSON value of the last expression, at most ${MAX_RESULT_BYTES} bytes), error { name, message, stack } when the code threw or hit a limit, limit ('time' | 'memory' | 'stack' | null), logs [{ level, message }] (at most ${MAX_LOG_LINES} lines / ${MAX_LOG_BYTES} bytes), durationMs`,
    schema: {
      type: 'object',
      properties: {
        ok: { type: 'boolean' },
        result: {},
        error: { type: ['object', 'null'] },
        limit: { type: ['string', 'null'] },
        logs: { type: 'array' },
        logsTruncated: { type: 'boolean' },
        durationMs: { type: 'number' },
      },
    },
    example: {
      ok: true,
      result: { sum: 14 },
      error: null,
      limit: null,
      logs: [{ level: 'log', message: 'squares [1,4,9]' }],
      logsTruncated: false,
      durationMs: 728,
    },
  },
  example: {
    code: 'const xs = [1, 2, 3].map((x) => x * x);\nconsole.log("squares", xs);\n({ sum: xs.reduce((a, b) => a + b, 0) })',
    timeLimitMs: 1000,
    memoryLimitMb: 32,
  },
  async run(input) {
    const { Worker } = await import('node:worker_threads')
    const wasmModule = await quickjsWasm()
    const started = performance.now()
    const worker = new Worker(QUICKJS_WORKER_SOURCE, {
      eval: true,
      // no TypeScript loaders or inspector flags from the parent: the source is plain JavaScript
      execArgv: [],
      env: {},
      stdout: true,
      stderr: true,
      workerData: {
        wasmModule,
        code: input.code,
        timeLimitMs: input.timeLimitMs,
        memoryLimitMb: input.memoryLimitMb,
        stackBytes: STACK_BYTES,
        maxLogLines: MAX_LOG_LINES,
        maxLogBytes: MAX_LOG_BYTES,
        maxResultBytes: MAX_RESULT_BYTES,
        quickjsUrl: import.meta.resolve('quickjs-emscripten'),
      },
      // the WebAssembly heap lives outside these limits; QuickJS's memory limit bounds it
      resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16, stackSizeMb: 16 },
    })
    worker.stdout.resume()
    worker.stderr.resume()

    let hardKilled = false
    const reply = await new Promise<WorkerReply>((resolve) => {
      const timer = setTimeout(() => {
        hardKilled = true
        void worker.terminate()
        resolve({
          ok: false,
          result: null,
          error: { name: 'InternalError', message: 'interrupted: time limit exceeded' },
          timedOut: true,
          logs: [],
          logsTruncated: false,
        })
      }, input.timeLimitMs + HARD_KILL_GRACE_MS)
      worker.once('message', (m: WorkerReply) => {
        clearTimeout(timer)
        resolve(m)
      })
      worker.once('error', (err) => {
        clearTimeout(timer)
        resolve({
          ok: false,
          result: null,
          error: { name: 'InternalError', message: err.message },
          timedOut: false,
          logs: [],
          logsTruncated: false,
          crashed: true,
        })
      })
      worker.once('exit', () => {
        clearTimeout(timer)
        resolve({
          ok: false,
          result: null,
          error: { name: 'InternalError', message: 'the sandbox stopped unexpectedly' },
          timedOut: false,
          logs: [],
          logsTruncated: false,
          crashed: true,
        })
      })
    })
    if (!hardKilled) void worker.terminate()

    const message = reply.error?.message ?? ''
    const limit =
      reply.timedOut || hardKilled
        ? 'time'
        : /out of memory|string too long|invalid array length|ERR_WORKER_OUT_OF_MEMORY/i.test(message)
          ? 'memory'
          : /stack overflow|call stack/i.test(message)
            ? 'stack'
            : null
    return {
      body: {
        ok: reply.ok,
        result: reply.ok ? reply.result : null,
        error: reply.error,
        limit,
        logs: reply.logs,
        logsTruncated: reply.logsTruncated,
        durationMs: Math.round(performance.now() - started),
      },
    }
  },
})
