import './node-version.js' // first: refuses a Node release the dependencies cannot load on
import { createDeps } from '../deps.js'
import { loadConfigOrExit } from './load-config.js'
import { startProxy } from './roles.js'
import { onShutdown } from './shutdown.js'

const config = loadConfigOrExit(process.env, { needsRpc: true })
const deps = createDeps(config)
const proxy = await startProxy(deps)
onShutdown([() => proxy.stop(), () => deps.close()])
