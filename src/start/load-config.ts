import { ConfigError, loadConfig, type Config } from '../config.js'

/** Parse the environment or print every problem and exit non-zero. */
export function loadConfigOrExit(env: Record<string, string | undefined> = process.env): Readonly<Config> {
  try {
    return loadConfig(env)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`tollgate: ${err.message}\n`)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }
}
