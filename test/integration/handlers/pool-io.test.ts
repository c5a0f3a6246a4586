import { createServer, type ServerResponse } from 'node:http'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { createHandlerPool } from '../../../src/pool/handler-pool.js'
import { loadHandlerRegistry } from '../../../src/pool/handler-registry.js'
import { until } from '../../helpers/until.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const ctx = { method: 'POST' as const, accept: '*/*', allowPrivateNetwork: true }

t.test('provider-bound calls share the I/O lane and do not hold the compute processes', async (t) => {
  const held: ServerResponse[] = []
  const closedEarly = new Set<number>()
  const server = createServer((req, res) => {
    const i = held.push(res) - 1
    res.once('close', () => {
      if (!res.writableEnded) closedEarly.add(i)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => server.close(r)))
  const providers = { HOLD_URL: `http://127.0.0.1:${(server.address() as { port: number }).port}` }

  const io = await loadHandlerRegistry(path.join(here, '../../fixtures/io-handlers'))
  const compute = await loadHandlerRegistry(path.join(here, '../../fixtures/handlers'))
  const holds = io.get('holds')!
  t.equal(holds.io, true, 'a handler with provider settings is registered for the I/O lane')
  t.equal(compute.get('echo')!.io, false, 'a pure one is not')

  const pool = createHandlerPool({ maxThreads: 1, memoryMb: 128, ioThreads: 1, ioConcurrency: 9 })
  t.teardown(() => pool.close())
  const calls = Array.from({ length: 8 }, (_, i) =>
    pool.run({ file: holds.file, slug: 'holds', io: true }, { tag: `c${i}` }, { ...ctx, providers }, 30_000),
  )
  await until('eight calls at the provider', async () => held.length === 8)
  t.equal(held.length, 8, 'eight calls wait on the provider at once, in one I/O process')

  const echo = compute.get('echo')!
  const quick = await pool.run(
    { file: echo.file, slug: 'echo' },
    { msg: 'meanwhile' },
    { ...ctx, providers: {} },
    5_000,
  )
  t.equal(quick.kind, 'ok', 'a compute call runs while all of them wait')
  t.equal(held.length, 8, '... and none of them has been answered yet')

  const late = pool.run({ file: holds.file, slug: 'holds', io: true }, { tag: 'late' }, { ...ctx, providers }, 300)
  await until('the late call at the provider', async () => held.length === 9)
  t.equal((await late).kind, 'timeout', 'past its time a call is answered at once...')
  await until('the late provider request closed', async () => closedEarly.has(8))
  t.ok(closedEarly.has(8), '... and its provider request is aborted (the task signal), not left open for 30 s')
  t.equal(closedEarly.size, 1, 'the calls within their time are untouched')

  // all nine slots were taken (8 held + late); the aborted call gave its slot back
  const after = pool.run({ file: holds.file, slug: 'holds', io: true }, { tag: 'after' }, { ...ctx, providers }, 30_000)
  await until('a tenth call at the provider', async () => held.length === 10)
  t.equal(held.length, 10, 'a new call gets the freed slot while the eight still wait')
  held[9]!.end('released')
  t.equal((await after).kind, 'ok')

  for (const res of held.slice(0, 8)) res.end('released')
  const outs = await Promise.all(calls)
  const bodies = outs.map((o) => (o.kind === 'ok' ? JSON.parse(String(o.body)) : o))
  t.same(
    bodies.map((b) => b.tag),
    Array.from({ length: 8 }, (_, i) => `c${i}`),
  )
  t.ok(bodies.every((b) => b.answer === 'released'))
  t.equal(new Set(bodies.map((b) => b.pid)).size, 1, 'all in the one I/O process')
  t.not(bodies[0].pid, process.pid, '... which is not this one')
})
