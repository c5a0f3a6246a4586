/**
 * What a command runs with: the context (`--context NAME`, else TOLLGATE_CONTEXT, else the file's
 * `current`), its API address and keys, each overridable from the environment (TOLLGATE_API_URL,
 * TOLLGATE_API_KEY, TOLLGATE_AGENT_KEY), and where each value came from, for messages.
 */
import { isSendableKey } from '../client/sendable-key.js'
import { configPath, readConfigFile, type Context, type Deployment } from './config-file.js'
import { UsageError } from './errors.js'
import type { Io } from './io.js'
import { checkKeyDeployment } from './key-deployment.js'

export const DEFAULT_API_URL = 'http://localhost:4020'

export interface Settings {
  /** the context in use; undefined when the file has none and none was named */
  contextName: string | undefined
  /** the context as stored (before environment overrides) */
  context: Context
  /** the context exists in the file */
  exists: boolean
  apiUrl: string
  apiUrlSource: string
  /** the deployment recorded for the context, when the API address is the context's */
  deployment: Deployment | undefined
  apiKey: string | undefined
  apiKeySource: string
  agentKey: string | undefined
  agentKeySource: string
  /** the config file */
  path: string
}

/**
 * @param named the --context flag
 * @param opts.allowNew a named context that is not in the file yet is fine (login creates it)
 */
export function resolveSettings(io: Io, named: string | undefined, opts: { allowNew?: boolean } = {}): Settings {
  const p = configPath(io)
  const file = readConfigFile(io)
  const name = named ?? (io.env.TOLLGATE_CONTEXT || undefined) ?? file.current
  const exists = name !== undefined && name in file.contexts
  if (name !== undefined && !exists && !opts.allowNew && (named !== undefined || io.env.TOLLGATE_CONTEXT)) {
    const names = Object.keys(file.contexts)
    throw new UsageError(
      `no context "${name}" in ${p}${names.length ? ` (there: ${names.join(', ')})` : ''}`,
      `create it with tollgate login --context ${name} --api-url <URL>`,
    )
  }
  const context = (exists ? file.contexts[name!] : undefined) ?? {}
  const where = `context "${name}" in ${p}`
  const envUrl = io.env.TOLLGATE_API_URL || undefined
  const apiUrl = envUrl ?? context.api_url ?? DEFAULT_API_URL
  const apiUrlSource = envUrl
    ? 'TOLLGATE_API_URL'
    : context.api_url
      ? `"api_url" of ${where}`
      : `the default (${DEFAULT_API_URL})`
  if (!/^https?:$/.test(URL.parse(apiUrl)?.protocol ?? ''))
    throw new UsageError(`${envUrl ? 'TOLLGATE_API_URL' : `"api_url" of ${where}`} is not an http(s) URL: ${apiUrl}`)
  // the recorded deployment describes the context's own address, not one from the environment
  const deployment = envUrl ? undefined : context.deployment

  const key = (envName: string, field: 'api_key' | 'agent_key', what: string) => {
    // a key pasted or read from a file often ends with a line break; one inside is refused unprinted
    // (the fetch layer's error for a bad header value would quote the whole key)
    const fromEnv = io.env[envName]?.trim() || undefined
    const value = fromEnv ?? (context[field]?.trim() || undefined)
    const source = fromEnv ? envName : `"${field}" of ${where}`
    if (value !== undefined && !isSendableKey(value))
      throw new UsageError(
        `the ${what} in ${source} contains a space, line break or other character no ${what} has (the key is not printed)`,
      )
    if (value !== undefined)
      checkKeyDeployment(value, deployment, `the ${what} in ${source}`, `context "${name}" (${apiUrl})`)
    return { value, source }
  }
  const agent = key('TOLLGATE_AGENT_KEY', 'agent_key', 'agent key')
  const api = key('TOLLGATE_API_KEY', 'api_key', 'API key')
  return {
    contextName: name,
    context,
    exists,
    apiUrl: apiUrl.replace(/\/+$/, ''),
    apiUrlSource,
    deployment,
    apiKey: api.value,
    apiKeySource: api.source,
    agentKey: agent.value,
    agentKeySource: agent.source,
    path: p,
  }
}

/**
 * The context a command that writes the file works on: the named one (flag, TOLLGATE_CONTEXT, the
 * file's current), or `fallback` when nothing names one. No key checks: nothing is sent yet.
 */
export function chooseContext(
  io: Io,
  named: string | undefined,
  fallback?: string,
): { name: string | undefined; context: Context; exists: boolean; named: boolean } {
  const file = readConfigFile(io)
  const explicit = named ?? (io.env.TOLLGATE_CONTEXT || undefined)
  const name = explicit ?? file.current ?? fallback
  const exists = name !== undefined && name in file.contexts
  return { name, context: exists ? { ...file.contexts[name!] } : {}, exists, named: explicit !== undefined }
}
