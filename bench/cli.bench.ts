/**
 * How long the `tollgate` command takes, wall clock from spawn to exit (`npm run bench:cli`):
 *   node -e 0                    Node starting and exiting: the floor
 *   --help, budget, payments list  bin/tollgate.js running the build (dist/), the last two against a
 *                                local platform (devnet, proxy, web API) with a funded agent that
 *                                has paid once
 *   the same from source         TOLLGATE_CLI_FROM_SOURCE=1: src/ through tsx, what every command
 *                                cost before the CLI was built at install
 *   npx tollgate --help          npx in this checkout (npm finds the bin in package.json and loads
 *                                the whole dependency tree to place it), and in a project that has
 *                                tollgate installed (node_modules/.bin/tollgate)
 * Each case runs N times (default 9) after one warm-up; the median and the spread of the wall time
 * are printed, and the median CPU time (user + system, from /usr/bin/time when there is one), which
 * other work on the machine changes far less than the wall time. Nothing is asserted. The CLI is
 * built first (node bin/build-cli.js).
 *
 *   npm run bench:cli -- [runs]
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { userWithKey } from '../test/helpers/accounts.js'
import { startBuyerPlatform } from '../test/helpers/buyer.js'

const runs = Number(process.argv[2] ?? 9)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const bin = path.join(root, 'bin', 'tollgate.js')

execFileSync(process.execPath, [path.join(root, 'bin', 'build-cli.js')], { stdio: 'inherit' })

const teardowns: Array<() => unknown> = []
const t = { teardown: (fn: () => unknown) => teardowns.unshift(fn) }
const p = await startBuyerPlatform(t)
const user = await userWithKey(p.deps)
const agent = await p.agent({ user: user.userId, fund: 1_000_000n })
const home = mkdtempSync(path.join(os.tmpdir(), 'tg-cli-bench-'))
const env = {
  ...process.env,
  HOME: home,
  TOLLGATE_API_URL: p.webUrl,
  TOLLGATE_API_KEY: user.apiKey,
  TOLLGATE_AGENT_KEY: agent.key,
}

const TIME = '/usr/bin/time'
const cpuFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'tg-cli-bench-cpu-')), 'cpu')

/** Wall and CPU milliseconds of one run of `cmd args` in `cwd`; a non-zero exit is an error. */
function timed(
  cmd: string,
  args: string[],
  o: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ wall: number; cpu: number | undefined }> {
  const withTime = existsSync(TIME)
  const [file, argv] = withTime ? [TIME, ['-f', '%U %S', '-o', cpuFile, cmd, ...args]] : [cmd, args]
  const start = performance.now()
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { cwd: o.cwd ?? root, env: o.env ?? env, stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    child.stderr.on('data', (c: Buffer) => (err += c.toString()))
    child.on('error', reject)
    child.on('close', (code) => {
      const wall = performance.now() - start
      if (code !== 0) return reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err}`))
      const [user, sys] = withTime ? readFileSync(cpuFile, 'utf8').trim().split(/\s+/).map(Number) : []
      resolve({ wall, cpu: user === undefined ? undefined : (user + (sys ?? 0)) * 1000 })
    })
  })
}

// one paid call, so budget and payments list have something to show
await timed(process.execPath, [bin, 'fetch', `${p.proxyUrl}/tollgate/toolbox/echo?msg=bench`])

// a project with tollgate installed: npx finds node_modules/.bin/tollgate without loading a tree
const project = mkdtempSync(path.join(os.tmpdir(), 'tg-cli-bench-project-'))
writeFileSync(path.join(project, 'package.json'), '{"name":"bench-project","private":true}\n')
mkdirSync(path.join(project, 'node_modules', '.bin'), { recursive: true })
symlinkSync(bin, path.join(project, 'node_modules', '.bin', 'tollgate'))

const source = { ...env, TOLLGATE_CLI_FROM_SOURCE: '1' }
const cases: Array<[string, string, string[], { cwd?: string; env?: NodeJS.ProcessEnv }?]> = [
  ['node -e 0 (the floor)', process.execPath, ['-e', '0']],
  ['tollgate --help', process.execPath, [bin, '--help']],
  ['tollgate --version', process.execPath, [bin, '--version']],
  ['tollgate budget', process.execPath, [bin, 'budget']],
  ['tollgate payments list', process.execPath, [bin, 'payments', 'list']],
  ['npx tollgate --help (installed in a project)', 'npx', ['tollgate', '--help'], { cwd: project }],
  ['npx tollgate --help (in this checkout)', 'npx', ['tollgate', '--help']],
  ['from source: tollgate --help', process.execPath, [bin, '--help'], { env: source }],
  ['from source: tollgate budget', process.execPath, [bin, 'budget'], { env: source }],
  ['from source: tollgate payments list', process.execPath, [bin, 'payments', 'list'], { env: source }],
]

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
console.log(
  `\nload average at start: ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}; ${runs} runs per case\n`,
)
console.log('| case | wall median ms | wall min ms | wall max ms | CPU median ms |')
console.log('|---|---:|---:|---:|---:|')
for (const [name, cmd, args, o] of cases) {
  await timed(cmd, args, o) // warm-up: the file cache, npx's first look
  const ms: number[] = []
  const cpu: number[] = []
  for (let i = 0; i < runs; i++) {
    const r = await timed(cmd, args, o)
    ms.push(r.wall)
    if (r.cpu !== undefined) cpu.push(r.cpu)
  }
  const f = (x: number) => x.toFixed(0)
  console.log(
    `| ${name} | ${f(median(ms))} | ${f(Math.min(...ms))} | ${f(Math.max(...ms))} | ${cpu.length ? f(median(cpu)) : '-'} |`,
  )
}
console.log(
  `\nload average at the end: ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
)
for (const fn of teardowns) await fn()
