#!/usr/bin/env node
/* global process */
// Runs the CLI: the built dist/src/cli/main.js when it exists and is not older than the CLI's and
// the client's sources, otherwise src/cli/main.ts through tsx (a dependency), so a checkout works
// without a build.
import { existsSync, readdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const built = path.join(root, 'dist', 'src', 'cli', 'main.js')
const source = path.join(root, 'src', 'cli', 'main.ts')

/** The newest modification time of the .ts files under `dir` (0 when there is none). */
function newest(dir) {
  let t = 0
  for (const e of existsSync(dir) ? readdirSync(dir, { withFileTypes: true }) : []) {
    const p = path.join(dir, e.name)
    t = Math.max(t, e.isDirectory() ? newest(p) : e.name.endsWith('.ts') ? statSync(p).mtimeMs : 0)
  }
  return t
}

const useBuilt =
  existsSync(built) &&
  (!existsSync(source) ||
    statSync(built).mtimeMs >=
      Math.max(newest(path.join(root, 'src', 'cli')), newest(path.join(root, 'src', 'client'))))
if (!useBuilt) {
  const { register } = await import('tsx/esm/api')
  register()
}
const { runCli } = await import(pathToFileURL(useBuilt ? built : source).href)
process.exitCode = await runCli(process.argv.slice(2))
