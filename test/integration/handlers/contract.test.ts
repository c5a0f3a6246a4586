import t from 'tap'
import { PROVIDER_SETTINGS } from '../../../src/handler-providers.js'
import { MAX_HANDLER_TIMEOUT_MS, settingNames } from '../../../src/pool/handler-contract.js'
import { createHandlerPool } from '../../../src/pool/handler-pool.js'
import { loadHandlerRegistry } from '../../../src/pool/handler-registry.js'

/** A value of the wrong JSON type for a schema type. */
function wrongValue(type: unknown): unknown {
  const types = Array.isArray(type) ? type : [type]
  if (!types.includes('object')) return { wrong: true }
  if (!types.includes('string')) return 'not-an-object'
  return 12345
}

t.test('every registered handler honours the contract', async (t) => {
  const registry = await loadHandlerRegistry()
  t.ok(registry.size >= 30, `handlers registered: ${registry.size}`)
  const pool = createHandlerPool({ maxThreads: 2, memoryMb: 512 })
  t.teardown(() => pool.close())
  const ctx = { method: 'POST', accept: '*/*', providers: {}, allowPrivateNetwork: false } as const

  for (const [slug, h] of registry) {
    t.test(slug, async (t) => {
      const m = h.module
      t.equal(m.slug, slug, 'slug matches the folder')
      t.ok(m.description && m.description.length >= 10, 'has a description')
      t.equal(m.inputSchema.type, 'object', 'input schema is an object schema')
      t.ok(m.output?.contentType && m.output.description, 'declares its output')
      if (m.timeoutMs !== undefined)
        t.ok(
          m.timeoutMs > 0 && m.timeoutMs <= MAX_HANDLER_TIMEOUT_MS,
          `its time limit (${m.timeoutMs} ms) is within MAX_HANDLER_TIMEOUT_MS`,
        )
      for (const [name, prop] of Object.entries(m.inputSchema.properties ?? {}))
        t.ok(prop.description, `${name} is documented`)

      const example = structuredClone(m.example)
      t.equal(h.validate(example, 'body'), null, 'the example is valid')
      const out = await pool.run({ file: h.file, slug }, example, ctx, 60_000)
      if (m.providers?.length) {
        // provider-backed: without its settings it must say so (503), never invent an answer;
        // its own test runs it against a stand-in provider
        t.match(
          out,
          { kind: 'upstream', code: 'upstream_not_configured' },
          `unconfigured, the example gets upstream_not_configured: ${JSON.stringify(out).slice(0, 300)}`,
        )
      } else if (m.network) {
        // reaches the public internet itself: with no network (CI) a clear 502 (or 422: the
        // example's host does not resolve here), never a crash
        const clear =
          out.kind === 'ok' ||
          (out.kind === 'upstream' && out.code === 'upstream_failed') ||
          (out.kind === 'input' && out.status === 422)
        t.ok(clear, `the example runs or fails clearly: ${JSON.stringify(out).slice(0, 300)}`)
      } else t.equal(out.kind, 'ok', `the example runs in the pool: ${JSON.stringify(out).slice(0, 300)}`)
      if (out.kind === 'ok') {
        const base = (s: string) => s.split(';')[0]!.trim()
        t.equal(base(out.contentType), base(m.output.contentType), 'returns the declared content type')
        t.ok(out.status < 400, 'success status')
      }

      const props = Object.entries(m.inputSchema.properties ?? {}).filter(([, p]) => p.type !== undefined)
      if (props.length === 0) return
      const [name, prop] = props[0]!
      const bad = { ...structuredClone(m.example), [name]: wrongValue(prop.type) }
      const problem = h.validate(bad, 'body')
      t.ok(problem, 'an input of the wrong type is refused')
      t.match(problem?.field ?? '', name, 'naming the field')
    })
  }
})

t.test('a provider-backed handler needs no setting beyond the ones it declares', async (t) => {
  // every declared setting set (URLs to a closed local port): the example may fail (502), but
  // asking for a setting it did not declare would be answered upstream_not_configured, and the
  // proxy would then take paid calls for an endpoint that can only fail
  const registry = await loadHandlerRegistry()
  const pool = createHandlerPool({ maxThreads: 2, memoryMb: 512, ioThreads: 1, ioConcurrency: 16 })
  t.teardown(() => pool.close())
  const kinds = new Map(PROVIDER_SETTINGS.map((s) => [s.name, s.kind]))
  // settings with a shape of their own (a malformed one is rightly "not configured")
  const SHAPED: Record<string, string> = {
    SMTP_URL: 'smtp://127.0.0.1:9',
    WALLET_SCORE_RPC_URL: 'http://127.0.0.1:9',
    WALLET_SCORE_AAVE_POOL: '0x0000000000000000000000000000000000000001',
  }
  const withProviders = [...registry].filter(([, h]) => settingNames(h.module).length > 0)
  t.ok(withProviders.length >= 20, `${withProviders.length} provider-backed handlers`)
  await Promise.all(
    withProviders.map(async ([slug, h]) => {
      const providers = Object.fromEntries(
        settingNames(h.module).map((n) => [
          n,
          SHAPED[n] ?? (kinds.get(n) === 'url' ? 'http://127.0.0.1:9' : 'contract-test'),
        ]),
      )
      const out = await pool.run(
        { file: h.file, slug, io: h.io },
        structuredClone(h.module.example),
        { method: 'POST', accept: '*/*', providers, allowPrivateNetwork: false },
        60_000,
      )
      t.not(
        out.kind === 'upstream' && out.code,
        'upstream_not_configured',
        `${slug} with its declared settings: ${JSON.stringify(out).slice(0, 300)}`,
      )
    }),
  )
})
