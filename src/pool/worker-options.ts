import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

// Options a pool worker needs from its parent: how modules load (tsx when running from source).
const WORKER_OPTIONS_WITH_VALUE = new Set([
  '--import',
  '--require',
  '-r',
  '--loader',
  '--experimental-loader',
  '--conditions',
  '-C',
])
const WORKER_OPTION_RE =
  /^(--(import|require|loader|experimental-loader|conditions)=|--enable-source-maps$|--no-warnings$|--experimental-)/

/**
 * The parent's options a Worker (or a handler process) needs: how modules load. V8 flags and
 * process-wide options (such as the `--v8-pool-size=1 --heap-growing-percent=300` the Procfile
 * starts web and proxy with) make `new Worker` throw ERR_WORKER_INVALID_EXEC_ARGV; they already
 * apply to the whole process. Handler processes get their own limits instead (process-pool.ts).
 */
export function workerExecArgv(parent: readonly string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < parent.length; i++) {
    const a = parent[i]!
    if (WORKER_OPTIONS_WITH_VALUE.has(a) && i + 1 < parent.length) out.push(a, parent[++i]!)
    else if (WORKER_OPTION_RE.test(a)) out.push(a)
    // a dropped option given as `--flag value`: its value goes with it
    else if (!a.includes('=') && i + 1 < parent.length && !parent[i + 1]!.startsWith('-')) i++
  }
  return out
}

/**
 * The worker module `name` beside the module at `fromUrl` (its `import.meta.url`): the .ts source
 * when running from source, the compiled .js under dist/.
 */
export function workerModule(fromUrl: string, name: string): string {
  const ts = fileURLToPath(new URL(`./${name}.ts`, fromUrl))
  return existsSync(ts) ? ts : fileURLToPath(new URL(`./${name}.js`, fromUrl))
}
