import { spawn, type ChildProcess } from 'node:child_process'
import { Redis } from 'ioredis'
import { freePort } from './platform.js'

interface Teardown {
  teardown(fn: () => unknown): void
}

export interface PrivateRedis {
  url: string
  port: number
  /** `kill -9` the server: every key is gone (no persistence), as when a Redis host is lost */
  kill9(): Promise<void>
  /** a new, empty server on the same port; resolves once it answers PING */
  restart(): Promise<void>
  stop(): Promise<void>
}

/**
 * A throwaway redis-server of this test's own on a free loopback port, without persistence, so the
 * test may kill it (`kill -9`) and start it again empty; stopped at teardown.
 */
export async function startPrivateRedis(t: Teardown): Promise<PrivateRedis> {
  const port = await freePort()
  const url = `redis://127.0.0.1:${port}`
  let child: ChildProcess | undefined
  let exited: Promise<void> = Promise.resolve()
  const start = async () => {
    const c = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxclients', '1000'],
      { stdio: 'ignore' },
    )
    child = c
    exited = new Promise<void>((resolve) => c.on('exit', () => resolve()))
    for (let i = 0; ; i++) {
      const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
      r.on('error', () => {})
      const ok = await r
        .connect()
        .then(() => r.ping())
        .catch(() => null)
      r.disconnect()
      if (ok === 'PONG') return
      if (c.exitCode !== null) throw new Error(`redis-server on port ${port} exited with ${c.exitCode}`)
      if (i > 200) throw new Error('redis-server did not start')
      await new Promise((res) => setTimeout(res, 25))
    }
  }
  const kill = async (signal: NodeJS.Signals) => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill(signal)
    await exited
  }
  await start()
  t.teardown(() => kill('SIGKILL'))
  return {
    url,
    port,
    kill9: () => kill('SIGKILL'),
    restart: async () => {
      await kill('SIGKILL')
      await start()
    },
    stop: () => kill('SIGTERM'),
  }
}
