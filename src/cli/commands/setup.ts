/**
 * `tollgate setup`: after tollgate login, everything a paid call needs. Picks or creates an agent,
 * gives it a key (kept when the context's key still works), stores both in the context, and on the
 * dev chain funds it: test USDC from the faucet into the funding wallet, a top-up rule on the
 * agent, and a wait (with progress) until the worker's top-up has landed.
 */
import os from 'node:os'
import { formatUsdc } from '../../x402/usdc-amount.js'
import { ADDRESS, resolveAgent, type AgentView } from '../agent-ref.js'
import { parseUsdc } from '../amounts.js'
import { createApi, type Api } from '../api-client.js'
import { parseOptions, type Command } from '../command.js'
import { ApiError, CliError, UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { saveAgentKey, type AgentKey } from './keys.js'

export const SETUP_HELP = `usage: tollgate setup [--agent <name|address>] [--fund USDC] [--no-fund] [--timeout SECONDS] [--json]

After tollgate login: picks the agent (--agent, else the context's, else one named "cli",
created when missing; a name that matches none is created), gives it an agent key named
cli@<hostname> unless the context's key for it still works, and stores both in the context.
On the dev chain (npm start, where the faucet exists) it then funds the agent: test USDC from the
faucet into your funding wallet, top-ups on the agent (below --fund USDC, default 1, it is refilled
by that much), and waits until the worker has topped it up (up to --timeout, default 120 s; the
top-up check runs every 30 s). Elsewhere it prints the wallet address to send USDC to.
Then: tollgate fetch <url> pays from that agent.
`

const DEFAULT_AGENT = 'cli'
const FAUCET_DEFAULT = 100_000_000n // 100 USDC
const FAUCET_MAX = 1_000_000_000n

export async function setupCommand(args: string[], cmd: Command): Promise<number> {
  const { values: v } = parseOptions(
    args,
    {
      agent: { type: 'string' },
      fund: { type: 'string' },
      'no-fund': { type: 'boolean' },
      timeout: { type: 'string' },
    },
    SETUP_HELP,
  )
  if (v.help) {
    cmd.io.stdout(SETUP_HELP)
    return EXIT.ok
  }
  const target = BigInt(parseUsdc(v.fund ?? '1', '--fund'))
  if (target === 0n && !v['no-fund']) throw new UsageError('--fund: give an amount above 0, or --no-fund')
  const timeoutS = Number(v.timeout ?? 120)
  if (!Number.isFinite(timeoutS) || timeoutS <= 0) throw new UsageError('--timeout: expected seconds above 0')
  const s = cmd.settings()
  if (!s.contextName || !s.apiKey) throw new UsageError('no API key in the context: run tollgate login first')
  const api = cmd.api()
  const who = await api.user<{ user: { email: string } }>('GET', '/v1/session')

  // the agent
  const agent = await pickAgent(api, cmd, v.agent)
  // its key: the context's when it still opens this agent, else a new one
  let keyNote: string
  let keyPrefix: string
  const reused =
    s.context.agent_key &&
    s.context.agent?.toLowerCase() === agent.a.address.toLowerCase() &&
    (await keyWorks(cmd, s.context.agent_key, agent.a.address))
  if (reused) {
    keyPrefix = s.context.agent_key!.slice(0, 12)
    keyNote = 'kept (it still works)'
  } else {
    const k = await api.user<AgentKey & { secret: string }>('POST', `/v1/agents/${agent.a.address}/keys`, {
      body: { name: `cli@${cmd.io.hostname ?? os.hostname()}` },
    })
    saveAgentKey(cmd, k.secret, agent.a.address)
    keyPrefix = k.prefix
    keyNote = `created "${k.name}" (${k.id})`
  }

  // funding
  const wallet = await api.user<{ address: string; balance: { usdc: string } | null; faucet_available: boolean }>(
    'GET',
    '/v1/funding-wallet',
  )
  let balance = BigInt((await api.user<{ usdc: string }>('GET', `/v1/agents/${agent.a.address}/balance`)).usdc)
  let funding: Record<string, unknown> = { status: balance >= target ? 'funded' : 'unfunded' }
  if (!v['no-fund'] && balance < target) {
    if (wallet.faucet_available) {
      balance = await fundOnDevChain(cmd, api, agent.a, wallet, balance, target, timeoutS)
      funding = { status: 'funded', via: 'faucet and top-up' }
    } else {
      funding = { status: 'unfunded', send_usdc_to: agent.a.address }
      cmd.out.note(
        `the agent holds ${formatUsdc(balance)} USDC: send USDC to ${agent.a.address} (or enable top-ups from your funding wallet ${wallet.address} on the dashboard)`,
      )
    }
  }

  const tryUrl = await sampleEndpoint(api)
  const result = {
    object: 'setup',
    context: s.contextName,
    api_url: s.apiUrl,
    user: who.user.email,
    agent: { name: agent.a.name, address: agent.a.address, created: agent.created },
    agent_key: { prefix: keyPrefix, reused: Boolean(reused) },
    balance: balance.toString(),
    funding,
    try: tryUrl ? `tollgate fetch ${tryUrl}` : null,
  }
  cmd.out.result(result, [
    `context  "${s.contextName}" (${s.apiUrl}, ${who.user.email})`,
    `agent    "${agent.a.name}" ${agent.a.address}${agent.created ? ' (created)' : ''}`,
    `key      ${keyPrefix}… ${keyNote}, stored in the context`,
    `balance  ${formatUsdc(balance)} USDC`,
    ...(tryUrl ? [`try      tollgate fetch '${tryUrl}'`] : []),
  ])
  return EXIT.ok
}

async function pickAgent(api: Api, cmd: Command, ref: string | undefined): Promise<{ a: AgentView; created: boolean }> {
  const s = cmd.settings()
  const wanted = ref ?? s.context.agent
  if (wanted) {
    try {
      return { a: await resolveAgent(api, s, wanted), created: false }
    } catch (err) {
      // a name that matches none of the user's agents is the name of a new one
      const missing = err instanceof UsageError && /^no agent named/.test(err.message)
      if (!missing || ADDRESS.test(wanted) || ref === undefined) throw err
    }
  } else {
    const { data } = await api.user<{ data: AgentView[] }>('GET', '/v1/agents')
    const cli = data.find((a) => a.name === DEFAULT_AGENT)
    if (cli) return { a: cli, created: false }
  }
  return { a: await api.user<AgentView>('POST', '/v1/agents', { body: { name: ref ?? DEFAULT_AGENT } }), created: true }
}

/** The agent key opens this agent (GET /v1/agent answers with its address). */
async function keyWorks(cmd: Command, key: string, address: string): Promise<boolean> {
  try {
    const me = await createApi(cmd.io, { ...cmd.settings(), agentKey: key }).agent<{ address: string }>(
      'GET',
      '/v1/agent',
    )
    return me.address.toLowerCase() === address.toLowerCase()
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return false
    throw err
  }
}

/** Faucet → funding wallet, a top-up rule on the agent, then the wait for the worker's top-up. */
async function fundOnDevChain(
  cmd: Command,
  api: Api,
  a: AgentView,
  wallet: { address: string; balance: { usdc: string } | null },
  balance: bigint,
  target: bigint,
  timeoutS: number,
): Promise<bigint> {
  const amount = a.top_up.enabled && BigInt(a.top_up.amount) > target ? BigInt(a.top_up.amount) : target
  if (amount > FAUCET_MAX)
    throw new UsageError(`--fund: the faucet gives at most ${formatUsdc(FAUCET_MAX)} USDC at a time`)
  const walletUsdc = BigInt(wallet.balance?.usdc ?? '0')
  if (walletUsdc < amount) {
    const mint = amount > FAUCET_DEFAULT ? amount : FAUCET_DEFAULT
    await api.user('POST', '/v1/funding-wallet/faucet', { body: { amount: mint.toString() } })
    cmd.out.note(`faucet: ${formatUsdc(mint)} test USDC to your funding wallet ${wallet.address}`)
  }
  await api.user('PATCH', `/v1/agents/${a.address}`, {
    body: {
      top_up: {
        enabled: true,
        threshold: target.toString(),
        amount: amount.toString(),
        funding_source: 'funding_wallet',
      },
    },
  })
  cmd.out.note(
    `top-ups on for "${a.name}": below ${formatUsdc(target)} USDC it gets ${formatUsdc(amount)} USDC from the funding wallet`,
  )
  const progress = cmd.out.progress('waiting for the top-up (the worker checks every 30 s)')
  const deadline = Date.now() + timeoutS * 1000
  try {
    for (;;) {
      balance = BigInt((await api.user<{ usdc: string }>('GET', `/v1/agents/${a.address}/balance`)).usdc)
      progress.update(`balance ${formatUsdc(balance)} of ${formatUsdc(target)} USDC`)
      if (balance >= target) break
      const { data } = await api.user<{ data: Array<{ status: string; error: string | null; attempts: number }> }>(
        'GET',
        `/v1/agents/${a.address}/top-ups`,
        { query: { limit: 1 } },
      )
      const last = data[0]
      if (last?.status === 'failed')
        throw new CliError(`the top-up failed after ${last.attempts} attempt(s): ${last.error}`, {
          code: 'topup_failed',
          toFix:
            'check the funding wallet and its balance (GET /v1/funding-wallet, or the dashboard), then run tollgate setup again',
        })
      if (Date.now() > deadline) {
        throw new CliError(`the agent was not topped up within ${timeoutS} s (balance ${formatUsdc(balance)} USDC)`, {
          code: 'topup_timeout',
          toFix: `is the worker role running (npm start runs it)? tollgate agents show ${a.address} shows the balance; tollgate setup --timeout 300 waits longer`,
        })
      }
      await new Promise((r) => setTimeout(r, 1000))
    }
  } finally {
    progress.done()
  }
  cmd.out.note(`topped up: ${formatUsdc(balance)} USDC`)
  return balance
}

/** A hosted endpoint to try, from the marketplace's platform entries (none when there is none). */
async function sampleEndpoint(api: Api): Promise<string | undefined> {
  try {
    const entries = await api.anonymous<Array<{ endpoints?: Array<{ url: string }> }>>(
      'GET',
      '/api/v1/agents/marketplace',
      { query: { source: 'platform' } },
    )
    const urls = entries.flatMap((e) => e.endpoints ?? []).map((e) => e.url)
    return urls.find((u) => u.endsWith('/uuid-generator')) ?? urls[0]
  } catch {
    return undefined
  }
}
