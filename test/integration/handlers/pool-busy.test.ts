import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { createHandlerPool } from '../../../src/pool/handler-pool.js'
import { loadHandlerRegistry } from '../../../src/pool/handler-registry.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')
const ctx = { method: 'POST' as const, accept: '*/*', providers: {}, allowPrivateNetwork: false }

t.test('past maxQueue waiting calls, a call is answered busy at once; the pool keeps serving', async (t) => {
  const registry = await loadHandlerRegistry(fixtures)
  const loops = registry.get('loops')!
  const echo = registry.get('echo')!
  const pool = createHandlerPool({ maxThreads: 1, memoryMb: 128, maxQueue: 1 })
  t.teardown(() => pool.close())
  const running = pool.run({ file: loops.file, slug: 'loops' }, {}, ctx, 1500) // holds the only worker
  await new Promise((r) => setTimeout(r, 300))
  // while the only worker is stuck, more calls than the queue holds arrive
  const t0 = Date.now()
  const calls = Array.from({ length: 6 }, (_, i) =>
    pool
      .run({ file: echo.file, slug: 'echo' }, { msg: `call ${i}` }, ctx, 5000)
      .then((out) => ({ out, ms: Date.now() - t0 })),
  )
  const settled = await Promise.all(calls)
  const busy = settled.filter((c) => c.out.kind === 'busy')
  t.ok(busy.length >= 3, `${busy.length} of 6 answered busy`)
  t.ok(
    busy.every((c) => c.ms < 500),
    'busy answers come at once, not after the stuck call',
  )
  t.ok(
    settled.filter((c) => c.out.kind !== 'busy').every((c) => c.out.kind === 'ok'),
    'the queued calls run once the worker is back',
  )
  t.equal((await running).kind, 'timeout', 'the looping handler times out')
  const again = await pool.run({ file: echo.file, slug: 'echo' }, { msg: 'after' }, ctx, 5000)
  t.equal(again.kind, 'ok')
})
