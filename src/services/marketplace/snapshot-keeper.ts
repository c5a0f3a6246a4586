// Keeps the marketplace snapshot current: rebuilds it once after a change is announced on the
// registry or marketplace channel (a dedicated subscriber connection), rechecks a database
// fingerprint now and then in case a message was lost, and serves a stale snapshot while the
// database is down or a big rebuild is slow.
import { sql } from 'kysely'
import type { CoreDeps as Deps } from '../../core-deps.js'
import { duplicateClient } from '../../redis-client.js'
import { registryChannel } from '../registry-events.js'
import { loadEntries } from './load-entries.js'
import { buildSnapshot, type Snapshot } from './snapshot.js'

type KeeperDeps = Pick<Deps, 'db' | 'redis' | 'config' | 'key'>

/** Pub/sub channel for changes to catalog and bazaar entries (the registry has its own). */
export function marketplaceChannel(deps: Pick<Deps, 'key'>): string {
  return deps.key('marketplace', 'changed')
}

export class SnapshotKeeper {
  private checking = false
  private current: Snapshot | undefined
  private generation = 0
  private builtGeneration = -1
  private building: Promise<Snapshot> | undefined
  private subscriber: ReturnType<Deps['redis']['duplicate']> | undefined

  constructor(
    private readonly deps: KeeperDeps,
    private readonly checkAfterMs: number,
    private readonly maxWaitMs: number,
  ) {}

  /** Marks the snapshot out of date (bound: it is handed out as a bare function). */
  readonly invalidate = (): void => {
    this.generation++
  }

  /** Subscribe to change announcements on a dedicated connection. */
  async start(): Promise<void> {
    if (this.subscriber) return
    const deps = this.deps
    const sub = duplicateClient(deps.redis)
    this.subscriber = sub
    sub.on('error', () => {})
    sub.on('message', this.invalidate)
    // Redis may be down at start: subscribe again whenever the connection comes (back) up;
    // messages may have been missed meanwhile, so invalidate too
    const subscribe = () => sub.subscribe(registryChannel(deps), marketplaceChannel(deps)).catch(() => {})
    sub.on('ready', () => {
      void subscribe()
      this.invalidate()
    })
    await subscribe()
  }

  async close(): Promise<void> {
    const sub = this.subscriber
    this.subscriber = undefined
    if (sub) await sub.quit().catch(() => sub.disconnect())
  }

  /** The current snapshot; waits for a rebuild after a change, so changes show at once. */
  async snapshot(): Promise<Snapshot> {
    const current = this.current
    if (current && this.builtGeneration === this.generation) {
      if (Date.now() - current.checkedAt > this.checkAfterMs && !this.building && !this.checking)
        void this.recheck(current)
      return current
    }
    try {
      const next = this.refresh()
      if (!current) return await next
      // a big catalog takes a while to rebuild: wait a bounded time, then serve the previous one
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<Snapshot>((resolve) => (timer = setTimeout(() => resolve(current), this.maxWaitMs)))
      next.catch(() => {})
      return await Promise.race([next, late]).finally(() => clearTimeout(timer))
    } catch (err) {
      // the database is down: a stale catalogue beats none
      if (this.current) return this.current
      throw err
    }
  }

  private refresh(): Promise<Snapshot> {
    if (!this.building) {
      const gen = this.generation
      // fingerprint first: a change landing during the load then shows up at the next recheck
      this.building = fingerprint(this.deps)
        .then(async (fp) => {
          const loaded = await loadEntries(this.deps)
          this.current = { ...buildSnapshot(loaded, this.deps.config), fingerprint: fp }
          this.builtGeneration = gen
          return this.current
        })
        .finally(() => {
          this.building = undefined
        })
    }
    // a change announced while building needs one more build
    return this.building.then((s) => (this.builtGeneration === this.generation ? s : this.refresh()))
  }

  private async recheck(snap: Snapshot & { fingerprint?: string }): Promise<void> {
    this.checking = true
    try {
      const fp = await fingerprint(this.deps)
      snap.checkedAt = Date.now()
      if (fp !== snap.fingerprint) this.invalidate()
    } catch {
      // the database is unreachable: keep serving, try again later
    } finally {
      this.checking = false
    }
  }
}

/** Cheap summary of the six source tables; it moves with any insert, delete or timestamped update. */
async function fingerprint(deps: Pick<Deps, 'db'>): Promise<string> {
  const tables = [
    'sellers',
    'services',
    'endpoints',
    'curated_agents',
    'curated_agent_endpoints',
    'curated_agent_skills',
  ] as const
  const parts = tables.map(
    (t) => sql`(select count(*) || '/' || coalesce(max(updated_at)::text, '') from ${sql.table(t)})`,
  )
  const r = await sql<{ fp: string }>`select concat_ws(',', ${sql.join(parts)}) as fp`.execute(deps.db)
  return r.rows[0].fp
}
