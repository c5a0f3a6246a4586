/** The Piscina worker of the thread pool (thread-pool.ts): runs one call per task. */
export { runTask as default } from './run-task.js'
export type { PoolResult, PoolTask } from './run-task.js'
