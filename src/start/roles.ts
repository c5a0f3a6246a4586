import type { FastifyInstance } from 'fastify'
import type { Deps } from '../deps.js'
import { buildProxyApp } from '../http/proxy-app.js'
import { buildWebApp } from '../http/web-app.js'
import { proxyCrashHooksFromEnv } from '../proxy/paid-call/test-hooks.js'
import { createSyncSettlement } from '../services/settlement/sync.js'

export interface Role {
  name: string
  url?: string
  /** stops taking new work, drains in-flight work */
  stop(): Promise<void>
}

async function listen(app: FastifyInstance, host: string, port: number): Promise<string> {
  const address = await app.listen({ host, port })
  return address
}

export async function startWeb(deps: Deps): Promise<Role> {
  const app = await buildWebApp(deps)
  const url = await listen(app, deps.config.host, deps.config.webPort)
  return { name: 'web', url, stop: () => app.close() }
}

export async function startProxy(deps: Deps): Promise<Role> {
  // endpoints in `sync` mode settle before responding, with the same relayers as the workers
  const app = await buildProxyApp(deps, {
    sync: createSyncSettlement(deps),
    hooks: proxyCrashHooksFromEnv(process.env, deps.config),
  })
  const url = await listen(app, deps.config.host, deps.config.proxyPort)
  return { name: 'proxy', url, stop: () => app.close() }
}
