import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { workerExecArgv } from '../../../src/pool/handler-pool.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const fixtures = path.resolve(here, '../../fixtures/handlers')
/** The pool and the registry, imported by a child process's script as the proxy imports them. */
const IMPORT_POOL = [
  `const { createHandlerPool } = await import(${JSON.stringify(pathToFileURL(path.resolve(here, '../../../src/pool/handler-pool.ts')).href)})`,
  `const { loadHandlerRegistry } = await import(${JSON.stringify(pathToFileURL(path.resolve(here, '../../../src/pool/handler-registry.ts')).href)})`,
].join('\n')

/** The node flags the Procfile starts the proxy with. */
function procfileFlags(): string[] {
  const line = readFileSync(path.resolve(here, '../../../Procfile'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('proxy:'))!
  return line.split(/\s+/).filter((w) => w.startsWith('--'))
}

t.test('pool workers get the module-loading options, not V8 or process-wide flags', async (t) => {
  t.same(
    workerExecArgv(['--v8-pool-size=1', '--heap-growing-percent=300', '--import', 'tsx', '--max-old-space-size=512']),
    ['--import', 'tsx'],
  )
  t.same(workerExecArgv(['--import', 'tsx', '--v8-pool-size', '2', '--enable-source-maps']), [
    '--import',
    'tsx',
    '--enable-source-maps',
  ])
  t.same(
    workerExecArgv(['--import=file:///x/tsx.mjs', '--require', './a.cjs', '--conditions=dev', '--title', 'tollgate']),
    ['--import=file:///x/tsx.mjs', '--require', './a.cjs', '--conditions=dev'],
  )
  t.same(workerExecArgv([]), [])
})

t.test(
  'a process started as the Procfile starts it (--v8-pool-size=1 --heap-growing-percent=300) runs hosted handlers in its pool',
  async (t) => {
    const script = `
    ${IMPORT_POOL}
    const echo = (await loadHandlerRegistry(${JSON.stringify(fixtures)})).get('echo')
    const p = createHandlerPool({ maxThreads: 1, memoryMb: 128 })
    const out = await p.run({ file: echo.file, slug: 'echo' }, { msg: 'hi' }, { method: 'POST', accept: '*/*', providers: {}, allowPrivateNetwork: false }, 10000)
    await p.close()
    process.stdout.write(JSON.stringify({ kind: out.kind, status: out.status }))
  `
    const dir = t.testdir({ 'main.mjs': script })
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [...procfileFlags(), '--import', 'tsx', path.join(dir, 'main.mjs')],
      { timeout: 60_000 },
    )
    t.same(JSON.parse(stdout), { kind: 'ok', status: 200 })
  },
)

t.test(
  'run from source as npm start runs it (--import tsx), handler input and provider errors keep their kind',
  async (t) => {
    const script = `
    ${IMPORT_POOL}
    const handlers = await loadHandlerRegistry()
    const p = createHandlerPool({ maxThreads: 1, memoryMb: 256 })
    const ctx = { method: 'GET', accept: '*/*', providers: { FRANKFURTER_URL: 'http://127.0.0.1:1' }, allowPrivateNetwork: false }
    const run = (slug, input, io) => p.run({ file: handlers.get(slug).file, slug, io }, input, ctx, 20000)
    const outs = [await run('web-scraper', { url: 'http://127.0.0.1/' }, true), await run('currency-converter', { from: 'USD', to: 'EUR' }, true), await run('url-slug-generator', { text: 'x'.repeat(10) }, false)]
    await p.close()
    process.stdout.write(JSON.stringify(outs.map((o) => [o.kind, o.field ?? o.code ?? o.status])))
  `
    const dir = t.testdir({ 'main.mjs': script })
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [...procfileFlags(), '--import', 'tsx', path.join(dir, 'main.mjs')],
      { timeout: 60_000 },
    )
    t.same(
      JSON.parse(stdout),
      [
        ['input', 'url'],
        ['upstream', 'upstream_failed'],
        ['ok', 200],
      ],
      'a refused URL is a 400 on url, an unreachable provider a 502, not crashes',
    )
  },
)
