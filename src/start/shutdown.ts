/**
 * Runs `closers` in order on the first SIGTERM/SIGINT (draining in-flight work first), then exits.
 * A second signal, or closers that take longer than `timeoutMs`, force the exit.
 * Returns the same shutdown for other triggers (see `stopWhenOrphaned`).
 */
export function onShutdown(
  closers: Array<() => Promise<unknown>>,
  log: (msg: string) => void = console.error,
  timeoutMs = 15000,
): (reason: string) => void {
  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) {
      log(`${signal} again: exiting now`)
      process.exit(1)
    }
    stopping = true
    log(`${signal}: shutting down`)
    const timer = setTimeout(() => {
      log(`shutdown took longer than ${timeoutMs} ms: exiting`)
      process.exit(1)
    }, timeoutMs)
    timer.unref()
    let code = 0
    for (const close of closers) {
      try {
        await close()
      } catch (err) {
        code = 1
        log(`shutdown step failed: ${(err as Error).message}`)
      }
    }
    clearTimeout(timer)
    process.exit(code)
  }
  process.on('SIGTERM', () => void stop('SIGTERM'))
  process.on('SIGINT', () => void stop('SIGINT'))
  return (reason) => void stop(reason)
}

/**
 * Calls `stop` once this process's parent has gone: `npm start` runs us under `sh -c`, and a
 * SIGTERM (or SIGKILL) sent to npm ends npm and the shell but not us, which would leave the
 * platform and its chain running with nobody to stop them. Checked every `everyMs`; unref'd.
 */
export function stopWhenOrphaned(stop: (reason: string) => void, everyMs = 1000): void {
  const parent = process.ppid
  const timer = setInterval(() => {
    if (process.ppid === parent) return
    clearInterval(timer)
    stop(`the parent process (${parent}) exited`)
  }, everyMs)
  timer.unref()
}
