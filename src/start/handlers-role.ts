import type { Config } from '../config.js'
import { processLogger } from '../logger.js'
import { createHandlerPool } from '../pool/handler-pool.js'
import { handlersDir } from '../pool/handler-registry.js'
import { serveHandlers } from '../pool/handler-server.js'
import type { Role } from './roles.js'

/**
 * The `handlers` role: a supervisor that listens on HANDLERS_LISTEN for proxies' calls and runs
 * them in handler processes it starts, restarts and holds to their limits (process-pool.ts). It
 * never runs handler code itself, so whatever a handler does ends at most one handler process.
 * `dirs`: the handler folders it serves (tests add their fixtures).
 */
export async function startHandlersRole(config: Readonly<Config>, opts: { dirs?: string[] } = {}): Promise<Role> {
  const listen = config.handlers.listen
  if (!listen)
    throw new Error('HANDLERS_LISTEN (or a single HANDLERS_URL) must name the address the handlers role listens on')
  const log = processLogger(config.logLevel)
  const pool = createHandlerPool({ ...config.handlers, log: (message) => log.warn(message) })
  const server = await serveHandlers(pool, listen, opts.dirs ?? [handlersDir])
  log.info(`handlers role listening on ${server.address}`)
  return {
    name: 'handlers',
    url: server.address,
    stop: async () => {
      await server.close()
      await pool.close()
    },
  }
}
