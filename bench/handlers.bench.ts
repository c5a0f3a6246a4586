/**
 * Each hosted handler on its example input (`npm run bench:handlers`): calls/s and p99 through the
 * handler pool (handler processes), against calling the same function inline in this process, in
 * the same run.
 * Prints a markdown table; nothing is asserted.
 *
 *   node --import tsx bench/handlers.bench.ts [milliseconds-per-handler] [only-slug]
 */
import os from 'node:os'
import { createHandlerPool } from '../src/pool/handler-pool.js'
import { loadHandlerRegistry } from '../src/pool/handler-registry.js'

const budgetMs = Number(process.argv[2] ?? 1500)
const only = process.argv[3]
const registry = await loadHandlerRegistry()
const threads = Math.max(1, os.cpus().length)
const pool = createHandlerPool({ maxThreads: threads, memoryMb: 512 })
const ctx = { method: 'POST', accept: '*/*', providers: {}, allowPrivateNetwork: false } as const

function pct(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN
}

async function measure(call: () => Promise<unknown>, concurrency: number) {
  const lat: number[] = []
  const end = performance.now() + budgetMs
  const start = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now()
        await call()
        lat.push(performance.now() - t0)
      }
    }),
  )
  lat.sort((a, b) => a - b)
  return { perSec: lat.length / ((performance.now() - start) / 1000), p50: pct(lat, 50), p99: pct(lat, 99) }
}

console.log(`| handler | pool calls/s | pool p99 ms | inline calls/s | inline p99 ms | pool/inline |`)
console.log(`|---|---:|---:|---:|---:|---:|`)
const skipped: string[] = []
for (const [slug, h] of registry) {
  if (only && slug !== only) continue
  // handlers that call an outside provider (RPC, APIs) or a public host measure that, not the pool: skipped
  if (h.io) {
    skipped.push(slug)
    continue
  }
  // warm both paths (module load, lazy imports, WASM compile)
  for (let i = 0; i < threads; i++)
    await pool.run({ file: h.file, slug }, structuredClone(h.module.example), ctx, 60_000)
  await h.module.run(structuredClone(h.module.example), ctx)
  const viaPool = await measure(
    () => pool.run({ file: h.file, slug }, structuredClone(h.module.example), ctx, 60_000),
    threads * 2,
  )
  const inline = await measure(async () => h.module.run(structuredClone(h.module.example), ctx), 1)
  console.log(
    `| ${slug} | ${viaPool.perSec.toFixed(0)} | ${viaPool.p99.toFixed(2)} | ${inline.perSec.toFixed(0)} | ${inline.p99.toFixed(2)} | ${(viaPool.perSec / inline.perSec).toFixed(2)}x |`,
  )
}
if (skipped.length) console.log(`\nskipped (they call an outside provider or a public host): ${skipped.join(', ')}`)
console.log(`\n${threads} handler processes, ${budgetMs} ms per handler per path, node ${process.version}`)
await pool.close()
process.exit(0)
