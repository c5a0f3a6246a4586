import { writeFileSync } from 'node:fs'
import path from 'node:path'

/**
 * With BENCH_PROFILE=<dir>, writes a CPU profile of `fn`'s run (this process's main thread only)
 * to <dir>/<name>.cpuprofile; without it, just runs `fn`.
 *
 * @example
 *   const r = await profiled('paid hosted', () => autocannon({ url }))
 */
export async function profiled<T>(name: string, fn: () => Promise<T>): Promise<T> {
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
