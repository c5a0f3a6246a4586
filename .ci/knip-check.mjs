#!/usr/bin/env node
// Runs knip (unused files, exports, types and dependencies; knip.json) against the findings of
// today, kept in .ci/baseline/knip.json: a finding not in the list fails, and so does a listed one
// that is gone (run `npm run lint:baseline` to take it off), so the list only shrinks.
// Usage: node .ci/knip-check.mjs [--prune | --update]
//   --prune takes fixed findings off the list (new ones still fail); --update writes every finding of today
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'

const BASELINE = '.ci/baseline/knip.json'
const KINDS = [
  'files',
  'dependencies',
  'devDependencies',
  'unlisted',
  'unresolved',
  'binaries',
  'exports',
  'types',
  'enumMembers',
  'duplicates',
]

let report
try {
  report = execFileSync('npx', ['knip', '--reporter', 'json', '--no-progress'], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  })
} catch (err) {
  // knip exits 1 when it finds something; its report is still on stdout
  if (!err.stdout) throw err
  report = err.stdout
}
const found = new Set()
for (const issue of JSON.parse(report).issues) {
  for (const kind of KINDS)
    for (const item of issue[kind] ?? []) {
      const name = Array.isArray(item) ? item.map((i) => i.name).join('|') : item.name
      found.add(`${kind}: ${issue.file}${name && kind !== 'files' ? ` ${name}` : ''}`)
    }
}
const sorted = [...found].sort()

if (process.argv.includes('--update')) {
  writeFileSync(BASELINE, `${JSON.stringify(sorted, null, 2)}\n`)
  console.log(`knip: ${sorted.length} findings written to ${BASELINE}`)
  process.exit(0)
}
const known = new Set(JSON.parse(readFileSync(BASELINE, 'utf8')))
if (process.argv.includes('--prune')) {
  const kept = [...known].filter((f) => found.has(f))
  writeFileSync(BASELINE, `${JSON.stringify(kept, null, 2)}\n`)
  console.log(`knip: ${known.size - kept.length} fixed findings taken off ${BASELINE}, ${kept.length} left`)
  for (const f of sorted.filter((f) => !known.has(f))) console.log(`knip: new finding (not added), ${f}`)
  process.exit(0)
}
const added = sorted.filter((f) => !known.has(f))
const gone = [...known].filter((f) => !found.has(f))
for (const f of added) console.log(`knip: new finding, ${f}`)
for (const f of gone) console.log(`knip: fixed, take it off ${BASELINE} (npm run lint:baseline): ${f}`)
if (added.length || gone.length) process.exit(1)
console.log(`knip: nothing new (${known.size} known findings in ${BASELINE})`)
