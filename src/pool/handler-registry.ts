import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { HandlerModule } from './handler-contract.js'
import { compileInputValidator } from './input-validator.js'

/** handlers/ at the project root (or dist/handlers when compiled). */
export const handlersDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../handlers')

/** The module file of a handler folder: index.ts when running from source, index.js when compiled. */
export function handlerFile(slug: string): string | undefined {
  for (const ext of ['.js', '.ts']) {
    const f = path.join(handlersDir, slug, `index${ext}`)
    if (existsSync(f)) return f
  }
  return undefined
}

/** Every folder under handlers/ with an index module (folders starting with _ are shared code). */
export function listHandlerSlugs(): string[] {
  if (!existsSync(handlersDir)) return []
  return readdirSync(handlersDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !d.name.startsWith('_') && handlerFile(d.name) !== undefined)
    .map((d) => d.name)
    .sort()
}

export async function importHandler(slug: string): Promise<HandlerModule> {
  const file = handlerFile(slug)
  if (!file) throw new Error(`no handler module for ${slug}`)
  const mod = (await import(pathToFileURL(file).href)) as { default?: HandlerModule }
  if (!mod.default || mod.default.slug !== slug || typeof mod.default.run !== 'function') {
    throw new Error(`handlers/${slug}: default export must be defineHandler({ slug: '${slug}', ... })`)
  }
  return mod.default
}

export interface RegisteredHandler {
  module: HandlerModule
  validate: ReturnType<typeof compileInputValidator>['validate']
}

/** Loads every handler's metadata and compiles its input validator, once per process. */
export async function loadHandlerRegistry(): Promise<Map<string, RegisteredHandler>> {
  const registry = new Map<string, RegisteredHandler>()
  for (const slug of listHandlerSlugs()) {
    const module = await importHandler(slug)
    registry.set(slug, { module, validate: compileInputValidator(module).validate })
  }
  return registry
}
