import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, symlinkSync, utimesSync, writeFileSync, copyFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { COMMANDS, runCli } from '../../../src/cli/main.js'
import { captureIo } from './cli-io.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
const bin = path.join(root, 'bin', 'tollgate.js')
const run = promisify(execFile)

t.test('tollgate --version and -V: the package version, text or --json', async (t) => {
  const { version } = JSON.parse((await import('node:fs')).readFileSync(path.join(root, 'package.json'), 'utf8'))
  const c = captureIo({})
  t.equal(await runCli(['--version'], c.io), 0, c.err())
  t.equal(c.out(), `tollgate ${version}\n`)
  const j = captureIo({})
  t.equal(await runCli(['--json', '--version'], j.io), 0)
  t.same(j.json(), { version })
  const v = captureIo({})
  t.equal(await runCli(['-V'], v.io), 0)
  t.equal(v.out(), `tollgate ${version}\n`)
})

t.test('tollgate --help names every command', async (t) => {
  const c = captureIo({})
  t.equal(await runCli(['--help'], c.io), 0)
  for (const name of Object.keys(COMMANDS)) t.match(c.out(), new RegExp(`^  (\\S+ )*${name}\\b`, 'm'), name)
})

t.test('--help and budget load no viem, fastify, pg, redis or kysely (each command loads what it uses)', async (t) => {
  for (const args of [['--help'], ['budget'], ['payments', 'list']]) {
    const r = await run(process.execPath, [bin, ...args], {
      env: {
        ...process.env,
        HOME: mkdtempSync(path.join(os.tmpdir(), 'tg-cli-bin-')),
        TOLLGATE_CLI_FROM_SOURCE: '1',
        TOLLGATE_API_URL: 'http://127.0.0.1:9',
        TOLLGATE_API_KEY: 'sk_test_x',
        TOLLGATE_AGENT_KEY: 'ak_test_x',
        NODE_DEBUG: 'esm',
      },
    }).catch((err: { stderr: string }) => err)
    const loaded = new Set(
      [...r.stderr.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)\//g)].map((m) => m[1]!).filter((p) => p !== 'tsx'),
    )
    for (const heavy of ['viem', 'fastify', 'pg', 'ioredis', 'kysely', 'bullmq', 'ox', '@noble/curves'])
      t.notOk(loaded.has(heavy), `tollgate ${args.join(' ')} does not load ${heavy}`)
  }
})

t.test('the bin runs the build when it is fresh, the source (saying so) when it is missing or older', async (t) => {
  // a stand-in checkout: bin/tollgate.js, a "built" and a "source" main that say which they are
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tg-cli-bin-'))
  mkdirSync(path.join(dir, 'bin'))
  copyFileSync(bin, path.join(dir, 'bin', 'tollgate.js'))
  symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'))
  writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}\n')
  mkdirSync(path.join(dir, 'src', 'cli'), { recursive: true })
  const main = (which: string) =>
    `export async function runCli(argv) { process.stdout.write('${which} ' + argv.join(' ')); return 0 }\n`
  writeFileSync(path.join(dir, 'src', 'cli', 'main.ts'), main('source'))
  const tollgate = (env: Record<string, string> = {}) =>
    run(process.execPath, [path.join(dir, 'bin', 'tollgate.js'), '--help'], { env: { ...process.env, ...env } })

  let r = await tollgate()
  t.equal(r.stdout, 'source --help', 'no build: the source')
  t.match(r.stderr, /the built CLI is missing: running from source \(slower\)\. npm run build:cli/)

  mkdirSync(path.join(dir, 'dist', 'src', 'cli'), { recursive: true })
  writeFileSync(path.join(dir, 'dist', 'src', 'cli', 'main.js'), main('built'))
  writeFileSync(path.join(dir, 'dist', 'cli-build.json'), JSON.stringify({ sources: ['src/cli/main.ts'] }))
  const past = new Date(Date.now() - 60_000)
  utimesSync(path.join(dir, 'src', 'cli', 'main.ts'), past, past)
  r = await tollgate()
  t.equal(r.stdout, 'built --help', 'a fresh build: the build')
  t.equal(r.stderr, '', 'and nothing said')

  r = await tollgate({ TOLLGATE_CLI_FROM_SOURCE: '1' })
  t.equal(r.stdout, 'source --help', 'TOLLGATE_CLI_FROM_SOURCE=1: the source')
  t.equal(r.stderr, '', 'without the note')

  const future = new Date(Date.now() + 60_000)
  utimesSync(path.join(dir, 'src', 'cli', 'main.ts'), future, future)
  r = await tollgate()
  t.equal(r.stdout, 'source --help', 'a source newer than the build: the source')
  t.match(r.stderr, /the built CLI is older than src\/cli\/main\.ts: running from source/)
})
