import { createProcessPool } from './process-pool.js'
import type { HandlerPool, HandlerPoolOptions } from './pool-types.js'

export type { HandlerPool, HandlerPoolOptions, PoolOutcome } from './pool-types.js'

// signer-recovery.ts starts its worker threads with these too
export { workerExecArgv, workerModule } from './worker-options.js'

/**
 * The pool a proxy or the `handlers` role runs calls in: handler processes of its own.
 *
 * @example
 *   const pool = createHandlerPool(config.handlers)
 *   const out = await pool.run({ file, slug }, input, ctx, 10_000)
 */
export function createHandlerPool(opts: HandlerPoolOptions): HandlerPool {
  return createProcessPool(opts)
}
