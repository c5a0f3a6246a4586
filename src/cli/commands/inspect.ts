/**
 * `tollgate fetch --inspect`: the call without a payment header, the 402's requirements in short
 * (the whole input schema with --verbose) and the platform's dry run. Pays and records nothing.
 */
import { offeredChallenges, type OfferedChallenge, type Requirement } from '../../client/challenge.js'
import type { FetchLike } from '../../client/wrap-fetch.js'
import { formatUsdc } from '../../x402/usdc-amount.js'
import type { Command } from '../command.js'
import { UnreachableError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { headroomLines, type Budget } from './budget.js'

export async function inspect(o: {
  url: string
  init: RequestInit
  f: FetchLike
  cmd: Command
  verbose: boolean
  /** `fetch --upto`: the dry run asks what paying with upto would do */
  upto?: boolean
}): Promise<number> {
  const { url, init, f, cmd } = o
  const { io, out } = cmd
  const res = await f(url, init)
  if (res.status !== 402) {
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
  const header = res.headers.get('payment-required')
  const text = await res.text()
  let v1: unknown
  try {
    v1 = JSON.parse(text)
  } catch {
    v1 = undefined
  }
  // in the order the wrapper pays: v1 first (X-PAYMENT), v2 first where it declares payment-identifier
  const offered = offeredChallenges(header, v1)
  const parsed = offered.map((c) => c.parsed)
  if (parsed.length === 0) {
    if (out.json)
      out.result({ object: 'inspection', url, method: init.method, payment_required: true, readable: false }, '')
    else io.stderr('the 402 carries no readable x402 challenge\n')
    return EXIT.refused
  }
  const ch = parsed[0]!
  // a v1 body's outputSchema.input describes the input most fully (fields by name); else the requirement's own
  const v1Schema = parsed.find((c) => c.version === 1)?.accepts.find((x) => x.inputSchema !== undefined)?.inputSchema
  const schemaOf = (r: Requirement) =>
    v1Schema ??
    r.inputSchema ??
    parsed
      .slice(1)
      .flatMap((c) => c.accepts)
      .find((x) => x.inputSchema !== undefined)?.inputSchema
  // schemes only the later (v2) challenge offers, e.g. upto's usage-based price: shown after the first's
  const listed = [
    ...ch.accepts,
    ...parsed
      .slice(1)
      .flatMap((c) => c.accepts)
      .filter((r) => r.scheme === 'upto' && !ch.accepts.some((a) => a.scheme === r.scheme)),
  ]
  const s = cmd.settings()
  let dry: DryRun
  if (!s.agentKey) dry = { unavailable: 'unknown (no agent key; run tollgate setup or set TOLLGATE_AGENT_KEY)' }
  else {
    try {
      dry = await dryRun(url, init.method!, offered, f, s.apiUrl, s.agentKey, o.upto === true)
    } catch (err) {
      // the challenge is still worth showing without the platform's side
      if (!(err instanceof UnreachableError)) throw err
      dry = { unavailable: `unavailable (${err.message})` }
    }
  }
  if (out.json) {
    out.result(
      {
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
      },
      '',
    )
    return EXIT.ok
  }
  const lines: string[] = [
    `402 Payment Required: ${init.method} ${url}`,
    `x402 version ${ch.version}${parsed.length > 1 ? ` (also offered as v${parsed[1]!.version})` : ''}`,
  ]
  listed.forEach((r, i) => {
    const schema = schemaOf(r)
    const first = listed[0]!
    // after the first requirement, only what differs from it (a platform endpoint offers several
    // schemes for the same payee, network and input)
    const same = (k: 'network' | 'payTo' | 'maxTimeoutSeconds' | 'description') => i > 0 && r[k] === first[k]
    const sameInput = i > 0 && inputFields(schema) === inputFields(schemaOf(first))
    const alike =
      i > 0 && same('network') && same('payTo')
        ? ` (network, payTo${sameInput ? ' and input' : ''} as requirement 1)`
        : ''
    lines.push(
      `requirement ${i + 1}${alike}:`,
      r.scheme === 'upto'
        ? `  price    up to ${formatUsdc(r.amount.toString())} USDC (charged by usage)`
        : `  price    ${formatUsdc(r.amount.toString())} USDC`,
      `  scheme   ${r.scheme}${SCHEMES[r.scheme] ? ` (${SCHEMES[r.scheme]})` : ''}`,
    )
    if (!same('network')) lines.push(`  network  ${r.network}${r.chainId ? ` (chain ${r.chainId})` : ''}`)
    if (!same('payTo')) lines.push(`  payTo    ${r.payTo}`)
    if (!same('maxTimeoutSeconds')) lines.push(`  timeout  ${r.maxTimeoutSeconds} s`)
    if (o.verbose) {
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
  })
  if ('unavailable' in dry) lines.push(`cap headroom: ${dry.unavailable}`)
  else lines.push(...dry.lines)
  lines.push(
    o.verbose
      ? 'nothing was paid (--inspect)'
      : 'nothing was paid (--inspect; --verbose adds the asset and the input schema)',
  )
  out.result(undefined, lines)
  return EXIT.ok
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

const offersUpto = (c: OfferedChallenge) => (c.parsed.accepts.some((r) => r.scheme === 'upto') ? 1 : 0)

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
): Promise<DryRun> {
  // the challenge the paying call would use: the next one only when the platform can pay nothing in
  // this one; with upto, one that offers it first (v2 only), as wrapFetch orders them
  if (upto) offered = [...offered].sort((a, b) => offersUpto(b) - offersUpto(a))
  let r: Response
  let b: Record<string, any>
  for (let i = 0; ; i++) {
    r = await f(`${apiUrl}/v1/agent/payments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agentKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url, method, challenge: offered[i]!.raw, dry_run: true, ...(upto ? { upto } : {}) }),
    })
    b = (await r.json().catch(() => ({}))) as Record<string, any>
    const code = r.ok ? b.refusal?.code : b.code
    if (i + 1 >= offered.length || (code !== 'unsupported_requirements' && code !== 'invalid_parameter')) break
  }
  if (!r.ok) return { unavailable: `unavailable (${b.code ?? r.status}: ${b.message ?? ''})` }
  return {
    preview: b,
    lines: [
      b.would_pay
        ? `would pay ${b.would_pay.usage_based ? 'up to ' : ''}${formatUsdc(b.would_pay.amount)} USDC to ${b.would_pay.pay_to} on ${b.would_pay.network} (${b.would_pay.usage_based ? 'upto: the maximum is reserved, the seller charges by usage' : (b.would_pay.scheme ?? 'exact')}${upto && !b.would_pay.usage_based ? '; the seller offers no upto here' : ''})`
        : `would not pay: ${b.refusal?.code}: ${b.refusal?.message}`,
      `cap headroom${b.would_pay ? ' after this payment' : ''}:`,
      ...headroomLines(b as Budget),
      ...(b.balance !== null && b.balance !== undefined ? [`wallet balance ${formatUsdc(b.balance)} USDC`] : []),
    ],
  }
}
