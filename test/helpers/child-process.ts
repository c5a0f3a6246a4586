import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

interface Teardown {
  teardown(fn: () => unknown): void
}

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url))

export interface Child {
  child: ChildProcess
  /** how it ended: an exit code, or the signal that ended it */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** the last 4 KB of its stderr (for a failed assertion's comment) */
  stderr(): string
  /** its stdout so far (only when `stdout: 'pipe'`) */
  stdout(): string
}

/**
 * `node --import tsx <entry>` from the repository root, with `env` over this process's
 * environment; killed (SIGKILL) at teardown if still running. For tests that kill a role as
 * `kill -9` would and look at what it left.
 */
export function spawnNode(
  t: Teardown,
  entry: string,
  env: Record<string, string | undefined>,
  opts: { stdout?: 'pipe' } = {},
): Child {
  return spawnNodeArgs(t, ['--import', 'tsx', entry], env, opts)
}

/** `node <args>` from the repository root, as `spawnNode` (a Procfile role's flags: `procfileNodeArgs`). */
export function spawnNodeArgs(
  t: Teardown,
  args: string[],
  env: Record<string, string | undefined>,
  opts: { stdout?: 'pipe' } = {},
): Child {
  const child = spawn(process.execPath, args, {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', opts.stdout ?? 'ignore', 'pipe'],
  })
  let stderr = ''
  let stdout = ''
  child.stderr!.on('data', (d: Buffer) => void (stderr = (stderr + d.toString()).slice(-4000)))
  child.stdout?.on('data', (d: Buffer) => void (stdout += d.toString()))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  )
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await exited
    }
  })
  return { child, exited, stderr: () => stderr, stdout: () => stdout }
}
