/**
 * What the framework tools (ai-sdk.ts, langchain.ts, openai-agents.ts) share: `paid_fetch` over
 * wrapFetch and `search_endpoints` over the platform's x402 Bazaar search, each answering a plain
 * JSON object with the cost. A refused payment (the agent's caps or allowlist on the platform, or
 * this client's maxPerCall / budget) is an answer the model can read (`refused`), not a throw:
 * nothing was paid for it.
 */
import { formatUsdc } from '../../x402/usdc-amount.js'
import { PaymentRefusedError } from '../errors.js'
import { wrapFetch, type FetchLike, type WrapFetchOptions } from '../wrap-fetch.js'

export type TollgateToolsOptions = WrapFetchOptions & {
  /** fetch for the calls and the platform (default: the global fetch) */
  fetch?: FetchLike
  /** the Tollgate API that search_endpoints asks (default: `baseUrl` of a platform payer); none: no search tool */
  apiUrl?: string
  /** longest body text handed to the model, in characters (default 4000); the rest is cut and `truncated` set */
  maxBodyChars?: number
}

interface PaidFetchInput {
  url: string
  /** GET by default, POST when a body is given */
  method?: string | null
  /** sent as application/json when it parses as JSON, else as text/plain */
  body?: string | null
}

export interface PaidFetchResult {
  status: number
  body: string
  /** the body was longer than maxBodyChars and was cut */
  truncated: boolean
  paid: boolean
  /** what this call cost, in USDC ("0" when nothing was paid) */
  cost_usdc: string
  /** the platform's agent-payment id (local key: the x402 payment identifier), null when nothing was paid */
  payment_id: string | null
  /** the settlement transaction, once known (Tollgate's proxy settles after answering: null then) */
  transaction: string | null
  /** what these tools paid in this session so far, in USDC */
  session_spent_usdc: string
  /** the payment was refused before anything was paid: why, and the refusal's code */
  refused?: { code: string; message: string }
}

interface SearchEndpointsInput {
  query: string
  limit?: number | null
}

interface FoundEndpoint {
  url: string
  description: string | null
  methods: string[]
  price_usdc: string | null
  schemes: string[]
}

export interface TollgateToolCore {
  paidFetch(input: PaidFetchInput, signal?: AbortSignal): Promise<PaidFetchResult>
  searchEndpoints?: (input: SearchEndpointsInput, signal?: AbortSignal) => Promise<{ endpoints: FoundEndpoint[] }>
  /** atomic USDC units paid so far */
  readonly spent: bigint
}

export const PAID_FETCH_DESCRIPTION =
  'Call an HTTP(S) URL, paying its x402 price in USDC when it asks for one (402). Returns the status, the body text and what the call cost in USDC. A payment above the caps is refused and nothing is paid.'
export const SEARCH_DESCRIPTION =
  'Search the Tollgate marketplace for paid API endpoints by words; returns their URLs, prices in USDC and methods, to call with paid_fetch.'

export function tollgateToolCore(opts: TollgateToolsOptions): TollgateToolCore {
  const { fetch: f = fetch, apiUrl, maxBodyChars = 4000, ...payOpts } = opts
  const pay = wrapFetch(f, payOpts as WrapFetchOptions)
  const api = apiUrl ?? ('baseUrl' in opts ? opts.baseUrl : undefined)
  const core: TollgateToolCore = {
    get spent() {
      return pay.spent
    },
    async paidFetch(input, signal) {
      const body = input.body ?? undefined
      const method = (input.method || (body !== undefined ? 'POST' : 'GET')).toUpperCase()
      const headers =
        body === undefined ? undefined : { 'content-type': isJson(body) ? 'application/json' : 'text/plain' }
      try {
        const res = await pay(input.url, { method, headers, body, signal })
        const text = await res.text()
        const p = res.payment
        const paid = p?.success === true
        return {
          status: res.status,
          body: text.length > maxBodyChars ? text.slice(0, maxBodyChars) : text,
          truncated: text.length > maxBodyChars,
          paid,
          cost_usdc: paid ? formatUsdc(p.amount) : '0',
          payment_id: p ? (p.agentPaymentId ?? p.paymentIdentifier ?? null) : null,
          transaction: p?.transaction ?? null,
          session_spent_usdc: formatUsdc(pay.spent),
        }
      } catch (err) {
        if (!(err instanceof PaymentRefusedError)) throw err
        return {
          status: err.status ?? 402,
          body: '',
          truncated: false,
          paid: false,
          cost_usdc: '0',
          payment_id: typeof err.details.payment_id === 'string' ? err.details.payment_id : null,
          transaction: null,
          session_spent_usdc: formatUsdc(pay.spent),
          refused: { code: err.code, message: err.message },
        }
      }
    },
  }
  if (api) core.searchEndpoints = (input, signal) => search(f, api, input, signal)
  return core
}

function isJson(s: string): boolean {
  try {
    JSON.parse(s)
    return true
  } catch {
    return false
  }
}

/** `GET {api}/discovery/search`: the x402 Bazaar items, as the model needs them. */
async function search(
  f: FetchLike,
  api: string,
  input: SearchEndpointsInput,
  signal?: AbortSignal,
): Promise<{ endpoints: FoundEndpoint[] }> {
  const limit = Math.min(Math.max(Math.trunc(input.limit ?? 10), 1), 50)
  const url = `${api.replace(/\/+$/, '')}/discovery/search?query=${encodeURIComponent(input.query)}&limit=${limit}`
  const res = await f(url, { signal })
  const body = (await res.json().catch(() => undefined)) as { resources?: unknown; message?: unknown } | undefined
  if (!res.ok || !Array.isArray(body?.resources))
    throw new Error(`search failed (HTTP ${res.status}${typeof body?.message === 'string' ? `: ${body.message}` : ''})`)
  return { endpoints: (body.resources as Record<string, unknown>[]).map(found) }
}

function found(r: Record<string, unknown>): FoundEndpoint {
  const accepts = Array.isArray(r.accepts) ? (r.accepts as Record<string, unknown>[]) : []
  const amount = accepts[0]?.amount ?? accepts[0]?.maxAmountRequired
  const meta = (r.metadata ?? {}) as { methods?: unknown }
  return {
    url: String(r.resource),
    description: typeof r.description === 'string' ? r.description : null,
    methods: Array.isArray(meta.methods) ? meta.methods.filter((m): m is string => typeof m === 'string') : [],
    price_usdc: typeof amount === 'string' && /^\d{1,40}$/.test(amount) ? formatUsdc(amount) : null,
    schemes: [...new Set(accepts.map((a) => String(a.scheme)))],
  }
}
