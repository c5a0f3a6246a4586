import { createServer } from 'node:net'
import type { FastifyInstance } from 'fastify'
import type { Devnet } from '../../src/chain/devnet.js'
import { createDeps, type Deps } from '../../src/deps.js'
import { buildProxyApp, type ProxyAppOptions } from '../../src/http/proxy-app.js'
import { loadHandlerRegistry } from '../../src/pool/handler-registry.js'
import { seedHostedServices } from '../../src/services/hosted-seed.js'
import { withDevnet } from './devnet.js'
import { timedSetup } from './setup-timing.js'
import { testConfig } from './test-env.js'

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
    s.on('error', reject)
  })
}

/**
 * Closes a listening Fastify app at the end of a test, and with it every connection still open.
 * close() alone waits for connections that are not idle: one whose client dropped a request while
 * the handler ran stays open for the server's keep-alive timeout (72 s), which once held a test
 * file's teardown for a minute. The test is over, so nothing in flight is waited for.
 */
export async function closeListening(app: FastifyInstance): Promise<void> {
  const closing = app.close()
  app.server.closeAllConnections()
  await closing
}

interface T {
  teardown(fn: () => unknown): void
}

export interface TestPlatform {
  devnet: Devnet
  deps: Deps
  proxy: FastifyInstance
  proxyUrl: string
  env: Record<string, string>
  /** an extra proxy process on the same Postgres, Redis and chain */
  startProxy(opts?: ProxyAppOptions): Promise<{ app: FastifyInstance; url: string }>
}

/**
 * A devnet, an isolated schema/prefix, the hosted services seeded, and a listening proxy whose
 * PROXY_URL is its real address (so 402 `resource` URLs are callable).
 */
export async function startTestPlatform(
  t: T,
  opts: { devnet?: Devnet; env?: Record<string, string>; proxy?: ProxyAppOptions } = {},
): Promise<TestPlatform> {
  const devnet = opts.devnet ?? (await withDevnet(t))
  const port = await freePort()
  const env = {
    RPC_URL: devnet.rpcUrl,
    PROXY_URL: `http://127.0.0.1:${port}`,
    TOLLGATE_RECEIVER_ADDRESS: devnet.accounts.receiver.address,
    RELAYER_PRIVATE_KEYS: devnet.accounts.relayers.map((r) => r.privateKey).join(','),
    ...opts.env,
  }
  const config = await testConfig(t, env)
  const deps = createDeps(config)
  t.teardown(() => deps.close())
  await timedSetup('seed hosted services', async () =>
    seedHostedServices(deps, await loadHandlerRegistry(opts.proxy?.handlersDir)),
  )
  const listen = async (p: number, proxyOpts?: ProxyAppOptions) => {
    const app = await buildProxyApp(deps, { logger: false, ...opts.proxy, ...proxyOpts })
    await app.listen({ host: '127.0.0.1', port: p })
    t.teardown(() => closeListening(app))
    return { app, url: `http://127.0.0.1:${p}` }
  }
  const main = await listen(port)
  return {
    devnet,
    deps,
    proxy: main.app,
    proxyUrl: main.url,
    env: { ...env, DATABASE_SCHEMA: config.databaseSchema, REDIS_PREFIX: config.redisPrefix },
    startProxy: async (o) => listen(await freePort(), o),
  }
}
