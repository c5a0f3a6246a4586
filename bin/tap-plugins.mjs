/* global process, console */
// Run before `npm test` (the `pretest` script). tap bakes its plugin set into node_modules/@tapjs/test
// when it is installed, and a run that finds package.json asking for another set rebuilds it only for
// the runs after it. This project swaps tap's ts-node TypeScript plugin for tsx (`node-arg`), so the
// first run after a fresh install would load every test file through both. Rebuild first when the
// built set is not the configured one.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

const tap = (...args) =>
  execFileSync(process.execPath, ['node_modules/tap/dist/esm/run.mjs', ...args], { encoding: 'utf8' })
const sorted = (text) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .sort()
    .join('\n')

let built = ''
try {
  const text = readFileSync('node_modules/@tapjs/test/test-built/dist/esm/index.js', 'utf8')
  built = /^export const signature = `([^`]*)`/m.exec(text)?.[1] ?? ''
} catch {
  // not built yet
}
if (sorted(built) !== sorted(tap('plugin', 'list'))) {
  console.error('tap: building its plugin set as package.json configures it (once after an install)')
  execFileSync(process.execPath, ['node_modules/tap/dist/esm/run.mjs', 'build'], { stdio: 'inherit' })
}
