/**
 * The `tollgate` command line: pay-per-call fetch for agents, the marketplace, payment status,
 * user creation and the embedded dev chain. `bin/tollgate.js` runs it (from source via tsx, or
 * built from dist). Exit codes: 0 success, 1 usage or other error, 2 payment refused,
 * 3 HTTP error (status >= 400).
 */
import '../start/node-version.js' // first: refuses a Node release the dependencies cannot load on
import { readFileSync, realpathSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { offeredChallenges, type OfferedChallenge } from '../client/challenge.js'
import { PaidCallFailedError, PaymentRefusedError } from '../client/errors.js'
import { formatUsdc } from '../x402/usdc-amount.js'
import { isSendableKey, wrapFetch, type FetchLike } from '../client/wrap-fetch.js'
import { createMarketplaceClient, MarketplaceError, MarketplaceNotFoundError } from '../marketplace-client.js'
import { isFilterNetwork } from '../services/marketplace/types.js'

export const EXIT = { ok: 0, usage: 1, error: 1, refused: 2, http: 3 } as const

export interface Io {
  stdout(chunk: string | Uint8Array): void
  stderr(line: string): void
  env: Record<string, string | undefined>
  fetch?: FetchLike
  /** where ~/.config/tollgate/config.json is looked up (default os.homedir()) */
  home?: string
  /** resolves when the user asks to stop (devnet); default SIGINT/SIGTERM */
  untilStopped?: () => Promise<void>
  /** stdout and stderr are the same terminal: a body is ended with a newline so the receipt starts on its own line */
  sharedTerminal?: boolean
}

const DEFAULT_API_URL = 'http://localhost:4020'

const HELP = `tollgate — pay-per-call x402 APIs from the command line

usage: tollgate <command> [options]

commands:
  fetch -X <METHOD> <url> [-H 'k: v']... [-d data | --json obj] [--inspect]
                         call an x402 endpoint, paying from the agent wallet
  marketplace list [--source s] [--category c] [--search q] [--network n]
  marketplace show <id> [--network n]
                         the marketplace catalogue
  payments status <id>   a payment signed for this agent, with its settlement
  budget [--json]        the agent's balance, cap headroom and spending so far
  users create --email e --password p
                         create a user (operator; reads the server environment)
  keys rotate-master [--dry-run]
                         re-encrypt stored secrets under a new master key (operator;
                         TOLLGATE_MASTER_KEY_OLD / TOLLGATE_MASTER_KEY_NEW from the environment)
  devnet [--port n]      run the embedded dev chain until Ctrl-C

configuration:
  TOLLGATE_AGENT_KEY     agent key (ak_test_… / ak_live_…), or "agent_key" in ~/.config/tollgate/config.json
  TOLLGATE_API_URL       platform API (default ${DEFAULT_API_URL}), or "api_url" in the config file

exit codes: 0 success, 1 usage or other error, 2 payment refused, 3 HTTP error (status >= 400)
Run "tollgate <command> --help" for a command's options.
`

const FETCH_HELP = `usage: tollgate fetch [-X METHOD] <url> [options]

Calls <url>; on a 402 the platform signs the payment from the agent wallet (caps and allowlist
enforced) and the call is retried once with the payment header.

options:
  -X, --request METHOD   HTTP method (default GET, or POST with a body)
  -H, --header 'k: v'    request header (repeatable)
  -d, --data DATA        request body as given, sent as text/plain unless -H sets content-type
      --json OBJ         JSON request body (validated; sets content-type: application/json)
      --inspect          print the 402 challenge (price in USDC, network, payTo, asset, timeout,
                         input schema) and the agent's cap headroom; pays nothing
  -h, --help             this help

output: the response body on stdout; the payment receipt (amount, payTo, payer, payment id,
transaction when known) on stderr.
exit codes: 0 success, 1 usage or other error, 2 payment refused, 3 HTTP error (status >= 400)
`

const MARKETPLACE_HELP = `usage: tollgate marketplace list [--source catalog|bazaar|platform] [--category c] [--search q] [--network base|base-sepolia] [--json]
       tollgate marketplace show <id> [--network base|base-sepolia]

--network overrides the API's default (the network its deployment settles on).
`
const NO_AGENT_KEY = 'no agent key: set TOLLGATE_AGENT_KEY or "agent_key" in ~/.config/tollgate/config.json'
const PAYMENTS_HELP = 'usage: tollgate payments status <payment-id>\n'
const BUDGET_HELP = "usage: tollgate budget [--json]\n\nThe agent's budget: wallet balance (and what is signed but not settled), cap headroom, what was\nspent today and this month (UTC), and the sellers it may pay.\n"
const DEVNET_HELP = 'usage: tollgate devnet [--port 8545]\n\nStarts anvil with test USDC and Multicall3, prints the RPC URL and accounts, runs until Ctrl-C.\n'

/** Runs one command line; resolves to the exit code. */
export async function runCli(argv: string[], io: Io = processIo()): Promise<number> {
  const [cmd, ...rest] = argv
  try {
    switch (cmd) {
      case 'fetch':
        return await fetchCmd(rest, io)
      case 'marketplace':
        return await marketplaceCmd(rest, io)
      case 'payments':
        return await paymentsCmd(rest, io)
      case 'budget':
        return await budgetCmd(rest, io)
      case 'users': {
        if (rest.includes('--help') || rest.includes('-h')) return help(io, 'usage: tollgate users create --email <email> [--password <password> | env TOLLGATE_USER_PASSWORD]\n')
        const { createUserCli } = await import('./users.js')
        const code = await createUserCli(rest, { out: (l) => io.stdout(l + '\n'), err: (l) => io.stderr(l + '\n'), env: io.env })
        return code === 2 ? EXIT.usage : code
      }
      case 'keys': {
        const { keysCli } = await import('./keys.js')
        const code = await keysCli(rest, { out: (l) => io.stdout(l + '\n'), err: (l) => io.stderr(l + '\n'), env: io.env })
        return code === 2 ? EXIT.usage : code
      }
      case 'devnet':
        return await devnetCmd(rest, io)
      case undefined:
        // a usage error like any other: the help goes to stderr, not into a redirected stdout
        io.stderr(HELP)
        return EXIT.usage
      case '-h':
      case '--help':
      case 'help':
        io.stdout(HELP)
        return EXIT.ok
      default:
        io.stderr(`unknown command "${cmd}"\n\n${HELP}`)
        return EXIT.usage
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`${redactKeys(err.message)}\n`)
      return EXIT.usage
    }
    io.stderr(`error: ${redactKeys((err as Error).message)}\n`)
    return EXIT.usage
  }
}

/** An error message with any agent key in it cut to its prefix: messages may quote what they refused. */
function redactKeys(message: string): string {
  return message.replace(/\b(ak_(?:test|live)_)[A-Za-z0-9]+/g, '$1…')
}

class UsageError extends Error {}

/** A host that did not answer (refused, not found, timed out): which one, and why. */
class UnreachableError extends Error {}

/**
 * `f` with undici's bare "fetch failed" replaced by the address that did not answer and the
 * cause's code; the platform API is named as such, with where its address comes from.
 */
function namingFetch(f: FetchLike, apiUrl: string): FetchLike {
  return async (input, init) => {
    try {
      return await f(input, init)
    } catch (err) {
      const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause
      if (!(err instanceof TypeError) || err.message !== 'fetch failed' || cause === undefined) throw err
      const url = new URL(input instanceof Request ? input.url : input)
      const why = typeof cause.code === 'string' ? cause.code : String(cause.message)
      if (url.href.startsWith(`${apiUrl}/`)) {
        throw new UnreachableError(`cannot reach the Tollgate API at ${apiUrl} (${why}): is it running? Set TOLLGATE_API_URL or "api_url" in ~/.config/tollgate/config.json`)
      }
      throw new UnreachableError(`cannot reach ${url.origin} (${why})`)
    }
  }
}

function help(io: Io, text: string): number {
  io.stdout(text)
  return EXIT.ok
}

function settings(io: Io): { apiUrl: string; agentKey: string | undefined; keySource: string } {
  let file: { agent_key?: unknown; api_url?: unknown } = {}
  const p = path.join(io.home ?? os.homedir(), '.config', 'tollgate', 'config.json')
  try {
    file = JSON.parse(readFileSync(p, 'utf8'))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new UsageError(`cannot read ${p}: ${(err as Error).message}`)
  }
  const apiUrl = io.env.TOLLGATE_API_URL || (typeof file.api_url === 'string' ? file.api_url : undefined) || DEFAULT_API_URL
  // a key pasted or read from a file often ends with a line break; one inside is refused unprinted
  // (the fetch layer's error for a bad header value would quote the whole key)
  const agentKey = (io.env.TOLLGATE_AGENT_KEY || (typeof file.agent_key === 'string' ? file.agent_key : undefined))?.trim() || undefined
  if (!/^https?:$/.test(URL.parse(apiUrl)?.protocol ?? '')) throw new UsageError(`${io.env.TOLLGATE_API_URL ? 'TOLLGATE_API_URL' : `"api_url" in ${p}`} is not an http(s) URL: ${apiUrl}`)
  const keySource = io.env.TOLLGATE_AGENT_KEY ? 'TOLLGATE_AGENT_KEY' : `"agent_key" in ${p}`
  if (agentKey !== undefined && !isSendableKey(agentKey)) throw new UsageError(`the agent key in ${keySource} contains a space, line break or other character no agent key has (the key is not printed)`)
  return { apiUrl: apiUrl.replace(/\/+$/, ''), agentKey, keySource }
}

/** What the user can do about a platform refusal, by its code; undefined when nothing general applies. */
function nextStep(code: string, keySource: string, details: Record<string, unknown> = {}): string | undefined {
  switch (code) {
    case 'invalid_api_key':
      return `check the agent key in ${keySource} (a revoked key stays refused; create a new one on the agent's page)`
    case 'wrong_deployment_key':
      return `the key in ${keySource} is for the other deployment: ak_test_… keys pay through a sandbox API, ak_live_… keys through production (TOLLGATE_API_URL)`
    case 'spend_cap_exceeded':
      return `raise the agent's ${typeof details.cap === 'string' ? `${details.cap} ` : ''}spend cap (its dashboard page, or PUT /v1/agents/{address}/spend-caps)${details.cap === 'daily' ? ' or wait for the UTC day to turn' : details.cap === 'monthly' ? ' or wait for the UTC month to turn' : ''}`
    case 'insufficient_balance':
      return "fund the agent's wallet (tollgate budget shows its address and what is available)"
    case 'seller_not_allowed':
      return "add the seller to the agent's allowlist (its dashboard page, or POST /v1/agents/{address}/allowlist)"
    default:
      return undefined
  }
}

function parse<R>(run: () => R, usage: string): R {
  try {
    return run()
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n\n${usage}`)
  }
}

async function fetchCmd(args: string[], io: Io): Promise<number> {
  const { values: v, positionals } = parse(
    () => parseArgs({ args, allowPositionals: true, strict: true, options: {
      request: { type: 'string', short: 'X' },
      header: { type: 'string', short: 'H', multiple: true },
      data: { type: 'string', short: 'd' },
      json: { type: 'string' },
      inspect: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    } }),
    FETCH_HELP,
  )
  if (v.help) return help(io, FETCH_HELP)
  if (positionals.length !== 1) throw new UsageError(`expected one URL\n\n${FETCH_HELP}`)
  const url = positionals[0]!
  try {
    const u = new URL(url)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error()
  } catch {
    throw new UsageError(`not an http(s) URL: ${url}`)
  }
  if (v.data !== undefined && v.json !== undefined) throw new UsageError('use either -d/--data or --json, not both')
  const headers = new Headers()
  for (const h of v.header ?? []) {
    const i = h.indexOf(':')
    if (i <= 0) throw new UsageError(`a header is "name: value", got "${h}"`)
    headers.append(h.slice(0, i).trim(), h.slice(i + 1).trim())
  }
  let body: string | undefined = v.data
  if (v.json !== undefined) {
    try {
      body = JSON.stringify(JSON.parse(v.json))
    } catch {
      throw new UsageError('--json is not valid JSON')
    }
    if (!headers.has('content-type')) headers.set('content-type', 'application/json')
  }
  const method = (v.request ?? (body !== undefined ? 'POST' : 'GET')).toUpperCase()
  if (!/^[A-Z]{1,10}$/.test(method)) throw new UsageError(`not an HTTP method: ${method}`)
  const init: RequestInit = { method, headers, body }
  const { apiUrl, agentKey, keySource } = settings(io)
  const f = namingFetch(io.fetch ?? fetch, apiUrl)
  if (v.inspect) return inspect(url, init, f, io, apiUrl, agentKey)
  if (!agentKey) throw new UsageError(NO_AGENT_KEY)
  let res
  try {
    res = await wrapFetch(f, { baseUrl: apiUrl, agentKey })(url, init)
  } catch (err) {
    if (err instanceof PaymentRefusedError && err.status !== undefined && err.status >= 500 && err.response === undefined) {
      // the platform failed to sign; nothing was refused, so not exit 2
      io.stderr(`the platform could not make the payment (${err.code}, HTTP ${err.status}): ${err.message}\n`)
      return EXIT.error
    }
    if (err instanceof PaidCallFailedError) {
      const p = err.payment
      const why = err.cause instanceof Error ? err.cause.message : String(err.cause)
      io.stderr(
        `error: ${why}, after a payment of ${formatUsdc(p.amount)} USDC to ${p.payTo} was signed\n` +
          `  payment ${p.agentPaymentId ?? '-'}: the seller may have received it and may still settle it; see tollgate payments status ${p.agentPaymentId ?? '<id>'}\n`,
      )
      return EXIT.error
    }
    if (err instanceof PaymentRefusedError) {
      const { headroom: _h, ...details } = err.details
      io.stderr(`payment refused (${err.code}): ${err.message}\n`)
      if (Object.keys(details).length) io.stderr(`  ${JSON.stringify(details)}\n`)
      // a 404 or a non-JSON 4xx from the signing route: the API address points at something else
      const wrongApi = err.response === undefined && (err.code === 'not_found' || err.code === 'platform_error')
      const step = wrongApi ? `check that ${apiUrl} is the Tollgate API (TOLLGATE_API_URL or "api_url" in the config file): it has no agent payment route` : nextStep(err.code, keySource, err.details)
      if (step) io.stderr(`  to fix: ${step}\n`)
      if (err.response) io.stdout(new Uint8Array(await err.response.arrayBuffer()))
      return EXIT.refused
    }
    throw err
  }
  const bytes = new Uint8Array(await res.arrayBuffer())
  io.stdout(bytes)
  if (io.sharedTerminal && bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a) io.stdout('\n')
  const p = res.payment
  if (p?.success) {
    io.stderr(
      `paid ${formatUsdc(p.amount)} USDC to ${p.payTo} from ${p.payer}\n` +
        `  payment ${p.agentPaymentId ?? '-'}${p.paymentId ? ` (seller payment ${p.paymentId})` : ''}\n` +
        `  transaction ${p.transaction || 'pending (settles asynchronously; see tollgate payments status)'} on ${p.network}\n`,
    )
  } else if (p) {
    // x402 sellers settle only calls that succeed; this one failed and sent no receipt
    io.stderr(
      `not charged: the call failed, so the signed payment of ${formatUsdc(p.amount)} USDC to ${p.payTo} is not settled\n` +
        `  payment ${p.agentPaymentId ?? '-'} (reported to the platform as failed; see tollgate payments status)\n`,
    )
  }
  if (res.status >= 400) {
    io.stderr(`HTTP ${res.status} ${res.statusText}\n`)
    return EXIT.http
  }
  return EXIT.ok
}

async function inspect(url: string, init: RequestInit, f: FetchLike, io: Io, apiUrl: string, agentKey: string | undefined): Promise<number> {
  const res = await f(url, init)
  if (res.status !== 402) {
    io.stderr(`no payment required: HTTP ${res.status}\n`)
    io.stdout(new Uint8Array(await res.arrayBuffer()))
    return res.status >= 400 ? EXIT.http : EXIT.ok
  }
  const header = res.headers.get('payment-required')
  const text = await res.text()
  let v1: unknown
  try {
    v1 = JSON.parse(text)
  } catch {
    v1 = undefined
  }
  // v1 first, as the wrapper pays it (X-PAYMENT); v2 alone only from v2-only servers
  const offered = offeredChallenges(header, v1)
  const parsed = offered.map((o) => o.parsed)
  if (parsed.length === 0) {
    io.stderr('the 402 carries no readable x402 challenge\n')
    return EXIT.refused
  }
  const ch = parsed[0]!
  const out: string[] = [`402 Payment Required: ${init.method} ${url}`, `x402 version ${ch.version}${parsed.length > 1 ? ` (also offered as v${parsed[1]!.version})` : ''}`]
  ch.accepts.forEach((r, i) => {
    const schema = r.inputSchema ?? parsed.slice(1).flatMap((c) => c.accepts).find((o) => o.inputSchema !== undefined)?.inputSchema
    out.push(
      `requirement ${i + 1}:`,
      `  price    ${formatUsdc(r.amount.toString())} USDC (${r.amount} atomic units)`,
      `  scheme   ${r.scheme}`,
      `  network  ${r.network}${r.chainId ? ` (chain ${r.chainId})` : ''}`,
      `  payTo    ${r.payTo}`,
      `  asset    ${r.asset}${r.extra ? ` (${r.extra.name} v${r.extra.version})` : ''}`,
      `  timeout  ${r.maxTimeoutSeconds} s`,
    )
    if (r.description) out.push(`  about    ${r.description}`)
    if (schema !== undefined) out.push(`  input    ${JSON.stringify(schema, null, 2).replace(/\n/g, '\n           ')}`)
  })
  if (!agentKey) out.push('cap headroom: unknown (no agent key; set TOLLGATE_AGENT_KEY)')
  else {
    try {
      out.push(...(await dryRun(url, init.method!, offered, f, apiUrl, agentKey)))
    } catch (err) {
      // the challenge is still worth showing without the platform's side
      if (!(err instanceof UnreachableError)) throw err
      out.push(`cap headroom: unavailable (${err.message})`)
    }
  }
  out.push('nothing was paid (--inspect)')
  io.stdout(out.join('\n') + '\n')
  return EXIT.ok
}

/** What paying would do (the platform's dry run), as `--inspect` prints it. */
async function dryRun(url: string, method: string, offered: OfferedChallenge[], f: FetchLike, apiUrl: string, agentKey: string): Promise<string[]> {
  // the challenge the paying call would use: the next one only when the platform can pay nothing in this one
  let r: Response
  let b: Record<string, any>
  for (let i = 0; ; i++) {
    r = await f(`${apiUrl}/v1/agent/payments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agentKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url, method, challenge: offered[i]!.raw, dry_run: true }),
    })
    b = (await r.json().catch(() => ({}))) as Record<string, any>
    const code = r.ok ? b.refusal?.code : b.code
    if (i + 1 >= offered.length || (code !== 'unsupported_requirements' && code !== 'invalid_parameter')) break
  }
  if (!r.ok) return [`cap headroom: unavailable (${b.code ?? r.status}: ${b.message ?? ''})`]
  return [
    b.would_pay ? `would pay ${formatUsdc(b.would_pay.amount)} USDC to ${b.would_pay.pay_to} on ${b.would_pay.network}` : `would not pay: ${b.refusal?.code}: ${b.refusal?.message}`,
    `cap headroom${b.would_pay ? ' after this payment' : ''}:`,
    ...headroomLines(b as Budget),
    ...(b.balance !== null && b.balance !== undefined ? [`wallet balance ${formatUsdc(b.balance)} USDC`] : []),
  ]
}

async function marketplaceCmd(args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args
  const { values: v, positionals } = parse(
    () => parseArgs({ args: rest, allowPositionals: true, strict: true, options: { source: { type: 'string' }, category: { type: 'string' }, search: { type: 'string' }, network: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } }),
    MARKETPLACE_HELP,
  )
  if (v.help || sub === '--help' || sub === '-h') return help(io, MARKETPLACE_HELP)
  if (v.network !== undefined && !isFilterNetwork(v.network)) throw new UsageError(`--network is base or base-sepolia, got "${v.network}"\n\n${MARKETPLACE_HELP}`)
  // the CLI's API address (TOLLGATE_API_URL, the config file, or local); the library itself defaults to production
  const { apiUrl } = settings(io)
  const market = createMarketplaceClient({ baseUrl: apiUrl, fetch: namingFetch(io.fetch ?? fetch, apiUrl) as typeof fetch })
  try {
    if (sub === 'list' && positionals.length === 0) {
      const filters = Object.fromEntries(Object.entries({ source: v.source, category: v.category, search: v.search, network: v.network }).filter(([, x]) => x !== undefined))
      const agents = await market.listAgents(filters as never)
      if (v.json) io.stdout(JSON.stringify(agents, null, 2) + '\n')
      else {
        for (const a of agents as Array<Record<string, any>>) {
          const eps = Array.isArray(a.endpoints) ? a.endpoints : []
          io.stdout(`${a.id}  ${a.name}  [${a.category}]  ${eps.length} endpoint${eps.length === 1 ? '' : 's'}\n`)
        }
        io.stderr(`${agents.length} entr${agents.length === 1 ? 'y' : 'ies'}\n`)
      }
      return EXIT.ok
    }
    if (sub === 'show' && positionals.length === 1) {
      io.stdout(JSON.stringify(await market.getAgent(positionals[0]!, { network: v.network }), null, 2) + '\n')
      return EXIT.ok
    }
  } catch (err) {
    if (err instanceof MarketplaceNotFoundError || err instanceof MarketplaceError) {
      io.stderr(`${err.message}\n`)
      return EXIT.http
    }
    throw err
  }
  throw new UsageError(MARKETPLACE_HELP)
}

async function paymentsCmd(args: string[], io: Io): Promise<number> {
  const [sub, id, ...extra] = args
  if (sub === '--help' || sub === '-h' || id === '--help') return help(io, PAYMENTS_HELP)
  if (sub !== 'status' || !id || extra.length) throw new UsageError(PAYMENTS_HELP)
  const r = await agentGet(io, `/v1/agent/payments/${encodeURIComponent(id)}`)
  if ('exit' in r) return r.exit
  io.stdout(JSON.stringify(r.body, null, 2) + '\n')
  return EXIT.ok
}

/** GETs an agent-scoped platform route with the agent key: the parsed answer, or (printed) an HTTP error's exit code. */
async function agentGet(io: Io, path: string): Promise<{ body: any } | { exit: number }> {
  const { apiUrl, agentKey, keySource } = settings(io)
  if (!agentKey) throw new UsageError(NO_AGENT_KEY)
  const res = await namingFetch(io.fetch ?? fetch, apiUrl)(`${apiUrl}${path}`, { headers: { authorization: `Bearer ${agentKey}` } })
  const text = await res.text()
  if (!res.ok) {
    io.stderr(`HTTP ${res.status}: ${text}\n`)
    let code: unknown
    try {
      code = JSON.parse(text).code
    } catch {
      code = undefined
    }
    const step = typeof code === 'string' ? nextStep(code, keySource) : undefined
    if (step) io.stderr(`  to fix: ${step}\n`)
    return { exit: EXIT.http }
  }
  return { body: JSON.parse(text) }
}

type Budget = { headroom: Record<'per_transaction' | 'daily' | 'monthly', string | null>; spent: Record<'daily' | 'monthly', string> }

/** The cap headroom and what was spent, as `fetch --inspect` and `budget` print them. */
function headroomLines(b: Budget): string[] {
  const cap = (x: string | null) => (x === null ? 'no cap' : `${formatUsdc(x)} USDC`)
  return [
    `  per transaction  ${cap(b.headroom.per_transaction)}`,
    `  daily (UTC)      ${cap(b.headroom.daily)}   (spent today ${formatUsdc(b.spent.daily)} USDC)`,
    `  monthly (UTC)    ${cap(b.headroom.monthly)}   (spent this month ${formatUsdc(b.spent.monthly)} USDC)`,
  ]
}

async function budgetCmd(args: string[], io: Io): Promise<number> {
  const { values: v } = parse(() => parseArgs({ args, strict: true, options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } }), BUDGET_HELP)
  if (v.help) return help(io, BUDGET_HELP)
  const r = await agentGet(io, '/v1/agent')
  if ('exit' in r) return r.exit
  const b = r.body as Budget & { address: string; balance: string | null; unsettled: string; available: string | null; balance_error: string | null; allowlist: Array<{ kind: string; value: string }> }
  if (v.json) {
    io.stdout(JSON.stringify(b, null, 2) + '\n')
    return EXIT.ok
  }
  io.stdout(
    [
      `agent    ${b.address}`,
      b.balance === null ? `balance  unavailable (${b.balance_error})` : `balance  ${formatUsdc(b.balance)} USDC, of which ${formatUsdc(b.unsettled)} signed and not settled yet: ${formatUsdc(b.available!)} USDC available`,
      'cap headroom:',
      ...headroomLines(b),
      `sellers  ${b.allowlist.length ? b.allowlist.map((e) => `${e.kind} ${e.value}`).join(', ') : 'any (no allowlist)'}`,
    ].join('\n') + '\n',
  )
  return EXIT.ok
}

async function devnetCmd(args: string[], io: Io): Promise<number> {
  const { values: v } = parse(() => parseArgs({ args, strict: true, options: { port: { type: 'string' }, help: { type: 'boolean', short: 'h' } } }), DEVNET_HELP)
  if (v.help) return help(io, DEVNET_HELP)
  const port = Number(v.port ?? 8545)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be 0..65535\n\n${DEVNET_HELP}`)
  const { startDevnet } = await import('../chain/devnet.js')
  const devnet = await startDevnet({ port })
  const a = devnet.accounts
  io.stdout(
    [
      `RPC URL   ${devnet.rpcUrl}`,
      `chain id  ${devnet.chainId}`,
      `USDC      ${devnet.usdcAddress}`,
      `Multicall3 ${devnet.multicall3Address}`,
      'accounts (anvil dev keys: public, never use them elsewhere):',
      ...Object.entries({ relayer: a.relayer, demoPayer: a.demoPayer, receiver: a.receiver, faucet: a.faucet }).map(([k, x]) => `  ${k.padEnd(10)} ${x.address}  ${x.privateKey}`),
      'Ctrl-C to stop',
    ].join('\n') + '\n',
  )
  await (io.untilStopped ?? waitForSignal)()
  await devnet.stop()
  return EXIT.ok
}

function waitForSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve())
    process.once('SIGTERM', () => resolve())
  })
}

function processIo(): Io {
  return { stdout: closable(process.stdout), stderr: closable(process.stderr), env: process.env, sharedTerminal: Boolean(process.stdout.isTTY && process.stderr.isTTY) }
}

/**
 * Writes to `stream` until its reader goes away (`| head`): the rest is dropped instead of dying
 * on EPIPE with a stack trace, so the command finishes (and the receipt still reaches stderr).
 */
function closable(stream: NodeJS.WriteStream): (chunk: string | Uint8Array) => void {
  let closed = false
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err
    closed = true
  })
  return (chunk) => {
    if (!closed) stream.write(chunk)
  }
}

function isMain(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))
  } catch {
    return false
  }
}

if (isMain()) process.exitCode = await runCli(process.argv.slice(2))
