/**
 * The CLI's version: package.json's, found by walking up from this module (src/cli/ when run from
 * source, dist/src/cli/ when built), read only when asked (`tollgate --version`).
 */
import { readFileSync } from 'node:fs'

export function cliVersion(): string {
  for (let dir = new URL('.', import.meta.url); ; dir = new URL('..', dir)) {
    try {
      const pkg = JSON.parse(readFileSync(new URL('package.json', dir), 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'tollgate' && pkg.version) return pkg.version
    } catch {
      // not here: one level up
    }
    if (dir.pathname === '/') return 'unknown'
  }
}
