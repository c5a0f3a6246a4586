#!/usr/bin/env node
/* global process */
// Runs the CLI: the built dist/src/cli/main.js (made at `npm install` by the prepare script, or by
// `npm run build:cli`), or, when that build is missing or older than any source it was built from
// (dist/cli-build.json lists them), src/cli/main.ts through tsx, with a note saying so.
// TOLLGATE_CLI_FROM_SOURCE=1 runs the source without the note (the tests run the code they test).
import { readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const built = path.join(root, 'dist', 'src', 'cli', 'main.js')
const manifest = path.join(root, 'dist', 'cli-build.json')

/** Why the build cannot be used ('missing' or the first source newer than it), or undefined. */
function buildProblem() {
  let sources
  let builtAt
  try {
    sources = JSON.parse(readFileSync(manifest, 'utf8')).sources
    builtAt = statSync(manifest).mtimeMs
    statSync(built)
  } catch {
    return 'is missing'
  }
  for (const f of sources) {
    let t
    try {
      t = statSync(path.join(root, f)).mtimeMs
    } catch {
      return `was made from ${f}, which is gone`
    }
    if (t > builtAt) return `is older than ${f}`
  }
  return undefined
}

const fromSource = process.env.TOLLGATE_CLI_FROM_SOURCE === '1'
const problem = fromSource ? 'is not wanted' : buildProblem()
if (problem) {
  if (!fromSource)
    process.stderr.write(
      `tollgate: the built CLI ${problem}: running from source (slower). npm run build:cli makes it fast.\n`,
    )
  const { register } = await import('tsx/esm/api')
  register()
}
const entry = problem ? path.join(root, 'src', 'cli', 'main.ts') : built
const { runCli } = await import(pathToFileURL(entry).href)
process.exitCode = await runCli(process.argv.slice(2))
