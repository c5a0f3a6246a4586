/**
 * Collects items from concurrent requests and writes them together. There is no timer: a flush
 * starts as soon as a slot is free (at most `maxInFlight` flushes at once), and everything that
 * arrived meanwhile goes into the next one. An idle system writes one item right away (after the
 * current I/O phase, so requests parsed together are written together); a busy one forms bigger
 * batches by itself. Each caller awaits its own item's outcome.
 *
 * @example
 *   const writer = groupCommit({ maxItems: 256, flush: (rows) => insertAll(rows) })
 *   const outcome = await writer.add(row)
 */
export interface GroupCommit<T, R> {
  add(item: T): Promise<R>
  /** flushes what is pending and waits until nothing is pending or in flight */
  drain(): Promise<void>
}

export interface GroupCommitOptions<T, R> {
  /** the most items in one flush */
  maxItems: number
  /** flushes running at once (each takes one database connection); default 2 */
  maxInFlight?: number
  /**
   * Items allowed to wait for a flush; past it `add` fails at once (a stalled database must not
   * grow memory without bound; the caller answers 503). Default 20 batches' worth.
   */
  maxPending?: number
  /** returns one outcome per item, in order; a throw rejects every item of the batch */
  flush(items: T[]): Promise<R[]>
}

export function groupCommit<T, R>(opts: GroupCommitOptions<T, R>): GroupCommit<T, R> {
  const maxInFlight = opts.maxInFlight ?? 2
  const maxPending = opts.maxPending ?? opts.maxItems * 20
  let pending: { item: T; resolve(r: R): void; reject(e: unknown): void }[] = []
  let inFlight = 0
  let scheduled = false
  const idle: (() => void)[] = []

  const pump = () => {
    scheduled = false
    while (inFlight < maxInFlight && pending.length > 0) {
      const batch = pending.length <= opts.maxItems ? pending : pending.slice(0, opts.maxItems)
      pending = batch === pending ? [] : pending.slice(opts.maxItems)
      inFlight++
      let flushing: Promise<R[]>
      try {
        flushing = opts.flush(batch.map((b) => b.item))
      } catch (err) {
        flushing = Promise.reject(err)
      }
      flushing
        .then(
          (results) => batch.forEach((b, i) => b.resolve(results[i]!)),
          (err) => batch.forEach((b) => b.reject(err)),
        )
        .finally(() => {
          inFlight--
          if (pending.length > 0) pump()
          else if (inFlight === 0) idle.splice(0).forEach((f) => f())
        })
    }
  }

  return {
    add(item) {
      return new Promise<R>((resolve, reject) => {
        if (pending.length >= maxPending) {
          reject(new Error(`group commit backlog full (${pending.length} waiting, ${inFlight} flushes in flight)`))
          return
        }
        pending.push({ item, resolve, reject })
        if (!scheduled && inFlight < maxInFlight) {
          scheduled = true
          setImmediate(pump)
        }
      })
    },
    drain() {
      if (pending.length === 0 && inFlight === 0) return Promise.resolve()
      return new Promise<void>((resolve) => {
        idle.push(resolve)
        if (!scheduled) pump()
      })
    },
  }
}
