/**
 * Imported first by every entry point, so it runs before any dependency loads: Tollgate needs
 * Node 20.19 or later in the 20 line, or 22 and later. Some dependencies (`cookie` 2 and
 * `content-disposition` 3, through fastify and the queue board) are ES modules that CommonJS
 * packages `require()`; Node 20 can do that only from 20.19 on. An older release would stop with
 * ERR_REQUIRE_ESM somewhere in the imports; this says what to do instead.
 */

/** Why `version` (as `process.versions.node` gives it) cannot run Tollgate, or undefined. */
export function nodeVersionProblem(version: string): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map(Number)
  if (major >= 22 || (major === 20 && minor >= 19)) return undefined
  return `Node ${version} cannot run Tollgate: it needs Node 20.19 or later 20.x, or Node 22 and later (package.json "engines")`
}

const problem = nodeVersionProblem(process.versions.node)
if (problem) {
  process.stderr.write(`tollgate: ${problem}\n`)
  process.exit(1)
}
