import type { Deps } from '../deps.js'
import { startWorkers } from '../../workers/index.js'
import type { Role } from './roles.js'

/** The `worker` role: BullMQ processors and schedulers from workers/. */
export async function startWorkerRole(deps: Deps): Promise<Role> {
  const workers = await startWorkers(deps)
  return { name: 'worker', stop: () => workers.close() }
}
