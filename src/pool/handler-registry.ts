import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { HandlerModule } from './handler-contract.js'
import { importHandler } from './import-handler.js'
import { compileInputValidator } from './input-validator.js'

export { importHandler }

/** handlers/ at the project root (or dist/handlers when compiled). */
export const handlersDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../handlers')

/** The module file of a handler folder: index.ts when running from source, index.js when compiled. */
export function handlerFile(slug: string, dir = handlersDir): string | undefined {
  for (const ext of ['.js', '.ts']) {
    const f = path.join(dir, slug, `index${ext}`)
    if (existsSync(f)) return f
  }
  return undefined
}

/** Every folder under handlers/ with an index module (folders starting with _ are shared code). */
export function listHandlerSlugs(dir = handlersDir): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !d.name.startsWith('_') && handlerFile(d.name, dir) !== undefined)
    .map((d) => d.name)
    .sort()
}

export interface RegisteredHandler {
  /** the module file, imported again inside pool workers */
  file: string
  module: HandlerModule
  validate: ReturnType<typeof compileInputValidator>['validate']
  /** runs in the pool's I/O lane: it reaches public hosts or outside providers (mostly waiting) */
  io: boolean
}

/** Loads every handler's metadata and compiles its input validator, once per process. */
export async function loadHandlerRegistry(dir = handlersDir): Promise<Map<string, RegisteredHandler>> {
  const registry = new Map<string, RegisteredHandler>()
  for (const slug of listHandlerSlugs(dir)) {
    const file = handlerFile(slug, dir)!
    const module = await importHandler(file, slug)
    registry.set(slug, {
      file,
      module,
      validate: compileInputValidator(module).validate,
      io: Boolean(module.network || module.providers?.length),
    })
  }
  return registry
}
