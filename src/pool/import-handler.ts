import { pathToFileURL } from 'node:url'
import type { HandlerModule } from './handler-contract.js'

/**
 * Imports a handler module from its file and checks its shape. Apart from the registry so a
 * handler process loads it without the registry's input validator (Ajv).
 */
export async function importHandler(file: string, slug: string, urlSuffix = ''): Promise<HandlerModule> {
  const mod = (await import(pathToFileURL(file).href + urlSuffix)) as { default?: HandlerModule }
  if (!mod.default || mod.default.slug !== slug || typeof mod.default.run !== 'function') {
    throw new Error(`handlers/${slug}: default export must be defineHandler({ slug: '${slug}', ... })`)
  }
  return mod.default
}
