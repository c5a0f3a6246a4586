/**
 * Polls `fn` every 100 ms until it returns a truthy value, and returns it; throws naming `what`
 * after `ms`. For effects that land asynchronously (workers, settlement, queues).
 *
 * @example
 *   const tx = await until('a settlement transaction', async () => (await payment(id))?.tx_hash)
 */
export async function until<T>(what: string, fn: () => Promise<T | undefined | false>, ms = 40_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}
