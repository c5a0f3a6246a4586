/* global process, console, URL, performance, setTimeout, clearTimeout, Buffer */
// `npm test`: runs the test files, `jobs` at a time, each as its own `node --import=tsx <file>` process
// (tap's own test API inside each file: a tap test file runs standalone and prints TAP). Why not tap's
// runner: it starts every test process, and every node process a test spawns, with its process-info
// loader, which reads each loaded module back for coverage bookkeeping even with coverage off; with
// ~1,200 modules per file that costs seconds of CPU per process (README.md "Tests", bench/README.md).
//
// Configuration is package.json's "tap" section, so `npx tap <file>` still runs one file the same way:
// include (globs of the form <dir>/**/*<suffix>), serial (files or folders run alone, after the others),
// jobs, timeout (seconds a file may take; its process group is killed after it) and node-arg.
//
// Usage: npm test [-- <file or folder> ...]      TOLLGATE_TEST_JOBS overrides jobs.
// Prints one `ok`/`not ok` line per file (a failed file's whole output under it, indented), then tap's
// totals line `# { total, pass, fail, ... }`; exits 1 when a file failed. Each file's output is kept
// in .tap/test-results/<file>.tap and every file's wall time in .tap/run-times.json (.ci/slowest.mjs).
import { spawn } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const root = resolve(dirname(new URL(import.meta.url).pathname), '..')
const config = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).tap ?? {}
const jobs = Number(process.env.TOLLGATE_TEST_JOBS ?? config.jobs ?? 2)
const timeoutS = Number(config.timeout ?? 30)
const nodeArgs = ['--enable-source-maps', ...(config['node-arg'] ?? [])]

/** Files under `dir` (recursively) whose names end in `suffix`, as paths relative to the root. */
function walk(dir, suffix, out = []) {
  let names
  try {
    names = readdirSync(join(root, dir), { withFileTypes: true })
  } catch {
    return out
  }
  for (const d of names) {
    if (d.name === 'node_modules' || d.name.startsWith('.')) continue
    const path = join(dir, d.name)
    if (d.isDirectory()) walk(path, suffix, out)
    else if (d.name.endsWith(suffix)) out.push(path)
  }
  return out
}

function includedFiles() {
  return (config.include ?? ['test/**/*.test.ts']).flatMap((glob) => {
    const m = /^(.*?)\/\*\*\/\*(.+)$/.exec(glob)
    if (!m) throw new Error(`run-tests: include pattern ${glob} is not of the form <dir>/**/*<suffix>`)
    return walk(m[1], m[2])
  })
}

/** The files named on the command line (a folder: its test files), or every included file. */
function selectedFiles() {
  const all = includedFiles()
  const args = process.argv.slice(2)
  if (args.length === 0) return all.sort()
  const picked = new Set()
  for (const arg of args) {
    const rel = relative(root, resolve(arg))
    let isDir = false
    try {
      isDir = statSync(join(root, rel)).isDirectory()
    } catch {
      throw new Error(`run-tests: no such file or folder: ${arg}`)
    }
    const matched = isDir ? all.filter((f) => f.startsWith(`${rel}/`)) : [rel]
    if (matched.length === 0) throw new Error(`run-tests: no test files under ${arg}`)
    for (const f of matched) picked.add(f)
  }
  return [...picked].sort()
}

const isSerial = (file) => (config.serial ?? []).some((s) => file === s || file.startsWith(`${s.replace(/\/$/, '')}/`))

/** tap's totals comment, printed by a standalone root test at its end: `# { total: 3, pass: 3 }`. */
function countsOf(output) {
  const line = output.match(/^# \{ total: .*\}$/gm)?.pop()
  if (!line) return undefined
  const counts = {}
  for (const [, k, v] of line.matchAll(/(\w+): (\d+)/g)) counts[k] = Number(v)
  return counts
}

/** Process groups of the files running now: an interrupted run takes them with it. */
const running = new Set()
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'])
  process.on(sig, () => {
    for (const pid of running)
      try {
        process.kill(-pid, 'SIGKILL')
      } catch {
        // already gone
      }
    process.exit(130)
  })

function runFile(file) {
  return new Promise((done) => {
    const started = performance.now()
    const child = spawn(process.execPath, [...nodeArgs, file], {
      cwd: root,
      env: { ...process.env, TAP_TIMEOUT: String(timeoutS) },
      stdio: ['ignore', 'pipe', 'pipe'],
      // its own process group, so a timeout kills what it spawned as well
      detached: true,
    })
    running.add(child.pid)
    const chunks = []
    child.stdout.on('data', (c) => chunks.push(c))
    child.stderr.on('data', (c) => chunks.push(c))
    let timedOut = false
    // tap's own timeout (TAP_TIMEOUT) ends the file first and reports what was pending; this is the backstop
    const timer = setTimeout(
      () => {
        timedOut = true
        try {
          process.kill(-child.pid, 'SIGKILL')
        } catch {
          // already gone
        }
      },
      (timeoutS + 30) * 1000,
    )
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      running.delete(child.pid)
      // whatever the file left running in its process group goes with it
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {
        // nothing left
      }
      const output = Buffer.concat(chunks).toString('utf8')
      const counts = countsOf(output)
      let problem
      if (timedOut) problem = `killed after ${timeoutS + 30} s`
      else if (signal) problem = `ended by ${signal}`
      else if (code !== 0) problem = `exit code ${code}`
      else if (!counts) problem = 'ended without its totals (the tests did not finish)'
      else if (counts.fail) problem = `${counts.fail} failed`
      done({ file, ms: performance.now() - started, output, counts, problem })
    })
  })
}

const results = []
let printed = 0
function report(r) {
  results.push(r)
  const n = ++printed
  const time = `# time=${Math.round(r.ms)}ms`
  mkdirSync(dirname(join(root, '.tap/test-results', `${r.file}.tap`)), { recursive: true })
  writeFileSync(join(root, '.tap/test-results', `${r.file}.tap`), r.output)
  if (!r.problem) {
    console.log(`ok ${n} - ${r.file} ${time}`)
    return
  }
  console.log(`not ok ${n} - ${r.file} ${time}`)
  for (const line of r.output.split('\n')) console.log(`    ${line}`)
  console.log(`  ---\n  file: ${r.file}\n  problem: ${r.problem}\n  ...`)
}

async function runAll(files, width) {
  const queue = [...files]
  await Promise.all(
    Array.from({ length: Math.min(width, queue.length) }, async () => {
      for (let f = queue.shift(); f; f = queue.shift()) report(await runFile(f))
    }),
  )
}

const files = selectedFiles()
const serial = files.filter(isSerial)
const parallel = files.filter((f) => !isSerial(f))
console.log(`TAP version 14`)
console.log(`# ${files.length} test files: ${parallel.length} run ${jobs} at a time, then ${serial.length} alone`)
const started = performance.now()
await runAll(parallel, jobs)
await runAll(serial, 1)

const totals = {}
for (const r of results) for (const [k, v] of Object.entries(r.counts ?? {})) totals[k] = (totals[k] ?? 0) + v
const failedFiles = results.filter((r) => r.problem)
// a file that died before its totals counts as one failure, so the totals never read as clean
if (failedFiles.some((r) => !r.counts?.fail)) {
  totals.total = (totals.total ?? 0) + failedFiles.filter((r) => !r.counts?.fail).length
  totals.fail = (totals.fail ?? 0) + failedFiles.filter((r) => !r.counts?.fail).length
}
mkdirSync(join(root, '.tap'), { recursive: true })
writeFileSync(
  join(root, '.tap/run-times.json'),
  JSON.stringify(results.map((r) => ({ file: r.file, ms: Math.round(r.ms), ok: !r.problem }))),
)
console.log(`1..${results.length}`)
if (failedFiles.length) console.log(`# failed files: ${failedFiles.map((r) => r.file).join(', ')}`)
console.log(
  `# { ${Object.entries(totals)
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ')} }`,
)
console.log(`# time=${Math.round(performance.now() - started)}ms`)
process.exitCode = failedFiles.length ? 1 : 0
