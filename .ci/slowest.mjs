#!/usr/bin/env node
// Prints the slowest test files of the last test run: wall time of each test file's process (start,
// TypeScript loading and the tests), from .tap/run-times.json (bin/run-tests.mjs) or tap's .tap/processinfo/.
// Usage: node .ci/slowest.mjs [count=10]
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const count = Number(process.argv[2] ?? 10)
/** Each test file's wall time: `npm test` (bin/run-tests.mjs) writes .tap/run-times.json; a tap run, .tap/processinfo/. */
function fileTimes() {
  try {
    return JSON.parse(readFileSync('.tap/run-times.json', 'utf8')).map((r) => ({ file: r.file, ms: r.ms }))
  } catch {
    // no run of bin/run-tests.mjs here: tap's own records
  }
  const dir = '.tap/processinfo'
  let names = []
  try {
    names = readdirSync(dir)
  } catch {
    return []
  }
  const files = []
  for (const name of names) {
    let info
    try {
      info = JSON.parse(readFileSync(join(dir, name), 'utf8'))
    } catch {
      // a record a killed child process left empty or half-written: not a test file's
      continue
    }
    // a test file's root process carries its path as externalID; its children (spawned roles) do not
    if (info.externalID && typeof info.runtime === 'number') files.push({ file: info.externalID, ms: info.runtime })
  }
  return files
}
const files = fileTimes()
if (files.length === 0) {
  console.log('slowest test files: no .tap/run-times.json or .tap/processinfo (no test run here)')
  process.exit(0)
}
files.sort((a, b) => b.ms - a.ms)
const total = files.reduce((s, f) => s + f.ms, 0)
console.log(
  `slowest ${Math.min(count, files.length)} of ${files.length} test files (wall time of each file's process):`,
)
for (const f of files.slice(0, count)) console.log(`${(f.ms / 1000).toFixed(1).padStart(7)} s  ${f.file}`)
console.log(`${(total / 1000).toFixed(0).padStart(7)} s  all files summed (${'`jobs`'} of them run at a time)`)

// Where that time went: the shared setup each test file's process recorded
// (test/helpers/setup-timing.ts, written when TOLLGATE_TEST_TIMING names a directory, as .ci/run does).
const timingDir = process.env.TOLLGATE_TEST_TIMING ?? '.tap/setup-timing'
let records = []
try {
  records = readdirSync(timingDir).flatMap((name) => {
    try {
      return [JSON.parse(readFileSync(join(timingDir, name), 'utf8'))]
    } catch {
      return []
    }
  })
} catch {
  // no records: a run without TOLLGATE_TEST_TIMING
}
records = records.filter((r) => /\.test\.[cm]?[jt]s$/.test(r.file))
if (records.length) {
  const kinds = new Map()
  for (const r of records)
    for (const [kind, s] of Object.entries(r.spent)) {
      const k = kinds.get(kind) ?? { files: 0, n: 0, ms: 0 }
      k.files++
      k.n += s.n
      k.ms += s.ms
      kinds.set(kind, k)
    }
  const wall = records.reduce((s, r) => s + r.wallMs, 0)
  console.log(
    `shared setup in the ${records.length} test files that use the test helpers (${(wall / 1000).toFixed(0)} s of their wall time):`,
  )
  const what = {
    load: 'process start to the helpers loaded: node, tsx, the platform modules',
    schema: 'a test schema migrated',
    devnet: 'an anvil started with the dev contracts',
    'seed hosted services': 'the hosted services seeded for a test platform',
  }
  for (const [kind, k] of [...kinds].sort((a, b) => b[1].ms - a[1].ms))
    console.log(
      `${(k.ms / 1000).toFixed(0).padStart(7)} s  ${kind}: ${k.n} in ${k.files} files, ${(k.ms / k.n / 1000).toFixed(2)} s each${what[kind] ? ` (${what[kind]})` : ''}`,
    )
}
