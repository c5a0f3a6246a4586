/**
 * The contract every hosted endpoint handler (handlers/<slug>/index.ts) fulfils.
 *
 * Handlers are loaded in the proxy only for their metadata (schema, description, example), and
 * run in handler processes (process-pool.ts). So a handler module's top level must stay light:
 * import heavy libraries (sharp, tesseract.js, pdf makers, ...) lazily inside `run`.
 *
 * @example
 *   export default defineHandler({
 *     slug: 'hash-generator',
 *     description: 'Hash text with SHA-256, SHA-512, MD5, ...',
 *     inputSchema: { type: 'object', required: ['text'], properties: { text: { type: 'string', maxLength: 1_000_000 } } },
 *     output: { contentType: 'application/json', description: 'hex and base64 digests' },
 *     example: { text: 'hello' },
 *     run: (input) => ({ body: { sha256: '...' } }),
 *   })
 */

export type JsonSchema = {
  type?: string | string[]
  description?: string
  properties?: Record<string, JsonSchema>
  required?: string[]
  items?: JsonSchema
  enum?: unknown[]
  default?: unknown
  [k: string]: unknown
}

export interface HandlerContext {
  /** HTTP method the buyer used (GET input came from the query string, POST from the JSON body) */
  method: 'GET' | 'POST'
  /** Accept header of the buyer, lower-cased; binary handlers return base64 JSON when it asks for JSON only */
  accept: string
  /** provider settings (base URLs, keys) from the environment, for handlers that call outside services */
  providers: Record<string, string | undefined>
  /** true only in tests: lets URL-fetching handlers reach loopback/private addresses */
  allowPrivateNetwork: boolean
}

/**
 * The longest per-call time limit a hosted handler may declare (`timeoutMs`). The settlement
 * sweep voids a payment still `verified` well after this (a call that never recorded an
 * outcome), so a handler allowed to run longer could finish after its payment was voided.
 */
export const MAX_HANDLER_TIMEOUT_MS = 120_000

export interface HandlerRateLimit {
  requests: number
  perSeconds: number
}

/**
 * The module's required provider settings (`providers`) that are unset or blank in `providers`;
 * a requirement any of several settings meets is named "A or B".
 */
export function missingSettings(
  mod: Pick<HandlerModule, 'providers'>,
  providers: Record<string, string | undefined>,
): string[] {
  const set = (name: string) => Boolean(providers[name]?.trim())
  return (mod.providers ?? []).flatMap((req) =>
    typeof req === 'string' ? (set(req) ? [] : [req]) : req.some(set) ? [] : [req.join(' or ')],
  )
}

/** Every setting named in the module's `providers`, any-of groups flattened. */
export function settingNames(mod: Pick<HandlerModule, 'providers'>): string[] {
  return (mod.providers ?? []).flatMap((req) => (typeof req === 'string' ? [req] : [...req]))
}

/** The module's rate limit under these provider settings, if any. */
export function rateLimitOf(
  mod: Pick<HandlerModule, 'rateLimit'>,
  providers: Record<string, string | undefined>,
): HandlerRateLimit | undefined {
  return typeof mod.rateLimit === 'function' ? mod.rateLimit(providers) : mod.rateLimit
}

export interface HandlerResult {
  /** defaults to 200 */
  status?: number
  /** defaults to the module's output.contentType */
  contentType?: string
  /** objects are sent as JSON; strings as text; Uint8Array as binary */
  body: unknown
}

export interface HandlerModule<I = any> {
  /** the endpoint slug, equal to the folder name */
  slug: string
  /** one or two sentences for the marketplace, the 402 challenge and OpenAPI */
  description: string
  /** JSON Schema (draft-07 subset, as Ajv understands it) of the input; type 'object' */
  inputSchema: JsonSchema
  /**
   * `schema`: JSON Schema of the JSON answer (for a binary answer, its JSON variant, asked for with
   * Accept: application/json); `example`: an answer that passes it (a pure handler's real answer to
   * `example`). Both go into the 402's Bazaar declaration, so an agent knows what it pays for.
   */
  output: { contentType: string; description: string; schema?: JsonSchema; example?: Record<string, unknown> }
  /** a valid input used by the contract test and the docs */
  example: I
  /**
   * ctx.providers settings the handler cannot run without; when they are missing it answers
   * 503 upstream_not_configured (the contract test checks exactly that, and that with all of them
   * set it asks for no other). A list inside the list is one requirement met by any of its
   * settings (e.g. a dedicated key or the general one).
   */
  providers?: Array<string | readonly string[]>
  /**
   * true for handlers that reach public hosts the buyer names themselves (DNS, TLS, HTTP), with
   * no provider setting; without network access (CI) their example may fail with 502
   * upstream_failed or 422 (its host does not resolve), which the contract test accepts; their
   * own tests use local servers
   */
  network?: boolean
  /**
   * a ceiling on paid calls to this endpoint across every proxy process, for handlers whose calls
   * act on third parties in the platform's name (mail sent, hosts probed) or use a provider with a
   * usage policy; over it: 429, nothing charged. A function decides from the provider settings
   * (e.g. a public instance's policy applies, the operator's own instance has none).
   */
  rateLimit?: HandlerRateLimit | ((providers: Record<string, string | undefined>) => HandlerRateLimit | undefined)
  /**
   * true for handlers whose call acts outside (mail sent, a link created at a provider, a request
   * sent to a third party): their payment is recorded before they run, as a seller upstream's is,
   * so nothing acts for a payment the ledger could not record (Postgres down). Others are recorded
   * once, after they answered (docs/architecture.md, "A paid call").
   */
  effects?: boolean
  /** defaults to ['GET', 'POST'] */
  methods?: ('GET' | 'POST')[]
  /** per-call time limit, default from config (HANDLER_TIMEOUT_MS); at most MAX_HANDLER_TIMEOUT_MS */
  timeoutMs?: number
  run(input: I, ctx: HandlerContext): HandlerResult | Promise<HandlerResult>
}

/** Bad input detected inside `run` (beyond the schema): becomes a 400 naming the field; the buyer is not charged. */
export class HandlerInputError extends Error {
  constructor(
    readonly field: string,
    message: string,
    readonly statusCode: 400 | 413 | 422 = 400,
  ) {
    super(message)
    this.name = 'HandlerInputError'
  }
}

/** An outside provider is not configured or failed: 503 / 502; the buyer is not charged. */
export class HandlerUpstreamError extends Error {
  constructor(
    readonly code: 'upstream_not_configured' | 'upstream_failed',
    message: string,
  ) {
    super(message)
    this.name = 'HandlerUpstreamError'
  }
}

/** Identity function that types a handler module. */
export function defineHandler<I>(mod: HandlerModule<I>): HandlerModule<I> {
  return mod
}
