/**
 * `tollgate login`: stores an API key in a context. With `--api-key sk_…` it checks the key with
 * the API and stores it; with an email and password it logs in (POST /v1/session), creates an API
 * key named `cli@<hostname>` through that session, ends the session, and stores only the key.
 * `tollgate logout` revokes the key that login created and forgets it.
 */
import os from 'node:os'
import type { FetchLike } from '../../client/wrap-fetch.js'
import { createApi, namingFetch } from '../api-client.js'
import { parseOptions, type Command } from '../command.js'
import { CONTEXT_NAME, updateConfigFile, type Context, type Deployment } from '../config-file.js'
import { probeDeployment } from '../deployment-probe.js'
import { ApiError, CliError, UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { checkKeyDeployment } from '../key-deployment.js'
import { chooseContext, DEFAULT_API_URL } from '../settings.js'

export const LOGIN_HELP = `usage: tollgate login [--context NAME] [--api-url URL] [--email E] [--password P | --password-stdin] [--json]
       tollgate login [--context NAME] [--api-url URL] --api-key sk_…
       tollgate logout [--context NAME] [--json]

login   with an email and password (asked on the terminal when not given; or TOLLGATE_PASSWORD),
        creates an API key named cli@<hostname> and stores it, not the password; with --api-key,
        checks that key and stores it. The context (default: the current one, else one named
        after the API's deployment, "sandbox" or "production") records the API address and its
        deployment: a production context never stores a sandbox key, nor the reverse.
        The first context becomes the current one; switch with tollgate config use NAME.
logout  revokes the API key login created and removes it from the context

options:
  --api-url URL    the Tollgate API (default: the context's, TOLLGATE_API_URL, or ${DEFAULT_API_URL})
  --email E        the account's email
  --password P     its password (lands in the shell history: prefer the prompt, --password-stdin or
                   TOLLGATE_PASSWORD)
  --password-stdin read the password from standard input (its first line): echo "$PW" | tollgate login …
  --api-key KEY    an existing API key (sk_test_… / sk_live_…) instead of email and password
`

export const SIGNUP_HELP = `usage: tollgate signup [--context NAME] [--api-url URL] [--email E] [--password P | --password-stdin] [--json]

Creates an account where sign-up is open (a sandbox deployment, by default), then does what
tollgate login does: creates an API key named cli@<hostname> and stores it in a context, never
the password. The password is asked on the terminal when not given (or TOLLGATE_PASSWORD).
Next: tollgate setup (an agent, its key and, on the dev chain, test USDC).
`

export function loginCommand(args: string[], cmd: Command): Promise<number> {
  return enter(args, cmd, 'login')
}

export function signupCommand(args: string[], cmd: Command): Promise<number> {
  return enter(args, cmd, 'signup')
}

/** The flags of login and signup. */
interface LoginFlags {
  'api-url'?: string
  email?: string
  password?: string
  'password-stdin'?: boolean
  'api-key'?: string
}

/** Where the key goes: the API (and where its address came from), its deployment, the context. */
interface LoginTarget {
  apiUrl: string
  source: string
  f: FetchLike
  deployment: Deployment
  name: string
  chosen: ReturnType<typeof chooseContext>
}

/** The key to store, and the account it belongs to. */
interface StoredKey {
  apiKey: string
  keyInfo: { id: string | null; name: string | null; prefix: string }
  email: string
}

/** login and signup: the same steps, but signup makes the account first (POST /v1/signup). */
async function enter(args: string[], cmd: Command, mode: 'login' | 'signup'): Promise<number> {
  const { io } = cmd
  const HELP = mode === 'signup' ? SIGNUP_HELP : LOGIN_HELP
  const { values: v } = parseOptions(
    args,
    {
      'api-url': { type: 'string' },
      email: { type: 'string' },
      password: { type: 'string' },
      'password-stdin': { type: 'boolean' },
      'api-key': { type: 'string' },
    },
    HELP,
  )
  if (v.help) {
    io.stdout(HELP)
    return EXIT.ok
  }
  const chosen = chooseContext(io, cmd.contextFlag)
  const apiUrl = apiUrlOf(v, cmd, chosen)
  checkCredentialFlags(v)
  const stdinPassword = v['password-stdin'] ? await passwordFromStdin(cmd) : undefined
  const target = await targetOf(v, cmd, chosen, apiUrl)
  if (mode === 'signup' && v['api-key'] !== undefined)
    throw new UsageError('signup makes a new account from an email and a password: --api-key is for tollgate login')
  const key =
    v['api-key'] !== undefined
      ? await checkedApiKey(cmd, target, v['api-key'])
      : await keyFromPassword(cmd, target, v, stdinPassword, mode, HELP)
  // a key that login made before in this context is replaced: revoke it, so keys do not pile up
  const previousId = chosen.context.api_key_id
  const stored = storeKey(cmd, target, key)
  if (previousId && previousId !== key.keyInfo.id)
    await apiWithKey(cmd, target, key.apiKey)
      .user('DELETE', `/v1/api-keys/${previousId}`)
      .catch(() => {})
  reportLogin(cmd, mode, target, key, stored)
  return EXIT.ok
}

/** --api-url, TOLLGATE_API_URL, the context's, or the default; an http(s) URL without a trailing slash. */
function apiUrlOf(v: LoginFlags, { io }: Command, chosen: LoginTarget['chosen']): string {
  const apiUrl = (
    v['api-url'] ??
    (io.env.TOLLGATE_API_URL || undefined) ??
    chosen.context.api_url ??
    DEFAULT_API_URL
  ).replace(/\/+$/, '')
  if (!/^https?:$/.test(URL.parse(apiUrl)?.protocol ?? ''))
    throw new UsageError(`--api-url is not an http(s) URL: ${apiUrl}`)
  return apiUrl
}

function checkCredentialFlags(v: LoginFlags): void {
  if (v['api-key'] !== undefined && (v.email !== undefined || v.password !== undefined || v['password-stdin']))
    throw new UsageError('use either --api-key or --email/--password, not both')
  if (v.password !== undefined && v['password-stdin'])
    throw new UsageError('use either --password or --password-stdin, not both')
}

/** Asks the API its deployment, and names the context (default: after the deployment); refuses a context of the other deployment. */
async function targetOf(
  v: LoginFlags,
  { io }: Command,
  chosen: LoginTarget['chosen'],
  apiUrl: string,
): Promise<LoginTarget> {
  const source = v['api-url'] ? '--api-url' : io.env.TOLLGATE_API_URL ? 'TOLLGATE_API_URL' : 'the context'
  const f = namingFetch(io.fetch ?? fetch, apiUrl, source)
  const deployment = await probeDeployment(f, apiUrl)
  const name = chosen.name ?? deployment
  if (!CONTEXT_NAME.test(name))
    throw new UsageError(`a context name is 1-40 letters, digits, ".", "_" or "-", got "${name}"`)
  if (chosen.exists && chosen.context.deployment && chosen.context.deployment !== deployment) {
    throw new UsageError(
      `context "${name}" is ${chosen.context.deployment} and ${apiUrl} is ${deployment}`,
      `log in to it under another context: tollgate login --context ${deployment} --api-url ${apiUrl}`,
    )
  }
  return { apiUrl, source, f, deployment, name, chosen }
}

function apiWithKey({ io }: Command, { apiUrl, source }: LoginTarget, key: string) {
  return createApi(io, {
    apiUrl,
    apiUrlSource: source,
    apiKey: key,
    apiKeySource: '--api-key',
    agentKey: undefined,
    agentKeySource: '',
  })
}

/** --api-key: a key of this deployment (checked before it is sent) that the API knows. */
async function checkedApiKey(cmd: Command, target: LoginTarget, flag: string): Promise<StoredKey> {
  const apiKey = flag.trim()
  if (!/^sk_(test|live)_[A-Za-z0-9]+$/.test(apiKey))
    throw new UsageError(
      `--api-key: expected an API key (sk_test_… or sk_live_…)${apiKey.startsWith('ak_') ? '; that is an agent key: tollgate setup stores agent keys' : ''}`,
    )
  // refused here, unsent: the other deployment's API never sees the key
  checkKeyDeployment(apiKey, target.deployment, '--api-key', `${target.apiUrl}`)
  const who = await apiWithKey(cmd, target, apiKey).user<{ user: { email: string } }>('GET', '/v1/session')
  return { apiKey, email: who.user.email, keyInfo: { id: null, name: null, prefix: apiKey.slice(0, 12) } }
}

/** Email and password (flags, TOLLGATE_PASSWORD or the prompt): a new key made through a session. */
async function keyFromPassword(
  { io }: Command,
  { f, apiUrl }: LoginTarget,
  v: LoginFlags,
  stdinPassword: string | undefined,
  mode: 'login' | 'signup',
  HELP: string,
): Promise<StoredKey> {
  const email = v.email ?? (io.prompt ? (await io.prompt('email: ', { secret: false })).trim() : '')
  const password =
    stdinPassword ??
    v.password ??
    io.env.TOLLGATE_PASSWORD ??
    (io.prompt ? await io.prompt('password: ', { secret: true }) : undefined)
  if (!email || !password)
    throw new UsageError(
      `give --email and a password (TOLLGATE_PASSWORD, or the prompt on a terminal), or --api-key\n\n${HELP}`,
    )
  const created = await viaSession(f, apiUrl, email, password, `cli@${io.hostname ?? os.hostname()}`, mode)
  return { apiKey: created.secret, email, keyInfo: { id: created.id, name: created.name, prefix: created.prefix } }
}

/** The key into the context (the first context becomes the current one). */
function storeKey({ io }: Command, { apiUrl, deployment, name }: LoginTarget, { apiKey, keyInfo }: StoredKey) {
  let current = false
  const path = updateConfigFile(io, (file) => {
    const ctx: Context = { ...file.contexts[name], api_url: apiUrl, deployment, api_key: apiKey }
    if (keyInfo.id) ctx.api_key_id = keyInfo.id
    else delete ctx.api_key_id
    file.contexts[name] = ctx
    file.current ??= name
    current = file.current === name
  })
  return { path, current }
}

function reportLogin(
  { out }: Command,
  mode: 'login' | 'signup',
  { apiUrl, deployment, name }: LoginTarget,
  { email, keyInfo }: StoredKey,
  { path, current }: { path: string; current: boolean },
): void {
  out.result(
    {
      object: mode,
      context: name,
      current,
      api_url: apiUrl,
      deployment,
      user: { email },
      api_key: keyInfo,
      config_file: path,
    },
    [
      `${mode === 'signup' ? 'signed up' : 'logged in'} to ${apiUrl} (${deployment}) as ${email}`,
      `${keyInfo.name ? `API key ${keyInfo.name} (${keyInfo.prefix}…) created and` : `API key ${keyInfo.prefix}…`} stored in context "${name}" of ${path} (mode 0600)`,
      current
        ? 'next: tollgate setup (an agent, its key and, on the dev chain, test USDC)'
        : `context "${name}" is not the current one: tollgate config use ${name}, or --context ${name}`,
    ],
  )
}

/** The first line of standard input, without its line ending: a password piped in. */
export async function passwordFromStdin(cmd: Command): Promise<string> {
  if (!cmd.io.readStdin) throw new UsageError('--password-stdin: there is no standard input to read')
  const password = (await cmd.io.readStdin()).split(/\r?\n/)[0] ?? ''
  if (password === '')
    throw new UsageError('--password-stdin: standard input was empty; pipe the password in: echo "$PW" | tollgate …')
  return password
}

/** Email and password → a session → a new API key → the session ended. Only the key is kept. */
async function viaSession(
  f: FetchLike,
  apiUrl: string,
  email: string,
  password: string,
  keyName: string,
  mode: 'login' | 'signup' = 'login',
) {
  const route = mode === 'signup' ? '/v1/signup' : '/v1/session'
  const res = await f(`${apiUrl}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ email, password }),
  })
  const body = (await res.json().catch(() => ({}))) as Record<string, any>
  if (!res.ok) {
    const { statusCode: _s, error: _e, code, message, ...details } = body
    throw new ApiError(
      res.status,
      code ?? 'http_error',
      message ?? `HTTP ${res.status}`,
      details,
      'none',
      `POST ${route}`,
    )
  }
  const cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .find((c) => c.startsWith('tollgate_session='))
  if (!cookie) throw new CliError(`${apiUrl} logged in but set no session cookie: is it the Tollgate API?`)
  const session = { cookie, accept: 'application/json' }
  try {
    const k = await f(`${apiUrl}/v1/api-keys`, {
      method: 'POST',
      headers: { ...session, 'content-type': 'application/json' },
      body: JSON.stringify({ name: keyName }),
    })
    const key = (await k.json().catch(() => ({}))) as Record<string, any>
    if (!k.ok || typeof key.secret !== 'string')
      throw new ApiError(
        k.status,
        key.code ?? 'http_error',
        key.message ?? `HTTP ${k.status}`,
        {},
        'none',
        'POST /v1/api-keys',
      )
    return { id: key.id as string, name: key.name as string, prefix: key.prefix as string, secret: key.secret }
  } finally {
    // the session was only for making the key
    await f(`${apiUrl}/v1/session`, { method: 'DELETE', headers: session })
      .then((r) => r.body?.cancel())
      .catch(() => {})
  }
}

export async function logoutCommand(args: string[], cmd: Command): Promise<number> {
  const { values: v } = parseOptions(args, {}, LOGIN_HELP)
  if (v.help) {
    cmd.io.stdout(LOGIN_HELP)
    return EXIT.ok
  }
  const s = cmd.settings()
  if (!s.contextName || !s.exists || !s.context.api_key)
    throw new UsageError(
      `no API key stored${s.contextName ? ` in context "${s.contextName}"` : ''}: nothing to log out of`,
    )
  let revoked = false
  if (s.context.api_key_id) {
    try {
      await createApi(cmd.io, { ...s, apiKey: s.context.api_key }).user(
        'DELETE',
        `/v1/api-keys/${s.context.api_key_id}`,
      )
      revoked = true
    } catch (err) {
      // a key already revoked or deleted is as good as revoked; anything else is reported
      if (!(err instanceof ApiError && (err.status === 401 || err.status === 404))) throw err
    }
  }
  updateConfigFile(cmd.io, (file) => {
    const ctx = file.contexts[s.contextName!]
    if (ctx) {
      delete ctx.api_key
      delete ctx.api_key_id
    }
  })
  cmd.out.result(
    { object: 'logout', context: s.contextName, revoked },
    `${revoked ? 'revoked the API key and ' : ''}removed it from context "${s.contextName}"${!revoked ? ' (it was not made by tollgate login: revoke it on the dashboard if it should stop working)' : ''}`,
  )
  return EXIT.ok
}
