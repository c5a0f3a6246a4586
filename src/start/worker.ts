import './node-version.js' // first: refuses a Node release the dependencies cannot load on
import { createDeps } from '../deps.js'
import { loadConfigOrExit } from './load-config.js'
import { onShutdown } from './shutdown.js'
import { startWorkerRole } from './worker-role.js'

const config = loadConfigOrExit(process.env, { needsRpc: true })
const deps = createDeps(config)
const worker = await startWorkerRole(deps)
onShutdown([() => worker.stop(), () => deps.close()])
