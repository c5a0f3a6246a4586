import { writeFileSync } from 'node:fs'
import path from 'node:path'

/**
 * With BENCH_HEAP_PROFILE=<dir>, writes a sampling allocation profile of `fn` (every allocation, kept
 * or collected) to <dir>/<name>.heapprofile instead. With BENCH_PROFILE=<dir>, writes a CPU profile of `fn`'s run (this process's main thread only)
 * to <dir>/<name>.cpuprofile; without it, just runs `fn`.
 *
 * @example
 *   const r = await profiled('paid hosted', () => autocannon({ url }))
 */
export async function profiled<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const heapDir = process.env.BENCH_HEAP_PROFILE
  if (heapDir) return heapProfiled(heapDir, name, fn)
  const dir = process.env.BENCH_PROFILE
  if (!dir) return fn()
  const { Session } = await import('node:inspector/promises')
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.start')
  try {
    return await fn()
  } finally {
    const { profile } = await session.post('Profiler.stop')
    writeFileSync(path.join(dir, `${name.replace(/[^a-z0-9]+/gi, '-')}.cpuprofile`), JSON.stringify(profile))
    session.disconnect()
  }
}

/** With BENCH_HEAP_PROFILE=<dir>: a sampling profile of every allocation (kept or collected) during `fn`. */
async function heapProfiled<T>(dir: string, name: string, fn: () => Promise<T>): Promise<T> {
  const { Session } = await import('node:inspector/promises')
  const session = new Session()
  session.connect()
  await session.post('HeapProfiler.enable')
  await session.post('HeapProfiler.startSampling', (process.env.BENCH_HEAP_LIVE ? { samplingInterval: 4096, includeObjectsCollectedByMajorGC: process.env.BENCH_HEAP_LIVE === 'major' } : { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }) as never)
  try {
    return await fn()
  } finally {
    const { profile } = await session.post('HeapProfiler.stopSampling')
    writeFileSync(path.join(dir, `${name.replace(/[^a-z0-9]+/gi, '-')}.heapprofile`), JSON.stringify(profile))
    session.disconnect()
  }
}
