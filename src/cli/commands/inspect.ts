/**
 * `tollgate fetch --inspect`: the call without a payment header, the 402's requirements in short
 * (the whole input schema with --verbose) and the platform's dry run. Pays and records nothing.
 */
import {
  offeredChallenges,
  type OfferedChallenge,
  type ParsedChallenge,
  type Requirement,
} from '../../client/challenge.js'
import type { FetchLike } from '../../client/wrap-fetch.js'
import { formatUsdc } from '../../x402/usdc-amount.js'
import type { Command } from '../command.js'
import { UnreachableError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { headroomLines, type Budget } from './budget.js'

/** What `fetch --inspect` was asked for (its request, how to send it, and how much to show). */
export interface InspectOptions {
  url: string
  init: RequestInit
  f: FetchLike
  cmd: Command
  verbose: boolean
  /** `fetch --upto`: the dry run asks what paying with upto would do */
  upto?: boolean
  /**
   * batch-settlement: left out, the dry run shows what the default would pay (batch-settlement
   * where this platform's endpoint offers it, with its deposit first); `true` (`--batch`) insists,
   * `false` (`--no-batch`) opts out
   */
  batch?: boolean
}

export async function inspect(o: InspectOptions): Promise<number> {
  const { url, init, f, cmd } = o
  const { io, out } = cmd
  const res = await f(url, init)
  if (res.status !== 402) return notPaymentRequired(o, res)
  // in the order the wrapper pays: v1 first (X-PAYMENT), v2 first where it declares payment-identifier
  const offered = await challengesOf(res)
  if (offered.length === 0) {
    if (out.json)
      out.result({ object: 'inspection', url, method: init.method, payment_required: true, readable: false }, '')
    else io.stderr('the 402 carries no readable x402 challenge\n')
    return EXIT.refused
  }
  const inspection = inspectionOf(offered.map((c) => c.parsed))
  const dry = await dryRunOf(o, offered)
  if (out.json) out.result(inspectionJson(o, inspection, dry), '')
  else out.result(undefined, inspectionLines(o, inspection, dry))
  return EXIT.ok
}

/** The call answered without a 402: its status and body, as the plain call would show them. */
async function notPaymentRequired({ url, init, cmd }: InspectOptions, res: Response): Promise<number> {
  const { io, out } = cmd
  if (!out.json) io.stderr(`no payment required: HTTP ${res.status}\n`)
  const body = new Uint8Array(await res.arrayBuffer())
  if (out.json)
    out.result(
      {
        object: 'inspection',
        url,
        method: init.method,
        payment_required: false,
        status: res.status,
        body: new TextDecoder().decode(body),
      },
      '',
    )
  else io.stdout(body)
  return res.status >= 400 ? EXIT.http : EXIT.ok
}

/** The 402's challenges: the PAYMENT-REQUIRED header (v2) and a v1 JSON body. */
async function challengesOf(res: Response): Promise<OfferedChallenge[]> {
  const header = res.headers.get('payment-required')
  const text = await res.text()
  let v1: unknown
  try {
    v1 = JSON.parse(text)
  } catch {
    v1 = undefined
  }
  return offeredChallenges(header, v1)
}

/** The challenges read: the first, the requirements to list, and where each one's input schema is. */
interface Inspection {
  parsed: ParsedChallenge[]
  /** the first challenge, the one the wrapper pays by default */
  ch: ParsedChallenge
  listed: Requirement[]
  schemaOf: (r: Requirement) => unknown
}

function inspectionOf(parsed: ParsedChallenge[]): Inspection {
  const ch = parsed[0]!
  const later = parsed.slice(1).flatMap((c) => c.accepts)
  // a v1 body's outputSchema.input describes the input most fully (fields by name); else the requirement's own
  const v1Schema = parsed.find((c) => c.version === 1)?.accepts.find((x) => x.inputSchema !== undefined)?.inputSchema
  const schemaOf = (r: Requirement) =>
    v1Schema ?? r.inputSchema ?? later.find((x) => x.inputSchema !== undefined)?.inputSchema
  // schemes only the later (v2) challenge offers, e.g. upto's usage-based price: shown after the first's
  const listed = [
    ...ch.accepts,
    ...later.filter((r) => r.scheme === 'upto' && !ch.accepts.some((a) => a.scheme === r.scheme)),
  ]
  return { parsed, ch, listed, schemaOf }
}

/** The platform's dry run, or why there is none (no agent key, the platform unreachable). */
async function dryRunOf(o: InspectOptions, offered: OfferedChallenge[]): Promise<DryRun> {
  const s = o.cmd.settings()
  if (!s.agentKey) return { unavailable: 'unknown (no agent key; run tollgate setup or set TOLLGATE_AGENT_KEY)' }
  try {
    return await dryRun(o.url, o.init.method!, offered, o.f, s.apiUrl, s.agentKey, o.upto === true, o.batch)
  } catch (err) {
    // the challenge is still worth showing without the platform's side
    if (!(err instanceof UnreachableError)) throw err
    return { unavailable: `unavailable (${err.message})` }
  }
}

/** `--inspect --json`: the inspection object. */
function inspectionJson({ url, init }: InspectOptions, { parsed, ch, listed, schemaOf }: Inspection, dry: DryRun) {
  return {
    object: 'inspection',
    url,
    method: init.method,
    payment_required: true,
    x402_version: ch.version,
    also_offered: parsed.slice(1).map((c) => c.version),
    requirements: listed.map((r) => ({
      price: r.amount.toString(),
      price_usdc: formatUsdc(r.amount.toString()),
      /** upto: the price is a maximum, the charge depends on usage */
      usage_based: r.scheme === 'upto',
      scheme: r.scheme,
      network: r.network,
      chain_id: r.chainId ?? null,
      pay_to: r.payTo,
      asset: r.asset,
      max_timeout_seconds: r.maxTimeoutSeconds,
      description: r.description ?? null,
      input_schema: schemaOf(r) ?? null,
    })),
    preview: 'preview' in dry ? dry.preview : null,
    preview_unavailable: 'unavailable' in dry ? dry.unavailable : null,
    paid: false,
  }
}

/** `--inspect` for a person: the challenge, each requirement, the dry run. */
function inspectionLines(o: InspectOptions, inspection: Inspection, dry: DryRun): string[] {
  const { parsed, ch, listed } = inspection
  const lines: string[] = [
    `402 Payment Required: ${o.init.method} ${o.url}`,
    `x402 version ${ch.version}${parsed.length > 1 ? ` (also offered as v${parsed[1]!.version})` : ''}`,
  ]
  listed.forEach((r, i) => lines.push(...requirementLines(inspection, r, i, o.verbose)))
  if ('unavailable' in dry) lines.push(`cap headroom: ${dry.unavailable}`)
  else lines.push(...dry.lines)
  lines.push(
    o.verbose
      ? 'nothing was paid (--inspect)'
      : 'nothing was paid (--inspect; --verbose adds the asset and the input schema)',
  )
  return lines
}

/**
 * Requirement i: after the first, only what differs from it (a platform endpoint offers several
 * schemes for the same payee, network and input).
 */
function requirementLines({ listed, schemaOf }: Inspection, r: Requirement, i: number, verbose: boolean): string[] {
  const schema = schemaOf(r)
  const first = listed[0]!
  const same = (k: 'network' | 'payTo' | 'maxTimeoutSeconds' | 'description') => i > 0 && r[k] === first[k]
  const sameInput = i > 0 && inputFields(schema) === inputFields(schemaOf(first))
  const alike =
    i > 0 && same('network') && same('payTo')
      ? ` (network, payTo${sameInput ? ' and input' : ''} as requirement 1)`
      : ''
  const lines = [
    `requirement ${i + 1}${alike}:`,
    r.scheme === 'upto'
      ? `  price    up to ${formatUsdc(r.amount.toString())} USDC (charged by usage)`
      : `  price    ${formatUsdc(r.amount.toString())} USDC`,
    `  scheme   ${r.scheme}${SCHEMES[r.scheme] ? ` (${SCHEMES[r.scheme]})` : ''}`,
  ]
  if (!same('network')) lines.push(`  network  ${r.network}${r.chainId ? ` (chain ${r.chainId})` : ''}`)
  if (!same('payTo')) lines.push(`  payTo    ${r.payTo}`)
  if (!same('maxTimeoutSeconds')) lines.push(`  timeout  ${r.maxTimeoutSeconds} s`)
  if (verbose) {
    lines.push(`  asset    ${r.asset}${r.extra ? ` (${r.extra.name} v${r.extra.version})` : ''}`)
    if (r.description) lines.push(`  about    ${r.description}`)
    if (schema !== undefined)
      lines.push(`  input    ${JSON.stringify(schema, null, 2).replace(/\n/g, '\n           ')}`)
  } else {
    if (r.description && !same('description'))
      lines.push(`  about    ${r.description.length > 100 ? `${r.description.slice(0, 99)}…` : r.description}`)
    const fields = inputFields(schema)
    if (fields && !sameInput) lines.push(`  input    ${fields}`)
  }
  return lines
}

/**
 * The input fields of an x402 input schema in one line: `query text (required), hmacKey` or `body
 * msg`. Reads the v1 outputSchema.input shape (queryParams / bodyFields) and JSON Schema properties.
 */
export function inputFields(schema: unknown): string | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined
  const o = schema as Record<string, any>
  const parts: string[] = []
  const names = (fields: unknown, required: unknown = []) =>
    typeof fields === 'object' && fields !== null
      ? Object.entries(fields as Record<string, any>).map(
          ([k, f]) =>
            `${k}${f?.required === true || (Array.isArray(required) && required.includes(k)) ? ' (required)' : ''}`,
        )
      : []
  const q = names(o.queryParams)
  const b = names(o.bodyFields)
  if (q.length) parts.push(`query ${q.join(', ')}`)
  if (b.length) parts.push(`body ${b.join(', ')}`)
  if (!parts.length && o.properties) parts.push(names(o.properties, o.required).join(', '))
  if (!parts.length && o.input) return inputFields(o.input)
  return parts.length ? parts.join('; ') : undefined
}

/** What each x402 scheme means for the payer, in a few words. */
const SCHEMES: Record<string, string> = {
  exact: 'the price, transferred per call',
  deferred: 'a voucher per call, against a deposit held in escrow for this seller',
  upto: 'a maximum reserved per call, the seller charges what was used',
  'batch-settlement': 'one deposit into a channel, then a signed cumulative voucher per call, claimed in batches',
}

const offers = (c: OfferedChallenge, scheme: string) => (c.parsed.accepts.some((r) => r.scheme === scheme) ? 1 : 0)

export type DryRun = { unavailable: string } | { preview: Record<string, any>; lines: string[] }

/** What paying would do (the platform's dry run), as `--inspect` prints it. */
export async function dryRun(
  url: string,
  method: string,
  offered: OfferedChallenge[],
  f: FetchLike,
  apiUrl: string,
  agentKey: string,
  upto = false,
  batch?: boolean,
): Promise<DryRun> {
  // the challenge the paying call would use: the next one only when the platform can pay nothing in
  // this one; one that offers upto (when asked) or batch-settlement (unless opted out) first (v2
  // only), as wrapFetch orders them
  const wanted = (c: OfferedChallenge) =>
    (upto ? offers(c, 'upto') : 0) | (batch !== false ? offers(c, 'batch-settlement') : 0)
  offered = [...offered].sort((a, b) => wanted(b) - wanted(a))
  let r: Response
  let b: Record<string, any>
  for (let i = 0; ; i++) {
    r = await f(`${apiUrl}/v1/agent/payments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agentKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        url,
        method,
        challenge: offered[i]!.raw,
        dry_run: true,
        ...(upto ? { upto } : {}),
        ...(batch !== undefined ? { batch_settlement: batch } : {}),
      }),
    })
    b = (await r.json().catch(() => ({}))) as Record<string, any>
    const code = r.ok ? b.refusal?.code : b.code
    if (i + 1 >= offered.length || (code !== 'unsupported_requirements' && code !== 'invalid_parameter')) break
  }
  if (!r.ok) return { unavailable: `unavailable (${b.code ?? r.status}: ${b.message ?? ''})` }
  const w = b.would_pay as Record<string, any> | null | undefined
  const scheme: string = w?.scheme ?? 'exact'
  const missing = [
    upto && !w?.usage_based && 'upto',
    batch === true && scheme !== 'batch-settlement' && 'batch-settlement',
  ].filter(Boolean)
  return {
    preview: b,
    lines: [
      w
        ? `would pay ${w.usage_based ? 'up to ' : ''}${formatUsdc(w.amount)} USDC to ${w.pay_to} on ${w.network} (${w.usage_based ? 'upto: the maximum is reserved, the seller charges by usage' : scheme}${missing.length ? `; the seller offers no ${missing.join(' or ')} here` : ''})`
        : `would not pay: ${b.refusal?.code}: ${b.refusal?.message}`,
      ...(w && typeof w.deposit === 'string'
        ? [
            scheme === 'batch-settlement'
              ? `would deposit ${formatUsdc(w.deposit)} USDC from the agent wallet into a batch-settlement channel first (at most the owner's channel deposit bound; what is not charged stays the agent's: tollgate channels)`
              : `would deposit ${formatUsdc(w.deposit)} USDC from the agent wallet into the escrow for this seller first (tollgate escrow)`,
          ]
        : []),
      `cap headroom${b.would_pay ? ' after this payment' : ''}:`,
      ...headroomLines(b as Budget),
      ...(b.balance !== null && b.balance !== undefined ? [`wallet balance ${formatUsdc(b.balance)} USDC`] : []),
    ],
  }
}
