#!/usr/bin/env node
// Takes the import circles and upward imports that are gone off .ci/baseline/import-cycles.json
// (dependency-cruiser's known violations); a new one is never added here, it fails `npm run lint`.
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'

const BASELINE = '.ci/baseline/import-cycles.json'
const key = (v) => `${v.from} → ${v.to} via ${(v.cycle ?? []).map((c) => c.name).join(' → ')}`
const now = JSON.parse(
  execFileSync('npx', ['depcruise', 'src', '--config', '.dependency-cruiser.cjs', '--output-type', 'baseline'], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  }),
)
const present = new Set(now.map(key))
const known = JSON.parse(readFileSync(BASELINE, 'utf8'))
const kept = known.filter((v) => present.has(key(v)))
writeFileSync(BASELINE, `${JSON.stringify(kept, null, 2)}\n`)
console.log(
  `import cycles and upward imports: ${known.length - kept.length} gone from ${BASELINE}, ${kept.length} left`,
)
