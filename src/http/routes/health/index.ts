import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import type { Deps } from '../../../deps.js'

type Check = { ok: true; ms: number } | { ok: false; ms: number; error: string }

async function timed(fn: () => Promise<unknown>, timeoutMs: number): Promise<Check> {
  const start = performance.now()
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
      }),
    ])
    return { ok: true, ms: Math.round(performance.now() - start) }
  } catch (err) {
    return {
      ok: false,
      ms: Math.round(performance.now() - start),
      error: (err as Error).message.split('\n')[0].slice(0, 200),
    }
  } finally {
    clearTimeout(timer)
  }
}

/** Extra readiness checks a role adds (e.g. relayer balances on the worker side). */
export type ReadinessCheck = (deps: Deps) => Promise<void>

/** /healthz: the process is up. /readyz: Postgres, Redis and the chain answer (503 naming what does not). */
export function healthRoutes(deps: Deps, extra: Record<string, ReadinessCheck> = {}) {
  return async function (app: FastifyInstance) {
    app.get('/healthz', async () => ({ status: 'ok' }))
    app.get('/readyz', async (_request, reply) => {
      const timeout = 2000
      const entries: [string, Promise<Check>][] = [
        ['postgres', timed(() => sql`select 1`.execute(deps.db), timeout)],
        ['redis', timed(() => deps.redis.ping(), timeout)],
        [
          'chain',
          timed(async () => {
            const id = await deps.chain.getChainId()
            if (id !== deps.config.chain.chainId)
              throw new Error(`chain id ${id}, expected ${deps.config.chain.chainId}`)
          }, timeout),
        ],
        ...Object.entries(extra).map(
          ([name, fn]) => [name, timed(() => fn(deps), timeout)] as [string, Promise<Check>],
        ),
      ]
      const checks: Record<string, Check> = {}
      for (const [name, p] of entries) checks[name] = await p
      const failing = Object.keys(checks).filter((k) => !checks[k].ok)
      if (failing.length > 0) {
        reply.code(503)
        return {
          status: 'unavailable',
          statusCode: 503,
          code: 'not_ready',
          error: 'Service Unavailable',
          message: `not ready: ${failing.join(', ')} unreachable or unhealthy`,
          failing,
          checks,
        }
      }
      return { status: 'ready', checks }
    })
  }
}
