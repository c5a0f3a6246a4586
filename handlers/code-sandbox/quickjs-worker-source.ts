/**
 * Source of the worker thread that runs one program in QuickJS. Kept as plain JavaScript text
 * (run with `new Worker(source, { eval: true })`) so it needs no TypeScript loader and survives
 * compilation unchanged. The parent kills the thread at a hard deadline: QuickJS's interrupt
 * handler only runs between bytecodes, and some built-ins (e.g. Array.prototype.fill near the
 * memory limit) can spend many seconds inside C.
 *
 * workerData: { wasmModule, timeLimitMs, memoryLimitMb, stackBytes, maxLogLines, maxLogBytes, maxResultBytes, quickjsUrl }
 * posts: { ok, result, error, timedOut, logs, logsTruncated }
 */
export const QUICKJS_WORKER_SOURCE = String.raw`
const { parentPort, workerData: w } = require('node:worker_threads')
;(async () => {
  const { newQuickJSWASMModule, newVariant, RELEASE_SYNC } = await import(w.quickjsUrl)
  // the parent compiles the WebAssembly once; each thread only instantiates it (fresh memory per call)
  const QuickJS = await newQuickJSWASMModule(w.wasmModule ? newVariant(RELEASE_SYNC, { wasmModule: w.wasmModule }) : RELEASE_SYNC)
  const runtime = QuickJS.newRuntime()
  runtime.setMemoryLimit(w.memoryLimitMb * 1024 * 1024)
  runtime.setMaxStackSize(w.stackBytes)
  const deadline = Date.now() + w.timeLimitMs
  let timedOut = false
  runtime.setInterruptHandler(() => {
    if (Date.now() > deadline) timedOut = true
    return timedOut
  })
  const vm = runtime.newContext()

  const logs = []
  let logBytes = 0
  let logsTruncated = false
  const format = (args) => args.map((h) => {
    const type = vm.typeof(h)
    if (type === 'string') return vm.getString(h)
    if (type === 'undefined') return 'undefined'
    if (type === 'function') return '[Function]'
    try {
      const v = vm.dump(h)
      return typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v))
    } catch {
      return '[unprintable]'
    }
  }).join(' ')
  const consoleObj = vm.newObject()
  for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
    const fn = vm.newFunction(level, (...args) => {
      if (logsTruncated) return
      const message = format(args)
      if (logs.length >= w.maxLogLines || logBytes + message.length > w.maxLogBytes) {
        logsTruncated = true
        return
      }
      logBytes += message.length
      logs.push({ level, message })
    })
    vm.setProp(consoleObj, level, fn)
    fn.dispose()
  }
  vm.setProp(vm.global, 'console', consoleObj)
  consoleObj.dispose()

  const describe = (h) => {
    try {
      const e = vm.dump(h)
      return e !== null && typeof e === 'object'
        ? { name: String(e.name ?? 'Error'), message: String(e.message ?? ''), ...(e.stack ? { stack: String(e.stack) } : {}) }
        : { name: 'Error', message: String(e) }
    } catch {
      return { name: 'Error', message: 'uncaught exception (could not be read)' }
    }
  }

  let ok = false
  let result = null
  let error = null
  const evaluated = vm.evalCode(w.code, 'sandbox.js')
  if (evaluated.error) {
    error = describe(evaluated.error)
    evaluated.error.dispose()
  } else {
    let value = evaluated.value
    if (vm.typeof(value) === 'object' && vm.getPromiseState(value).type !== 'fulfilled') {
      const promise = value
      while (vm.getPromiseState(promise).type === 'pending') {
        const jobs = runtime.executePendingJobs(64)
        if (jobs.error) {
          error = describe(jobs.error)
          jobs.error.dispose()
          break
        }
        if (jobs.value === 0) break
      }
      const state = vm.getPromiseState(promise)
      if (!error && state.type === 'fulfilled') value = state.value
      else if (!error && state.type === 'rejected') error = describe(state.error)
      else if (!error) error = { name: 'Error', message: 'the returned promise never settled' }
    }
    if (!error && vm.typeof(value) !== 'undefined') {
      const json = vm.getProp(vm.global, 'JSON')
      const stringify = vm.getProp(json, 'stringify')
      const s = vm.callFunction(stringify, json, value)
      if (s.error) error = describe(s.error)
      else {
        const text = vm.typeof(s.value) === 'string' ? vm.getString(s.value) : undefined
        if (text !== undefined && text.length > w.maxResultBytes) error = { name: 'RangeError', message: 'result is larger than ' + w.maxResultBytes + ' bytes of JSON' }
        else {
          result = text === undefined ? null : JSON.parse(text)
          ok = true
        }
      }
    } else if (!error) ok = true
  }
  // no dispose: QuickJS may refuse to free a runtime left mid-way by an interrupt or OOM; the thread ends anyway
  parentPort.postMessage({ ok, result, error, timedOut, logs, logsTruncated })
})().catch((err) => {
  parentPort.postMessage({ ok: false, result: null, error: { name: 'InternalError', message: String(err && err.message || err) }, timedOut: false, logs: [], logsTruncated: false, crashed: true })
})
`
