/**
 * Per-process cache of agent-key look-ups (agent, caps, allowlist), so the payment hot path does
 * not ask Postgres on every request. It is only used while this process is LISTENing on
 * `tollgate_agent_auth` (triggers of migration 1100 notify at commit when a key is revoked or
 * added, caps, address or key change, or the allowlist does): a notification drops the agent's
 * entries; a lost connection empties the cache and bypasses it until LISTEN is back. A look-up
 * that overlapped any notification is not cached (its row may predate the change).
 */
import pg from 'pg'

export interface AuthCacheOptions {
  databaseUrl: string
  /** entries kept (oldest dropped first); default 10,000 */
  max?: number
  /** an entry is re-read after this long even without a notification; default 60 s */
  maxAgeMs?: number
  onError?(err: unknown): void
}

export function createAuthCache<V extends { id: string }>(opts: AuthCacheOptions) {
  const max = opts.max ?? 10_000
  const maxAge = opts.maxAgeMs ?? 60_000
  const entries = new Map<string, { value: V; at: number }>()
  let listening = false
  let closed = false
  let generation = 0
  let client: pg.Client | undefined
  let retry: NodeJS.Timeout | undefined

  function invalidate(agentId?: string): void {
    generation++
    if (agentId === undefined) return entries.clear()
    for (const [k, e] of entries) if (e.value.id === agentId) entries.delete(k)
  }

  function lost(err?: unknown): void {
    if (err) opts.onError?.(err)
    listening = false
    invalidate()
    const c = client
    client = undefined
    c?.removeAllListeners()
    c?.on('error', () => {})
    void c?.end().catch(() => {})
    if (!closed && !retry) retry = setTimeout(connect, 1000).unref()
  }

  async function connect(): Promise<void> {
    retry = undefined
    if (closed) return
    const c = new pg.Client({ connectionString: opts.databaseUrl, connectionTimeoutMillis: 5000, keepAlive: true })
    client = c
    c.on('notification', (n) => {
      if (n.channel === 'tollgate_agent_auth') invalidate(n.payload || undefined)
    })
    c.on('error', (err) => lost(err))
    c.on('end', () => {
      if (client === c) lost()
    })
    try {
      await c.connect()
      // a forgotten service must not keep the process alive
      ;(c as unknown as { connection?: { stream?: { unref?(): void } } }).connection?.stream?.unref?.()
      await c.query('LISTEN tollgate_agent_auth')
      if (client !== c || closed) return void c.end().catch(() => {})
      invalidate()
      listening = true
    } catch (err) {
      if (client === c) lost(err)
    }
  }

  const ready = connect()

  return {
    /** resolves once the first LISTEN attempt is done (cached look-ups start after it) */
    ready,
    get listening() {
      return listening
    },
    /** The cached value for `key`, or `load()` (cached when no change overlapped it). */
    async get(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
      const e = entries.get(key)
      if (e && listening && Date.now() - e.at < maxAge) return e.value
      const gen = generation
      const wasListening = listening
      const value = await load()
      if (value && wasListening && listening && gen === generation) {
        if (entries.size >= max) entries.delete(entries.keys().next().value!)
        entries.set(key, { value, at: Date.now() })
      }
      return value
    },
    invalidate,
    async close(): Promise<void> {
      closed = true
      listening = false
      if (retry) clearTimeout(retry)
      entries.clear()
      const c = client
      client = undefined
      c?.removeAllListeners()
      c?.on('error', () => {})
      await c?.end().catch(() => {})
    },
  }
}
export type AuthCache<V extends { id: string }> = ReturnType<typeof createAuthCache<V>>
