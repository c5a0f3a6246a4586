#!/usr/bin/env node
// Prints what failed in a tap run's TAP output, at the end of CI's log where a short excerpt of the
// log still shows it: every `not ok` line (file, subtest, assertion, indented as tap nests them) and
// the first lines of each failed assertion's diagnostics (message, found/wanted, where).
// Usage: node .ci/failures.mjs <tap-output-file> [max-lines=150]
import { readFileSync } from 'node:fs'

const [file, maxArg] = process.argv.slice(2)
const max = Number(maxArg ?? 150)
const lines = readFileSync(file, 'utf8').split('\n')
const DIAG_LINES = 18
const out = []
for (let i = 0; i < lines.length; i++) {
  const line = lines[i]
  if (!/^\s*not ok \d+/.test(line) || /#\s*(TODO|SKIP)\b/i.test(line)) continue
  out.push(line.replace(/\s*# time=.*$/, ''))
  const indent = /^\s*/.exec(line)[0]
  if (lines[i + 1]?.trimEnd() !== `${indent}  ---`) continue
  let taken = 0
  for (let j = i + 2; j < lines.length && lines[j].trimEnd() !== `${indent}  ...`; j++) {
    // the stack is long and tells little that `at:` does not
    if (/^\s*stack: /.test(lines[j])) break
    if (taken++ < DIAG_LINES) out.push(lines[j])
  }
}
if (out.length === 0) process.exit(0)
console.log('what failed (every `not ok`, with the first lines of each failed assertion):')
for (const l of out.slice(0, max)) console.log(l)
if (out.length > max) console.log(`… ${out.length - max} more lines: search the log above for "not ok"`)
