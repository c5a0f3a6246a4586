/**
 * Runs one handler through runInline in a child Node process and prints the outcome as JSON, so
 * a test can give that process its own environment (NODE_EXTRA_CA_CERTS, read only at start, is
 * how a test CA becomes trusted for a "valid certificate" case).
 *
 * Usage (from a test): node --import tsx test/helpers/netcheck-run-child.ts <handler index path> '<input JSON>' '<options JSON>'
 */
import { pathToFileURL } from 'node:url'
import { resolve } from 'node:path'
import { runInline } from './handler-harness.js'

const [file, input, options] = process.argv.slice(2)
const mod = (await import(pathToFileURL(resolve(file!)).href)) as { default: Parameters<typeof runInline>[0] }
try {
  const out = await runInline(mod.default, JSON.parse(input!), JSON.parse(options ?? '{}'))
  process.stdout.write(JSON.stringify(out))
} catch (err) {
  const e = err as { name?: string; code?: string; message?: string }
  process.stdout.write(JSON.stringify({ ok: false, thrown: { name: e.name, code: e.code, message: e.message } }))
}
process.exit(0)
