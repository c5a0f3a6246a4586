import { AsyncLocalStorage } from 'node:async_hooks'

/**
 * The abort signal of the hosted-handler call running in this async context (I/O-lane calls in a
 * pool worker): aborted when the call runs past its time, so its outbound requests stop instead of
 * holding a lane slot until their own timeouts end. Undefined outside such a call (tests running a
 * handler inline, the compute lane, whose overrunning calls lose their thread instead).
 *
 * Kept on globalThis: running from source, a handler may load its own copy of this module
 * through the worker's fallback TypeScript loader, and both copies must see one store.
 */
const KEY = Symbol.for('tollgate.handler-task-signal')
const store: AsyncLocalStorage<AbortSignal> =
  ((globalThis as Record<symbol, unknown>)[KEY] as AsyncLocalStorage<AbortSignal> | undefined) ??
  ((globalThis as Record<symbol, unknown>)[KEY] = new AsyncLocalStorage<AbortSignal>())

export function taskSignal(): AbortSignal | undefined {
  return store.getStore()
}

/** Runs `fn` with `signal` as the current call's signal. */
export function runWithTaskSignal<T>(signal: AbortSignal, fn: () => T): T {
  return store.run(signal, fn)
}

/** `own` combined with the current call's signal, when there is one. */
export function withTaskSignal(own: AbortSignal): AbortSignal {
  const task = store.getStore()
  return task ? AbortSignal.any([own, task]) : own
}
