import './node-version.js' // first: refuses a Node release the dependencies cannot load on
import { createDeps } from '../deps.js'
import { loadConfigOrExit } from './load-config.js'
import { startWeb } from './roles.js'
import { onShutdown } from './shutdown.js'

const config = loadConfigOrExit(process.env, { needsRpc: true })
const deps = createDeps(config)
const web = await startWeb(deps)
onShutdown([() => web.stop(), () => deps.close()])
