import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type ServerResponse } from 'node:http'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import t from 'tap'
import { createHandlerPool } from '../../../src/pool/handler-pool.js'
import { loadHandlerRegistry } from '../../../src/pool/handler-registry.js'
import { alive, handlerProcesses } from '../../helpers/handler-processes.js'
import { until } from '../../helpers/until.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const dirs = {
  compute: path.join(here, '../../fixtures/handlers'),
  io: path.join(here, '../../fixtures/io-handlers'),
  process: path.join(here, '../../fixtures/process-handlers'),
}
const ctx = { method: 'POST' as const, accept: '*/*', providers: {}, allowPrivateNetwork: true }
const registry = new Map([
  ...(await loadHandlerRegistry(dirs.compute)),
  ...(await loadHandlerRegistry(dirs.io)),
  ...(await loadHandlerRegistry(dirs.process)),
])
const h = (slug: string) => {
  const r = registry.get(slug)!
  return { file: r.file, slug, io: r.io }
}
const body = (out: { kind: string; body?: unknown }) => JSON.parse(String(out.body))

t.test('a compute call past its time is answered timeout and its process replaced', async (t) => {
  const pool = createHandlerPool({ maxThreads: 1, memoryMb: 128 })
  t.teardown(() => pool.close())
  const first = await pool.run(h('echo-bytes'), { msg: 'a' }, ctx, 20_000)
  const pid = body(first).pid as number
  t.not(pid, process.pid, 'the call ran in another process')
  t.same(handlerProcesses(), [pid], 'a handler process of this one, as the operating system sees it')
  t.same(await pool.run(h('loops'), {}, ctx, 800), { kind: 'timeout', timeoutMs: 800 })
  const next = await pool.run(h('echo-bytes'), { msg: 'b' }, ctx, 20_000)
  t.equal(next.kind, 'ok')
  t.not(body(next).pid, pid, 'a new process answers')
  t.notOk(alive(pid), 'the looping one was killed')
})

t.test('binary output crosses as it is; close() leaves no handler process behind', async (t) => {
  const pool = createHandlerPool({ maxThreads: 1, memoryMb: 128 })
  const out = await pool.run(h('echo-bytes'), { size: 3_000_000 }, ctx, 20_000)
  t.equal(out.kind, 'ok')
  const bytes = out.kind === 'ok' ? (out.body as Uint8Array) : new Uint8Array()
  t.equal(bytes.byteLength, 3_000_000)
  t.ok(
    bytes.every((b, i) => b === (i & 255)),
    'every byte as the handler wrote it',
  )
  t.equal(handlerProcesses().length, 1)
  await pool.close()
  t.same(handlerProcesses(), [], 'every handler process ended with the pool')
  t.same(await pool.run(h('echo'), { msg: 'late' }, ctx, 1000), {
    kind: 'crashed',
    message: 'the handler pool is closed',
    detail: 'the proxy is shutting down',
  })
})

t.test('handler processes do not get the platform secrets of the environment', async (t) => {
  const set = {
    TOLLGATE_MASTER_KEY: 'k'.repeat(64),
    RELAYER_PRIVATE_KEYS: '0xabc',
    DATABASE_URL: 'postgres://u:p@h/db',
    BRAVE_SEARCH_API_KEY: 'brave',
    MY_SERVICE_TOKEN: 'tok',
    TOLLGATE_HARMLESS_PROBE: 'x',
    PLAIN_SETTING_FOR_TEST: 'kept',
  }
  Object.assign(process.env, set)
  t.teardown(() => {
    for (const k of Object.keys(set)) delete process.env[k]
  })
  const pool = createHandlerPool({ maxThreads: 1, memoryMb: 128 })
  t.teardown(() => pool.close())
  const names = body(await pool.run(h('env-names'), {}, ctx, 20_000)).names as string[]
  t.ok(names.includes('PLAIN_SETTING_FOR_TEST'), 'other variables are there')
  t.ok(names.includes('PATH'))
  for (const k of [
    'TOLLGATE_MASTER_KEY',
    'RELAYER_PRIVATE_KEYS',
    'DATABASE_URL',
    'BRAVE_SEARCH_API_KEY',
    'MY_SERVICE_TOKEN',
    'TOLLGATE_HARMLESS_PROBE',
  ])
    t.notOk(names.includes(k), `no ${k}`)
})

t.test('an I/O process that dies ends the calls sharing it, and only those', async (t) => {
  const held: ServerResponse[] = []
  const server = createServer((_req, res) => void held.push(res))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => server.close(r)))
  const providers = { HOLD_URL: `http://127.0.0.1:${(server.address() as { port: number }).port}` }
  const pool = createHandlerPool({ maxThreads: 1, memoryMb: 128, ioThreads: 1, ioConcurrency: 8 })
  t.teardown(() => pool.close())
  const waiting = Array.from({ length: 3 }, (_, i) =>
    pool.run(h('holds'), { tag: `w${i}` }, { ...ctx, providers }, 30_000),
  )
  await until('three calls at the provider', async () => held.length === 3)
  const crash = pool.run(h('io-segfault'), { ms: 100 }, ctx, 30_000)
  const compute = await pool.run(h('echo'), { msg: 'meanwhile' }, ctx, 20_000)
  const outs = await Promise.all([crash, ...waiting])
  t.equal(compute.kind, 'ok', 'a compute call is untouched')
  for (const out of outs)
    t.match(out, { kind: 'crashed', detail: 'the handler process died', message: /was killed by SIGSEGV/ })
  const again = pool.run(h('holds'), { tag: 'again' }, { ...ctx, providers }, 30_000)
  await until('a call at the provider from the new I/O process', async () => held.length === 4)
  held[3]!.end('back')
  t.match(body(await again), { tag: 'again', answer: 'back' }, 'the lane serves again')
})

t.test('a supervisor killed outright takes its handler processes with it, a spinning one too', async (t) => {
  const dir = t.testdir({})
  const spinning = path.join(dir, 'spinning')
  const script = `
    const { createHandlerPool } = await import(${JSON.stringify(pathToFileURL(path.resolve(here, '../../../src/pool/handler-pool.ts')).href)})
    const pool = createHandlerPool({ maxThreads: 1, memoryMb: 128 })
    void pool.run({ file: ${JSON.stringify(registry.get('spins')!.file)}, slug: 'spins' }, { file: ${JSON.stringify(spinning)} }, { method: 'POST', accept: '*/*', providers: {}, allowPrivateNetwork: false }, 60000)
    setInterval(() => {}, 1000)
  `
  writeFileSync(path.join(dir, 'supervisor.mjs'), script)
  const supervisor = spawn(process.execPath, ['--import', 'tsx', path.join(dir, 'supervisor.mjs')], {
    stdio: 'inherit',
  })
  t.teardown(() => supervisor.kill('SIGKILL'))
  const pid = Number(
    await until('the handler spinning', async () => existsSync(spinning) && readFileSync(spinning, 'utf8')),
  )
  t.same(handlerProcesses(supervisor.pid!), [pid], 'in a handler process of the supervisor')
  supervisor.kill('SIGKILL')
  await until('the handler process gone', async () => !alive(pid), 5_000).catch(() => {})
  t.notOk(alive(pid), 'it did not outlive its supervisor')
  if (alive(pid)) process.kill(pid, 'SIGKILL')
})

t.test(
  'handler processes that cannot start: waiting calls are answered at once, not left to their time limit',
  async (t) => {
    const saved = process.env.NODE_OPTIONS
    // every handler process now fails as it starts (a broken build would)
    process.env.NODE_OPTIONS = `${saved ?? ''} --require ${path.join(here, 'no-such-preload.cjs')}`
    t.teardown(() => {
      if (saved === undefined) delete process.env.NODE_OPTIONS
      else process.env.NODE_OPTIONS = saved
    })
    const pool = createHandlerPool({ maxThreads: 1, memoryMb: 128 })
    t.teardown(() => pool.close())
    const t0 = Date.now()
    const out = await pool.run(h('echo'), { msg: 'x' }, ctx, 60_000)
    t.match(out, { kind: 'crashed', detail: 'the handler processes cannot start', message: /fail to start/ })
    t.ok(Date.now() - t0 < 30_000, `answered after three failed starts, ${Date.now() - t0} ms, not after 60 s`)
  },
)
