/**
 * The `tollgate` command line: pay-per-call fetch for agents, the account (login, setup, agents,
 * keys, caps, allowlists, payments, withdrawals, publishing), the marketplace, operator commands
 * and the embedded dev chain. `bin/tollgate.js` runs it (from source via tsx, or built from
 * dist). This file only dispatches: each command is a module under commands/, and what they share
 * (contexts, output and --json, progress, the API client, exit codes) has a module of its own.
 */
import '../start/node-version.js' // first: refuses a Node release the dependencies cannot load on
import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createCommand, type Command } from './command.js'
import { UsageError } from './errors.js'
import { EXIT } from './exit-codes.js'
import { processIo, type Io } from './io.js'
import { DEFAULT_API_URL } from './settings.js'

export { EXIT } from './exit-codes.js'
export type { Io } from './io.js'

const HELP = `tollgate — pay-per-call x402 APIs from the command line

usage: tollgate <command> [options]      (and the global options below: --context NAME, --json)

getting started:
  signup                 create an account (where sign-up is open: a sandbox) and store an API key
  login                  store an API key: email and password (--password-stdin), or --api-key
  setup                  an agent, its key and, on the dev chain, test USDC: ready to pay
  config use|list|show   contexts: API addresses with their keys (sandbox and production side by side)

paying:
  fetch -X <METHOD> <url> [-H 'k: v']... [-d data | --json obj] [--upto] [--batch | --no-batch] [--inspect [--verbose]]
                         call an x402 endpoint, paying from the agent wallet
  a2a call <agent-card-url> <skill> [--input JSON]
                         call a skill of a paid A2A agent (x402 over A2A), paying from the agent wallet
  budget                 the agent's balance, cap headroom and spending so far
  payments status <id> [--agent a]
                         a payment an agent signed, with its settlement (either id)
  payments list [--agent a] [--since t] [--status s]
                         payments by your agents or to your endpoints
  payments export --format csv|ndjson
                         the whole history, for a spreadsheet or a script
  escrow [thaw|withdraw|deposit]
                         the agent's escrow accounts for vouchers (deferred payments), per seller
  channels [--agent a]   the agent's batch-settlement channels: deposited, charged, claimed, balance
  search <words>         paid endpoints by what they do: price, methods, the command that pays
  marketplace list|show  the marketplace catalogue
  mcp [--remote <url>]   an MCP server on stdio for agent hosts (Claude Desktop, Cursor): search,
                         describe and call paid endpoints and MCP tools from the agent wallet

your account (API key):
  agents list|create|show
  keys create|list|revoke          an agent's keys
  caps set|show                    spend caps, in USDC
  allowlist list|add|remove        the sellers an agent may pay
  approvals [list|approve|deny]    payments your agents' approval policies hold for you
  fund <agent> <USDC>              USDC from your funding wallet to an agent
  funding [top-up]                 the funding wallet (address, balance) and agents' top-up settings
  withdraw                         USDC out of an agent or the funding wallet
  publish                          a namespace, service and endpoints, from flags or a file
  endpoints test <ns/svc/slug>     call a published upstream once
  revenue [--since t]              per endpoint of yours: calls, revenue, settled, uncollected vouchers
  webhooks list|create|delete|test|deliveries|verify
                                   signed webhook endpoints, their delivery log; verify a received one
  logout                           revoke and forget the API key login made

operator and development:
  users create --email e --password p
                         create a user (reads the server environment)
  keys rotate-master [--dry-run]
                         re-encrypt stored secrets under a new master key (TOLLGATE_MASTER_KEY_OLD /
                         TOLLGATE_MASTER_KEY_NEW from the environment)
  devnet [--port n]      run the embedded dev chain until Ctrl-C
  archive --dir d --older-than n
                         write old ledger partitions to files and drop them (reads the server environment)

global options:
  --version              the CLI's version (tollgate --version)
  --context NAME         the context to use (else TOLLGATE_CONTEXT, else the current one)
  --json                 machine output: one JSON document on stdout (errors too, as {"error": …});
                         for fetch, whose --json is the request body, put it before the command
                         (tollgate --json fetch …): the receipt is then one JSON line on stderr

configuration (~/.config/tollgate/config.json, contexts; the environment overrides):
  TOLLGATE_API_URL       platform API (default ${DEFAULT_API_URL})
  TOLLGATE_API_KEY       user API key (sk_test_… / sk_live_…)
  TOLLGATE_AGENT_KEY     agent key (ak_test_… / ak_live_…)
  TOLLGATE_CONTEXT       the context to use

exit codes: 0 success, 1 usage or other error, 2 payment refused, 3 HTTP error (status >= 400)
Run "tollgate <command> --help" for a command's options; docs/cli.md has them all.
`

type Run = (args: string[], cmd: Command) => Promise<number>

/** Each command's module, loaded when used (the operator commands pull in the server's code). */
export const COMMANDS: Record<string, () => Promise<Run>> = {
  fetch: async () => (await import('./commands/fetch.js')).fetchCommand,
  marketplace: async () => (await import('./commands/marketplace.js')).marketplaceCommand,
  search: async () => (await import('./commands/search.js')).searchCommand,
  payments: async () => (await import('./commands/payments.js')).paymentsCommand,
  budget: async () => (await import('./commands/budget.js')).budgetCommand,
  escrow: async () => (await import('./commands/escrow.js')).escrowCommand,
  channels: async () => (await import('./commands/channels.js')).channelsCommand,
  login: async () => (await import('./commands/login.js')).loginCommand,
  signup: async () => (await import('./commands/login.js')).signupCommand,
  logout: async () => (await import('./commands/login.js')).logoutCommand,
  setup: async () => (await import('./commands/setup.js')).setupCommand,
  config: async () => (await import('./commands/config.js')).configCommand,
  agents: async () => (await import('./commands/agents.js')).agentsCommand,
  keys: async () => (await import('./commands/keys.js')).keysCommand,
  approvals: async () => (await import('./commands/approvals.js')).approvalsCommand,
  caps: async () => (await import('./commands/caps.js')).capsCommand,
  allowlist: async () => (await import('./commands/allowlist.js')).allowlistCommand,
  withdraw: async () => (await import('./commands/withdraw.js')).withdrawCommand,
  fund: async () => (await import('./commands/fund.js')).fundCommand,
  funding: async () => (await import('./commands/fund.js')).fundingCommand,
  publish: async () => (await import('./commands/publish.js')).publishCommand,
  revenue: async () => (await import('./commands/revenue.js')).revenueCommand,
  endpoints: async () => (await import('./commands/endpoints.js')).endpointsCommand,
  users: async () => (await import('./commands/users.js')).usersCommand,
  devnet: async () => (await import('./commands/devnet.js')).devnetCommand,
  mcp: async () => (await import('./commands/mcp.js')).mcpCommand,
  a2a: async () => (await import('./commands/a2a.js')).a2aCommand,
  archive: async () => (await import('./commands/archive.js')).archiveCommand,
  webhooks: async () => (await import('./commands/webhooks.js')).webhooksCommand,
}

/** Runs one command line; resolves to the exit code. */
export async function runCli(argv: string[], io: Io = processIo()): Promise<number> {
  const { json, contextFlag, rest, problem } = globalOptions(argv)
  const [name, ...args] = rest
  // fetch's stdout is the response body, mcp's the protocol: their --json errors (and fetch's receipt) go to stderr
  const stdoutTaken = name === 'fetch' || name === 'mcp' || name === 'a2a'
  const cmd = createCommand(io, {
    json: json || (name !== 'fetch' && args.includes('--json')),
    contextFlag,
    errorStream: stdoutTaken ? 'stderr' : 'stdout',
  })
  try {
    if (problem) return cmd.out.error(problem)
    if (name === undefined) {
      // a usage error like any other: the help goes to stderr, not into a redirected stdout
      io.stderr(HELP)
      return EXIT.usage
    }
    if (name === '-h' || name === '--help' || name === 'help') {
      io.stdout(HELP)
      return EXIT.ok
    }
    if (name === '--version' || name === '-V' || name === 'version') {
      const version = (await import('./version.js')).cliVersion()
      cmd.out.result({ version }, `tollgate ${version}`)
      return EXIT.ok
    }
    const load = COMMANDS[name]
    if (!load) {
      io.stderr(`unknown command "${name}"\n\n${HELP}`)
      return EXIT.usage
    }
    return await (
      await load()
    )(args, cmd)
  } catch (err) {
    return cmd.out.error(err)
  }
}

/**
 * The global options: `--json` before the command, and `--context NAME` (or `--context=NAME`)
 * anywhere before a `--`. A command's own `--json` is its business (fetch's is a request body).
 */
function globalOptions(argv: string[]): {
  json: boolean
  contextFlag: string | undefined
  rest: string[]
  problem?: Error
} {
  const rest: string[] = []
  let json = false
  let contextFlag: string | undefined
  let problem: Error | undefined
  let seenCommand = false
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--') {
      rest.push(...argv.slice(i))
      break
    }
    if (a === '--context' || a.startsWith('--context=')) {
      const value = a === '--context' ? argv[++i] : a.slice('--context='.length)
      if (!value || value.startsWith('-'))
        problem ??= new UsageError('--context needs a name (tollgate config list shows them)')
      else contextFlag = value
      continue
    }
    if (!seenCommand && a === '--json') {
      json = true
      continue
    }
    if (!a.startsWith('-')) seenCommand = true
    rest.push(a)
  }
  return { json, contextFlag, rest, problem }
}

function isMain(): boolean {
  try {
    return (
      process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))
    )
  } catch {
    return false
  }
}

if (isMain()) process.exitCode = await runCli(process.argv.slice(2))
