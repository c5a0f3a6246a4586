import path from 'node:path'
import { MASTER_KEY } from './buyer.js'
import { repoRoot, spawnNode } from './child-process.js'
import { freePort } from './platform.js'
import { TEST_DATABASE_URL, TEST_REDIS_URL } from './test-env.js'

interface Teardown {
  teardown(fn: () => unknown): void
}

/**
 * The proxy role of a test platform in a process of its own (test/helpers/proxy-crash-child.ts,
 * the fixture handlers), armed with `crash` (`CRASH_BEFORE_PAID_ANSWER` or
 * `CRASH_BEFORE_SIGN_IN_ANSWER`: '1') to die of SIGKILL as it begins such an answer. Resolves once
 * it listens on `port` (`origin`); `exited` says how it ended.
 */
export async function startCrashProxy(t: Teardown, platformEnv: Record<string, string>, crash: Record<string, string>) {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const proxy = spawnNode(
    t,
    'test/helpers/proxy-crash-child.ts',
    {
      ...platformEnv,
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      TOLLGATE_MASTER_KEY: MASTER_KEY,
      PROXY_URL: origin,
      PROXY_PORT: String(port),
      HANDLERS_DIR: path.resolve(repoRoot, 'test/fixtures/handlers'),
      LOG_LEVEL: 'warn',
      ...crash,
    },
    { stdout: 'pipe' },
  )
  const exited = proxy.exited
  await new Promise<void>((resolve, reject) => {
    proxy.child.stdout!.on('data', (d: Buffer) => d.toString().includes('listening') && resolve())
    void exited.then((e) =>
      reject(new Error(`the proxy process ended before listening (${JSON.stringify(e)}): ${proxy.stderr()}`)),
    )
  })
  return { origin, port, exited }
}
