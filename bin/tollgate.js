#!/usr/bin/env node
/* global process */
// Runs the CLI: the built dist/src/cli/main.js when it exists and is not older than the source,
// otherwise src/cli/main.ts through tsx (a dependency), so a checkout works without a build.
import { existsSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const built = path.join(root, 'dist', 'src', 'cli', 'main.js')
const source = path.join(root, 'src', 'cli', 'main.ts')
const useBuilt = existsSync(built) && (!existsSync(source) || statSync(built).mtimeMs >= statSync(source).mtimeMs)
if (!useBuilt) {
  const { register } = await import('tsx/esm/api')
  register()
}
const { runCli } = await import(pathToFileURL(useBuilt ? built : source).href)
process.exitCode = await runCli(process.argv.slice(2))
