/**
 * `tollgate a2a call <agent-card-url> <skill> [--input JSON]`: a `message/send` to a skill of a
 * paid A2A agent (x402 over A2A); its challenge is signed by the platform from the agent wallet
 * (caps and allowlist enforced) and the payment goes back on the same task. The answer's parts go
 * to stdout (JSON as JSON, text as text), the receipt to stderr (one JSON line with --json).
 */
import { callPaidSkill, a2aClient } from '../../client/pay-a2a-skill.js'
import { platformPayer } from '../../client/wrap-fetch.js'
import { formatUsdc } from '../../x402/usdc-amount.js'
import { namingFetch, NO_AGENT_KEY } from '../api-client.js'
import { parseOptions, type Command } from '../command.js'
import { UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { paymentError, receiptJson } from './fetch.js'

export const A2A_HELP = `usage: tollgate a2a call <agent-card-url> <skill> [--input JSON] [--upto] [--no-batch]

Sends a message to <skill> of the A2A agent whose Agent Card is at <agent-card-url> (a Tollgate
service's is <proxy>/<namespace>/<service>/a2a/.well-known/agent-card.json). When the agent asks
for a payment (x402 over A2A: a task in input-required), the platform signs it from the agent
wallet (caps and allowlist enforced) and sends it on the same task.

options:
  --input JSON           the skill's input, a JSON object (sent as a data part)
  --upto                 pay a usage-based price (x402 upto) where the agent offers one
  --no-batch             pay exact where this platform's agent also offers batch-settlement (by
                         default paid through a channel: one deposit, then a voucher per call)
  -h, --help             this help

output: the answer on stdout (a data part as JSON, text as text); the receipt on stderr (one JSON
line with the global --json: tollgate --json a2a call …).
exit codes: 0 success, 1 usage or other error, 2 payment refused, 3 the task failed
`

export async function a2aCommand(args: string[], cmd: Command): Promise<number> {
  const { io, out } = cmd
  const { values: v, positionals } = parseOptions(
    args,
    { input: { type: 'string' }, upto: { type: 'boolean' }, 'no-batch': { type: 'boolean' } },
    A2A_HELP,
    { positionals: true },
  )
  if (v.help) {
    io.stdout(A2A_HELP)
    return EXIT.ok
  }
  const [sub, cardUrl, skill, ...extra] = positionals
  if (sub !== 'call' || !cardUrl || !skill || extra.length) throw new UsageError(A2A_HELP)
  const u = URL.parse(cardUrl)
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:'))
    throw new UsageError(`not an http(s) Agent Card URL: ${cardUrl}`)
  let input: Record<string, unknown> = {}
  if (v.input !== undefined) {
    let parsed: unknown
    try {
      parsed = JSON.parse(v.input)
    } catch {
      throw new UsageError('--input is not valid JSON (expected an object, e.g. --input \'{"text":"abc"}\')')
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new UsageError('--input must be a JSON object, e.g. --input \'{"text":"abc"}\'')
    input = parsed as Record<string, unknown>
  }
  const s = cmd.settings()
  if (!s.agentKey) throw new UsageError(NO_AGENT_KEY)
  const f = namingFetch(io.fetch ?? fetch, s.apiUrl, s.apiUrlSource)
  let r
  try {
    const client = await a2aClient(cardUrl, f)
    const payer = platformPayer(f, {
      baseUrl: s.apiUrl,
      agentKey: s.agentKey,
      ...(v.upto ? { upto: true } : {}),
      ...(v['no-batch'] ? { batchSettlement: false } : {}),
    })
    r = await callPaidSkill(client, payer, skill, input)
  } catch (err) {
    throw await paymentError(err, cmd)
  }
  for (const p of r.parts)
    io.stdout(
      p.kind === 'data' ? `${JSON.stringify(p.data)}\n` : p.kind === 'text' ? `${p.text}\n` : `${JSON.stringify(p)}\n`,
    )
  const pay = r.payment
  if (out.json)
    io.stderr(JSON.stringify({ ...receiptJson(r.state === 'completed' ? 200 : 502, pay), state: r.state }) + '\n')
  else if (pay?.success)
    io.stderr(
      `paid ${formatUsdc(pay.amount)} USDC to ${pay.payTo} from ${pay.payer} (${pay.scheme})\n` +
        `  payment ${pay.agentPaymentId ?? '-'}\n` +
        `  transaction ${pay.transaction ?? `pending (tollgate payments status ${pay.agentPaymentId ?? '<id>'})`} on ${pay.network}\n`,
    )
  else if (pay)
    io.stderr(
      `not charged: the task ${r.state}, so the signed payment of ${formatUsdc(pay.amount)} USDC is not settled\n`,
    )
  if (r.state !== 'completed') {
    if (!out.json) io.stderr(`task ${r.state}${r.text ? `: ${r.text}` : ''}\n`)
    return EXIT.http
  }
  return EXIT.ok
}
