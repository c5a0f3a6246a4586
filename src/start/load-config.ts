import { ConfigError, loadConfig, type Config } from '../config.js'

/** the problem a Procfile role reports without a chain: only `npm start` runs the embedded one */
const RPC_URL_REQUIRED =
  'RPC_URL: the web, proxy and worker roles need a chain RPC URL; only `npm start` runs the embedded chain'

/**
 * Parse the environment or print every problem and exit non-zero.
 * `needsRpc`: the process connects to the chain itself (the Procfile roles), so RPC_URL is required.
 */
export function loadConfigOrExit(
  env: Record<string, string | undefined> = process.env,
  opts: { needsRpc?: boolean } = {},
): Readonly<Config> {
  const rpcMissing = opts.needsRpc === true && (env.RPC_URL ?? '').trim() === ''
  try {
    const config = loadConfig(env)
    if (rpcMissing) throw new ConfigError([RPC_URL_REQUIRED])
    return config
  } catch (err) {
    if (err instanceof ConfigError) {
      // listed with every other problem, once (production already names a missing RPC_URL)
      const problems =
        rpcMissing && !err.problems.some((p) => p.startsWith('RPC_URL:'))
          ? [...err.problems, RPC_URL_REQUIRED]
          : err.problems
      process.stderr.write(`tollgate: ${new ConfigError(problems).message}\n`)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }
}
