/**
 * Collects items from concurrent requests and flushes them together: one database round trip per
 * `maxDelayMs` or `maxItems`, whichever comes first. Each caller awaits its own item's outcome.
 *
 * @example
 *   const writer = groupCommit({ maxItems: 200, maxDelayMs: 2, flush: (rows) => insertAll(rows) })
 *   const outcome = await writer.add(row)
 */
export interface GroupCommit<T, R> {
  add(item: T): Promise<R>
  /** flushes what is pending and waits for flushes in flight */
  drain(): Promise<void>
}

export function groupCommit<T, R>(opts: {
  maxItems: number
  maxDelayMs: number
  /** returns one outcome per item, in order; a throw rejects every item of the batch */
  flush(items: T[]): Promise<R[]>
}): GroupCommit<T, R> {
  let pending: { item: T; resolve(r: R): void; reject(e: unknown): void }[] = []
  let timer: NodeJS.Timeout | undefined
  const inFlight = new Set<Promise<void>>()

  const flushNow = () => {
    if (timer) clearTimeout(timer)
    timer = undefined
    if (pending.length === 0) return
    const batch = pending
    pending = []
    const p = opts
      .flush(batch.map((b) => b.item))
      .then(
        (results) => batch.forEach((b, i) => b.resolve(results[i])),
        (err) => batch.forEach((b) => b.reject(err)),
      )
      .finally(() => inFlight.delete(p))
    inFlight.add(p)
  }

  return {
    add(item) {
      return new Promise<R>((resolve, reject) => {
        pending.push({ item, resolve, reject })
        if (pending.length >= opts.maxItems) flushNow()
        else if (!timer) timer = setTimeout(flushNow, opts.maxDelayMs)
      })
    },
    async drain() {
      flushNow()
      await Promise.allSettled([...inFlight])
    },
  }
}
