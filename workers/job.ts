import type { Job, JobsOptions, Queue } from 'bullmq'
import type { Logger } from 'pino'
import type { Deps } from '../src/deps.js'
import type { Settler } from '../src/services/settlement/settler.js'

/** What every processor gets: the process's deps and its settlement engine. */
export interface JobContext {
  deps: Deps
  settler: Settler
  /** the worker process's logger (warnings an operator must see, e.g. relayers low on ETH) */
  log: Pick<Logger, 'info' | 'warn' | 'error'>
  /** the queue this worker serves, for follow-up jobs (e.g. a top-up check after settlement) */
  queue?: Queue
}

/** A job module (STYLE habit 7): name, payload, default options, processor, and its schedule. */
export interface JobModule<P = Record<string, never>> {
  name: string
  defaultOptions: JobsOptions
  /** repeat interval in ms for scheduled jobs */
  everyMs?(deps: Deps): number
  process(ctx: JobContext, job: Job<P>): Promise<unknown>
}
