import { writeFileSync } from 'node:fs'
import path from 'node:path'
import type { Session } from 'node:inspector/promises'

/**
 * Runs `fn`, profiled when asked (this process's main thread only):
 * - BENCH_PROFILE=<dir>: a CPU profile, <dir>/<name>.cpuprofile;
 * - BENCH_HEAP_PROFILE=<dir>: a sampling allocation profile, <dir>/<name>.heapprofile, of every
 *   allocation, kept or collected; with BENCH_HEAP_LIVE=1 only what is still alive at the end, with
 *   BENCH_HEAP_LIVE=major also what a major GC collected (objects that outlived the young generation).
 * Without either, just runs `fn`.
 *
 * @example
 *   const r = await profiled('paid hosted', () => autocannon({ url }))
 */
export async function profiled<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const heapDir = process.env.BENCH_HEAP_PROFILE
  if (heapDir) {
    const live = process.env.BENCH_HEAP_LIVE
    const collected = live
      ? { includeObjectsCollectedByMajorGC: live === 'major' }
      : { includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }
    return withInspector(
      path.join(heapDir, `${fileName(name)}.heapprofile`),
      async (s) => {
        await s.post('HeapProfiler.enable')
        await s.post('HeapProfiler.startSampling', { samplingInterval: 4096, ...collected } as never)
      },
      async (s) => (await s.post('HeapProfiler.stopSampling')).profile,
      fn,
    )
  }
  const dir = process.env.BENCH_PROFILE
  if (!dir) return fn()
  return withInspector(
    path.join(dir, `${fileName(name)}.cpuprofile`),
    async (s) => {
      await s.post('Profiler.enable')
      await s.post('Profiler.start')
    },
    async (s) => (await s.post('Profiler.stop')).profile,
    fn,
  )
}

const fileName = (name: string) => name.replace(/[^a-z0-9]+/gi, '-')

/** Starts a profiler on an inspector session, runs `fn`, and writes what `stop` returns to `file`. */
async function withInspector<T>(
  file: string,
  start: (s: Session) => Promise<void>,
  stop: (s: Session) => Promise<unknown>,
  fn: () => Promise<T>,
): Promise<T> {
  const { Session } = await import('node:inspector/promises')
  const session = new Session()
  session.connect()
  await start(session)
  try {
    return await fn()
  } finally {
    writeFileSync(file, JSON.stringify(await stop(session)))
    session.disconnect()
  }
}
