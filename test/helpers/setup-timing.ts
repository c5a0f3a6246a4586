import { mkdirSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'

/**
 * What a test file's process spends on shared setup, for CI's account of where its time goes
 * (.ci/slowest.mjs prints the sums). Recorded only when TOLLGATE_TEST_TIMING names a directory
 * (.ci/run sets it); one JSON file a process, written at exit.
 *
 * `load`: from the process's start until the test helpers were evaluated, i.e. node, the TypeScript
 * loader and the platform's modules (test-env.ts imports deps.ts, which imports nearly all of src/);
 * `schema`: each migrated test schema; `devnet`: each anvil started with its contracts.
 */
const dir = process.env.TOLLGATE_TEST_TIMING
const spent: Record<string, { n: number; ms: number }> = {}

export function recordSetup(kind: string, ms: number): void {
  if (!dir) return
  const s = (spent[kind] ??= { n: 0, ms: 0 })
  s.n++
  s.ms += ms
}

/** Runs `fn` and records its duration under `kind`. */
export async function timedSetup<T>(kind: string, fn: () => Promise<T>): Promise<T> {
  const started = performance.now()
  try {
    return await fn()
  } finally {
    recordSetup(kind, performance.now() - started)
  }
}

if (dir) {
  process.once('exit', () => {
    try {
      mkdirSync(dir, { recursive: true })
      const file = relative(process.cwd(), process.argv[1] ?? 'unknown')
      const record = { file, wallMs: Math.round(performance.now()), spent }
      writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify(record))
    } catch {
      // an account of time, never a reason for a test run to fail
    }
  })
}
