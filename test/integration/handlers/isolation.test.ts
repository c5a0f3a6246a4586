import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { withDevnet } from '../../helpers/devnet.js'
import { handlerProcesses } from '../../helpers/handler-processes.js'
import { decodeRequired, signFor, v2Header } from '../../helpers/pay.js'
import { startTestPlatform, type TestPlatform } from '../../helpers/platform.js'

// Issue #22: whatever a hosted handler does to its process ends that process only. Each kind of
// death goes through the real proxy as a paid call while other paid calls run.
const handlersDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/process-handlers')

interface Kind {
  slug: string
  /** what the buyer reads after "the endpoint failed: " */
  detail: string
  /** the platform it needs (the invalid-size error takes a heap of nearly 2 GB to reach) */
  big?: boolean
}

const kinds: Kind[] = [
  // V8 fatal errors: the heap limit (FatalProcessOutOfMemory), and with TOLLGATE_SOAK=1 the
  // invalid-size error of issue #22 itself, which takes 2.6 GB and 5-15 s of growing to reach
  ...(process.env.TOLLGATE_SOAK === '1'
    ? [{ slug: 'v8-invalid-size', detail: 'the handler process died', big: true }]
    : []),
  { slug: 'heap-oom', detail: 'the handler process died' },
  { slug: 'segfault', detail: 'the handler process died' },
  { slug: 'aborts', detail: 'the handler process died' },
  { slug: 'exits', detail: 'the handler process died' },
  { slug: 'balloons', detail: 'the handler process passed its memory limit' },
]

t.test(
  'a handler that kills its process fails alone: the proxy serves on, other calls succeed, nothing is charged',
  async (t) => {
    const devnet = await withDevnet(t)
    // two compute processes, so a good call always has one the crash is not in
    const small = await startTestPlatform(t, {
      devnet,
      proxy: { handlersDir },
      env: { HANDLER_MAX_THREADS: '2', HANDLER_MEMORY_MB: '128', HANDLER_RSS_MB: '320' },
    })
    let big: TestPlatform | undefined
    for (const kind of kinds) {
      t.test(kind.slug, async (t) => {
        const platform = kind.big
          ? (big ??= await startTestPlatform(t, {
              devnet,
              proxy: { handlersDir },
              env: { HANDLER_MAX_THREADS: '2', HANDLER_MEMORY_MB: '4096', HANDLER_RSS_MB: '6000' },
            }))
          : small
        await crashOnce(t, platform, kind)
      })
    }
  },
)

async function crashOnce(t: Test, platform: TestPlatform, kind: Kind): Promise<void> {
  const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)
  const challenges = new Map<string, ReturnType<typeof decodeRequired>>()
  const paid = async (slug: string, body: object) => {
    const url = `${platform.proxyUrl}/tollgate/toolbox/${slug}`
    let required = challenges.get(slug)
    if (!required) challenges.set(slug, (required = decodeRequired((await fetch(url)).headers.get('payment-required'))))
    const signed = await signFor(payer, required)
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'payment-signature': v2Header(required, signed) },
      body: JSON.stringify(body),
    })
    return {
      status: res.status,
      json: (await res.json()) as Record<string, unknown>,
      receipt: res.headers.get('payment-response'),
      nonce: signed.authorization.nonce,
      at: Date.now(),
    }
  }
  const meet = (n: number, hold = 0) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rendezvous-'))
    return Promise.all(Array.from({ length: n }, () => paid('rendezvous', { dir, n, hold })))
  }

  // both compute processes up: two calls that can only answer together answer from two processes
  const before = await meet(2)
  t.same(
    before.map((r) => r.status),
    [200, 200],
    'two calls meet in two handler processes',
  )
  const pidsBefore = new Set(before.map((r) => r.json.pid as number))
  t.equal(pidsBefore.size, 2)

  const [crash, ...good] = await Promise.all([
    paid(kind.slug, {}),
    ...Array.from({ length: 6 }, (_, i) => paid('echo-bytes', { msg: `good ${i}` })),
  ])
  t.equal(crash.status, 502, JSON.stringify(crash.json))
  t.equal(crash.json.code, 'handler_failed')
  t.equal(crash.json.message, `the endpoint failed: ${kind.detail}; nothing was charged`)
  t.notOk(crash.receipt, 'no PAYMENT-RESPONSE: nothing settled')
  t.same(
    good.map((g) => g.status),
    Array(6).fill(200),
    'the good calls running meanwhile all succeeded',
  )
  t.same(
    good.map((g) => g.json.echo),
    Array.from({ length: 6 }, (_, i) => `good ${i}`),
  )

  const row = await platform.deps.db
    .selectFrom('payments')
    .select(['status', 'failure_reason', 'tx_hash', 'settled_at'])
    .where('nonce', '=', crash.nonce)
    .executeTakeFirstOrThrow()
  t.same(
    row,
    { status: 'voided', failure_reason: 'handler_failed', tx_hash: null, settled_at: null },
    'the crashed call is voided, never charged',
  )

  const health = await fetch(`${platform.proxyUrl}/healthz`)
  t.equal(health.status, 200, 'the proxy is up')

  // a replacement started at once: within 5 s two calls again meet in two processes, one new
  const after = await meet(2)
  const servedAt = Math.max(...after.map((r) => r.at))
  t.same(
    after.map((r) => r.status),
    [200, 200],
  )
  const pidsAfter = new Set(after.map((r) => r.json.pid as number))
  t.equal(pidsAfter.size, 2, 'two processes again')
  t.equal([...pidsAfter].filter((p) => !pidsBefore.has(p)).length, 1, 'one of them is the replacement')
  t.ok(servedAt - crash.at < 5_000, `the replacement served within 5 s of the crash (${servedAt - crash.at} ms)`)
  t.equal(
    handlerProcesses().filter((p) => pidsBefore.has(p) || pidsAfter.has(p)).length,
    2,
    'the dead process is gone, not left behind',
  )
}
