/**
 * `tollgate fetch`: calls a URL; on a 402 the platform signs the payment from the agent wallet
 * (caps and allowlist enforced) and the call is retried once with the payment header. The body
 * goes to stdout byte for byte, the receipt to stderr (one JSON line with the global --json).
 */
import { PaidCallFailedError, PaymentRefusedError } from '../../client/errors.js'
import { wrapFetch, type FetchLike, type PaidResponse, type PaymentInfo } from '../../client/wrap-fetch.js'
import { formatUsdc } from '../../x402/usdc-amount.js'
import { namingFetch, NO_AGENT_KEY } from '../api-client.js'
import { parseOptions, type Command } from '../command.js'
import { CliError, UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { refusalText, WORDED } from '../refusal-text.js'
import { nextStep } from '../next-step.js'
import { inspect } from './inspect.js'
import { startProgress, type Progress } from '../progress.js'

export const FETCH_HELP = `usage: tollgate [--json] fetch [-X METHOD] <url> [options]

Calls <url>; on a 402 the platform signs the payment from the agent wallet (caps and allowlist
enforced) and the call is retried once with the payment header. Where the seller declares the x402
payment-identifier extension (Tollgate's proxy does), the payment carries a new id, and an answer
lost on the way (connection reset) is asked for once more with the same payment: not charged twice.

options:
  -X, --request METHOD   HTTP method (default GET, or POST with a body)
  -H, --header 'k: v'    request header (repeatable)
  -d, --data DATA        request body as given, sent as text/plain unless -H sets content-type
      --json OBJ         JSON request body (validated; sets content-type: application/json), as
                         curl's --json: for a JSON receipt put --json before the command
      --upto             pay a usage-based price (x402 upto) where the seller offers one: the
                         maximum is reserved against the caps, the seller charges what was used;
                         an endpoint without upto is paid exact as usual
      --no-batch         do not pay through a batch-settlement channel: by default an endpoint of
                         this platform that offers one beside exact is paid through it (a deposit
                         from the agent wallet on the first call, at most the owner's channel
                         deposit bound spend_caps.channel_deposit, default 100 x the price, then one
                         signed cumulative voucher per call; the caps count each call's price;
                         tollgate channels lists them), and exact where that deposit cannot be
                         made; a seller elsewhere is never paid through one
      --batch            insist on batch-settlement where offered: a deposit that cannot be made
                         is a refusal instead of an exact payment
      --inspect          print a summary of the 402 challenge (price in USDC, network, payTo,
                         timeout, input fields) and the agent's cap headroom; pays nothing
                         (with --upto: what paying with upto would reserve; by default the
                         deposit a batch-settlement payment would make first)
  -v, --verbose          with --inspect: the asset, the description and the whole input schema
      --approval-timeout S when the agent's policy holds the payment for its owner's approval, wait
                         up to S seconds for the decision (default 600; 0: do not wait), with a
                         progress line on stderr, then pay
  -h, --help             this help

output: the response body on stdout; the payment receipt (amount, payTo, payer, payment id,
transaction once settled; with upto the charge and the maximum) on stderr; with "tollgate --json fetch", the receipt as one JSON line.
exit codes: 0 success, 1 usage or other error, 2 payment refused, 3 HTTP error (status >= 400)
`

/** The receipt as --json prints it (one line on stderr). */
export function receiptJson(status: number, p: PaymentInfo | undefined): Record<string, unknown> {
  if (!p) return { object: 'receipt', status, paid: false }
  return {
    object: 'receipt',
    status,
    paid: p.success,
    // a signed payment whose call failed is not settled (x402 sellers settle only calls that succeed)
    charged: p.success,
    amount: p.amount,
    amount_usdc: formatUsdc(p.amount),
    pay_to: p.payTo,
    payer: p.payer,
    network: p.network,
    payment_id: p.agentPaymentId ?? null,
    // the x402 payment-identifier the payment carried: an answer lost on the way was asked for again with it, uncharged
    payment_identifier: p.paymentIdentifier ?? null,
    ...(p.retried ? { retried: true } : {}),
    transaction: p.transaction ?? null,
    settlement: p.transaction ? 'settled' : 'pending',
    scheme: p.scheme,
    // deferred: the voucher (what it owes the seller so far) and what the payment deposited into the escrow
    ...(p.voucher
      ? { voucher: { id: p.voucher.id, nonce: p.voucher.nonce, value_aggregate: p.voucher.valueAggregate } }
      : {}),
    ...(p.deposit !== undefined ? { deposit: p.deposit } : {}),
    // upto: `amount` is what the seller charged (its receipt), `max_amount` what was authorized and reserved
    ...(p.maxAmount !== undefined
      ? { usage_based: true, max_amount: p.maxAmount, max_amount_usdc: formatUsdc(p.maxAmount) }
      : {}),
  }
}

/** `--approval-timeout` in seconds (default 600) as milliseconds; 0 does not wait. */
export function approvalTimeoutMs(v: string | undefined): number {
  if (v === undefined) return 600_000
  if (!/^\d{1,6}$/.test(v)) throw new UsageError(`--approval-timeout is a number of seconds, got "${v}"`)
  return Number(v) * 1000
}

export async function fetchCommand(args: string[], cmd: Command): Promise<number> {
  const { io, out } = cmd
  const { values: v, positionals } = parseOptions(args, FETCH_OPTIONS, FETCH_HELP, { positionals: true })
  if (v.help) {
    io.stdout(FETCH_HELP)
    return EXIT.ok
  }
  const { url, init } = requestOf(v, positionals)
  const s = cmd.settings()
  const f = namingFetch(io.fetch ?? fetch, s.apiUrl, s.apiUrlSource)
  const upto = v.upto === true
  if (v.batch && v['no-batch']) throw new UsageError('use either --batch or --no-batch, not both')
  // batch-settlement by default (undefined); --batch insists, --no-batch opts out
  const batch = v.batch ? true : v['no-batch'] ? false : undefined
  if (v.inspect) return inspect({ url, init, f, cmd, verbose: Boolean(v.verbose), upto, batch })
  if (!s.agentKey) throw new UsageError(NO_AGENT_KEY)
  const res = await pay(
    cmd,
    f,
    { url, init, agentKey: s.agentKey, upto, batch },
    approvalTimeoutMs(v['approval-timeout']),
  )
  const bytes = new Uint8Array(await res.arrayBuffer())
  io.stdout(bytes)
  if (io.sharedTerminal && bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a) io.stdout('\n')
  const receipt = receiptText(res, out.json, upto, batch)
  if (receipt) io.stderr(receipt)
  if (res.status >= 400) {
    if (!out.json) io.stderr(`HTTP ${res.status} ${res.statusText}\n`)
    return EXIT.http
  }
  return EXIT.ok
}

const FETCH_OPTIONS = {
  request: { type: 'string', short: 'X' },
  header: { type: 'string', short: 'H', multiple: true },
  data: { type: 'string', short: 'd' },
  // the request body, as curl's --json; overrides the common --json flag
  json: { type: 'string' },
  inspect: { type: 'boolean' },
  upto: { type: 'boolean' },
  batch: { type: 'boolean' },
  'no-batch': { type: 'boolean' },
  verbose: { type: 'boolean', short: 'v' },
  'approval-timeout': { type: 'string' },
} as const

/** The request the options describe (curl's way: -X, -H, -d or --json); a usage error says what is off. */
function requestOf(
  v: { request?: string; header?: string[]; data?: string; json?: string },
  positionals: string[],
): { url: string; init: RequestInit } {
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
      throw new UsageError(
        '--json is not valid JSON (it is the request body here; for a JSON receipt put --json before the command: tollgate --json fetch …)',
      )
    }
    if (!headers.has('content-type')) headers.set('content-type', 'application/json')
  }
  const method = (v.request ?? (body !== undefined ? 'POST' : 'GET')).toUpperCase()
  if (!/^[A-Z]{1,10}$/.test(method)) throw new UsageError(`not an HTTP method: ${method}`)
  return { url, init: { method, headers, body } }
}

/** The paid call through the agent wallet; a held payment shows its progress while its owner decides. */
async function pay(
  cmd: Command,
  f: FetchLike,
  c: { url: string; init: RequestInit; agentKey: string; upto: boolean; batch: boolean | undefined },
  approvalMs: number,
): Promise<PaidResponse> {
  const { io, out } = cmd
  // shown only while a held payment waits for its owner
  let progress: Progress | undefined
  try {
    // one call per process: nothing to remember, so a sign-in is tried wherever a seller offers one (x402 sign-in-with-x)
    return await wrapFetch(f, {
      baseUrl: cmd.settings().apiUrl,
      agentKey: c.agentKey,
      signIn: 'always',
      upto: c.upto,
      ...(c.batch !== undefined ? { batchSettlement: c.batch } : {}),
      ...(approvalMs > 0
        ? {
            approval: {
              timeoutMs: approvalMs,
              onProgress: (st) => (progress ??= startProgress(io, 'payment held', { json: out.json })).update(st),
            },
          }
        : {}),
    })(c.url, c.init)
  } catch (err) {
    throw await paymentError(err, cmd)
  } finally {
    progress?.done()
  }
}

/** The receipt on stderr: JSON with --json, else what was paid (or signed in, or not charged) and how. */
function receiptText(res: PaidResponse, json: boolean, upto: boolean, batch: boolean | undefined): string {
  const p = res.payment
  const signedIn = res.signedIn
  if (json)
    return (
      JSON.stringify({
        ...receiptJson(res.status, p),
        ...(signedIn ? { signed_in: { payer: signedIn.payer, uri: signedIn.uri } } : {}),
      }) + '\n'
    )
  if (signedIn)
    return `signed in as ${signedIn.payer} (x402 sign-in-with-x: paid access to ${signedIn.uri}); nothing paid\n`
  if (p?.success && p.voucher)
    return (
      `paid ${formatUsdc(p.amount)} USDC to ${p.payTo} from ${p.payer} with a voucher (deferred)\n` +
      `  payment ${p.agentPaymentId ?? '-'}\n` +
      `  voucher ${p.voucher.id} #${p.voucher.nonce}: ${formatUsdc(p.voucher.valueAggregate)} USDC owed to this seller so far, collected later from the escrow\n` +
      (p.deposit !== undefined
        ? `  deposited ${formatUsdc(p.deposit)} USDC from the agent wallet into the escrow (tollgate escrow)\n`
        : '')
    )
  if (p?.success && p.scheme === 'batch-settlement')
    return (
      `paid ${formatUsdc(p.amount)} USDC to ${p.payTo} from ${p.payer} through a batch-settlement channel (a cumulative voucher, claimed later in batches)\n` +
      `  payment ${p.agentPaymentId ?? '-'}\n` +
      (p.deposit !== undefined
        ? `  deposited ${formatUsdc(p.deposit)} USDC from the agent wallet into the channel first (tollgate channels)\n`
        : '')
    )
  if (p?.success)
    return (
      `paid ${formatUsdc(p.amount)} USDC to ${p.payTo} from ${p.payer}${schemeNote(p, upto, batch)}\n` +
      `  payment ${p.agentPaymentId ?? '-'}\n` +
      `  transaction ${p.transaction ?? `pending (settles asynchronously; tollgate payments status ${p.agentPaymentId ?? '<id>'})`} on ${p.network}\n`
    )
  // x402 sellers settle only calls that succeed; this one failed and sent no receipt
  if (p)
    return (
      `not charged: the call failed, so the signed payment of ${p.maxAmount !== undefined ? 'at most ' : ''}${formatUsdc(p.amount)} USDC to ${p.payTo} is not settled\n` +
      `  payment ${p.agentPaymentId ?? '-'} (reported to the platform as failed; see tollgate payments status)\n`
    )
  return ''
}

/** After "paid X USDC …": an upto payment's maximum, or why --upto / --batch paid another scheme. */
function schemeNote(p: PaymentInfo, upto: boolean, batch: boolean | undefined): string {
  if (p.maxAmount !== undefined)
    return ` (upto: charged by usage, of at most ${formatUsdc(p.maxAmount)} USDC authorized)`
  const missing = [upto && 'upto', batch === true && 'batch-settlement'].filter(Boolean).join(' or ')
  return missing ? ` (${p.scheme}: the seller offers no ${missing} here)` : ''
}

/** What paying threw, as the error main.ts renders (the seller's 402 body goes to stdout first). */
export async function paymentError(err: unknown, cmd: Command): Promise<unknown> {
  const s = cmd.settings()
  if (
    err instanceof PaymentRefusedError &&
    err.status !== undefined &&
    err.status >= 500 &&
    err.response === undefined
  ) {
    // the platform failed to sign; nothing was refused, so not exit 2
    const message = `the platform could not make the payment (${err.code}, HTTP ${err.status}): ${err.message}`
    return new CliError(message, { code: err.code, human: message })
  }
  if (err instanceof PaidCallFailedError) {
    const p = err.payment
    const why = err.cause instanceof Error ? err.cause.message : String(err.cause)
    const id = p.agentPaymentId ?? '<id>'
    return new CliError(`${why}, after a payment of ${formatUsdc(p.amount)} USDC to ${p.payTo} was signed`, {
      code: 'paid_call_failed',
      details: {
        payment_id: p.agentPaymentId ?? null,
        amount: p.amount,
        pay_to: p.payTo,
        follow_with: `tollgate payments status ${id}`,
      },
      human: `error: ${why}, after a payment of ${formatUsdc(p.amount)} USDC to ${p.payTo} was signed\n  payment ${p.agentPaymentId ?? '-'}: the seller may have received it and may still settle it; see tollgate payments status ${id}`,
    })
  }
  if (err instanceof PaymentRefusedError) {
    const { headroom: _h, ...details } = err.details
    // a 404 or a non-JSON 4xx from the signing route: the API address points at something else
    const wrongApi = err.response === undefined && (err.code === 'not_found' || err.code === 'platform_error')
    const toFix = wrongApi
      ? `check that ${s.apiUrl} is the Tollgate API (${s.apiUrlSource}): it has no agent payment route`
      : nextStep(err.code, 'agent_key', s.agentKeySource, err.details)
    if (err.response) cmd.io.stdout(new Uint8Array(await err.response.arrayBuffer()))
    // the seller refused a payment the platform signed: name it, as a paid call does
    const paymentLine =
      typeof details.payment_id === 'string'
        ? `\n  payment ${details.payment_id}: signed by the platform, refused by the seller (tollgate payments status ${details.payment_id})`
        : ''
    return new CliError(refusalText(err.code, err.message, err.details), {
      exit: EXIT.refused,
      code: err.code,
      details,
      toFix,
      human: `payment refused (${err.code}): ${refusalText(err.code, err.message, err.details)}${paymentLine}${Object.keys(details).length && !WORDED.has(err.code) ? `\n  ${JSON.stringify(details)}` : ''}`,
    })
  }
  return err
}
