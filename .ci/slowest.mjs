#!/usr/bin/env node
// Prints the slowest test files of the last tap run: wall time of each test file's process (start,
// TypeScript loading and the tests), read from tap's own records in .tap/processinfo/.
// Usage: node .ci/slowest.mjs [count=10]
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const dir = '.tap/processinfo'
const count = Number(process.argv[2] ?? 10)
let names = []
try {
  names = readdirSync(dir)
} catch {
  console.log('slowest test files: no .tap/processinfo (no tap run here)')
  process.exit(0)
}
const files = []
for (const name of names) {
  const info = JSON.parse(readFileSync(join(dir, name), 'utf8'))
  // a test file's root process carries its path as externalID; its children (spawned roles) do not
  if (info.externalID && typeof info.runtime === 'number') files.push({ file: info.externalID, ms: info.runtime })
}
files.sort((a, b) => b.ms - a.ms)
const total = files.reduce((s, f) => s + f.ms, 0)
console.log(
  `slowest ${Math.min(count, files.length)} of ${files.length} test files (wall time of each file's process):`,
)
for (const f of files.slice(0, count)) console.log(`${(f.ms / 1000).toFixed(1).padStart(7)} s  ${f.file}`)
console.log(`${(total / 1000).toFixed(0).padStart(7)} s  all files summed (tap runs ${'`jobs`'} of them at a time)`)
