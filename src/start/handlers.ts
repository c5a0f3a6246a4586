import './node-version.js' // first: refuses a Node release the dependencies cannot load on
import { ConfigError } from '../config.js'
import { startHandlersRole } from './handlers-role.js'
import { loadConfigOrExit } from './load-config.js'
import { onShutdown } from './shutdown.js'

// The Procfile `handlers` role: hosted handler processes for proxies started with HANDLERS_URL.
const config = loadConfigOrExit(process.env)
if (!config.handlers.listen) {
  const problem =
    'HANDLERS_LISTEN: the handlers role needs an address to listen on (unix:/path.sock or tcp://host:port), the one the proxies have in HANDLERS_URL; without HANDLERS_URL a proxy runs its own handler processes and needs no handlers role'
  process.stderr.write(`tollgate: ${new ConfigError([problem]).message}\n`)
  process.exit(78) // EX_CONFIG
}
const role = await startHandlersRole(config)
onShutdown([() => role.stop()])
