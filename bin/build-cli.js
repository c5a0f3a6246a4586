#!/usr/bin/env node
/* global process, console */
// Builds what the `tollgate` command runs: src/cli/main.ts and the modules it imports (the
// commands' lazy import()s included) into dist/, with tsc and tsconfig.cli.json, then writes
// dist/cli-build.json, the sources it was built from, so bin/tollgate.js can tell when the build
// is older than the code. Run by `npm install` (the prepare script) and `npm run build:cli`.
// A failed build never fails the install: the command then runs from source (slower) and says so.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const dist = path.join(root, 'dist')
const manifest = path.join(dist, 'cli-build.json')

function warn(why) {
  console.error(`tollgate: the CLI was not built (${why}); it will run from source, which is slower.`)
  console.error('  to fix: npm run build:cli')
}

let tsc
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
} catch {
  warn('typescript is not installed')
  process.exit(0)
}

let out = ''
let typeErrors = false
try {
  out = execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.cli.json'), '--listEmittedFiles'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
} catch (err) {
  // tsc exits non-zero on a type error but still emits; the files it wrote are listed all the same
  out = String(err.stdout ?? '')
  typeErrors = true
}

const sources = out
  .split('\n')
  .filter((l) => l.startsWith('TSFILE: ') && l.endsWith('.js'))
  .map((l) => path.relative(dist, l.slice('TSFILE: '.length).trim()).replace(/\.js$/, '.ts'))
  .filter((f) => existsSync(path.join(root, f)))
if (!sources.includes(path.join('src', 'cli', 'main.ts'))) {
  warn(`tsc emitted no src/cli/main.js${out ? `:\n${out.trim().split('\n').slice(0, 20).join('\n')}` : ''}`)
  process.exit(0)
}
if (typeErrors)
  console.error('tollgate: the CLI was built, but tsc reported type errors (npm run typecheck shows them)')
mkdirSync(dist, { recursive: true })
writeFileSync(manifest, JSON.stringify({ sources: sources.sort() }) + '\n')
console.error(`tollgate: CLI built (${sources.length} modules in dist/)`)
