import { createReadStream, createWriteStream, promises as fs } from 'node:fs'
import path from 'node:path'
import { Transform, Writable, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createGunzip, createGzip } from 'node:zlib'
import { sql, type Kysely } from 'kysely'
import pg from 'pg'
import { to as copyTo } from 'pg-copy-streams'
import type { Database } from '../db/database.js'
import { OPEN_STATUSES } from './statuses.js'

/**
 * The day partitions of the ledger (payments, payment_events; see
 * migrations/2026-11-26T1030-partitioned-ledger.ts) and of the calls served on a sign-in
 * (access_uses, 2026-11-26T1410; always final, archived and dropped with the ledger's days): created ahead by the worker, old days dropped
 * after a retention or archived to files (`tollgate archive`). A day whose payments are not all
 * final (settled, voided, failed) is never detached: it is refused, by name.
 */

const LEDGER_TABLES = ['payments', 'payment_events', 'access_uses'] as const
type LedgerTable = (typeof LEDGER_TABLES)[number]

/** statuses whose payment may still move (and is still owed, or may still be charged) */
const OPEN = [...OPEN_STATUSES]

/** how long a detach waits for its lock before giving up (it would hold every ledger write back) */
const DETACH_LOCK_TIMEOUT_MS = 3000

/** how long past valid_before a nonce stays claimed: room for clocks that disagree */
export const NONCE_MARGIN_SECONDS = 3600

export interface LedgerPartition {
  table: LedgerTable
  name: string
  /** the UTC day, YYYY-MM-DD */
  day: string
  /** false: detached by an archive run that did not finish (a table of its own, not in the ledger) */
  attached: boolean
}

/** A refusal: a partition that still holds payments that are not final. */
export interface OpenPartition {
  name: string
  open: number
}

const dayOf = (name: string): string | undefined => {
  const m = /_p(\d{4})(\d{2})(\d{2})$/.exec(name)
  return m ? `${m[1]}-${m[2]}-${m[3]}` : undefined
}

/** YYYY-MM-DD of a Date in UTC, plus `days` */
export function utcDay(d: Date, days = 0): string {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + days)).toISOString().slice(0, 10)
}

/** Every day partition of this schema, attached or left detached, oldest first. */
export async function listLedgerPartitions(db: Kysely<Database>): Promise<LedgerPartition[]> {
  const { rows } = await sql<{ name: string; parent: string | null }>`
    select c.relname as name, p.relname as parent
    from pg_class c
    join pg_namespace n on n.oid = c.relnamespace and n.nspname = current_schema()
    left join pg_inherits i on i.inhrelid = c.oid
    left join pg_class p on p.oid = i.inhparent
    where c.relkind = 'r' and c.relname ~ '^(payments|payment_events|access_uses)_p[0-9]{8}$'`.execute(db)
  return (
    rows
      .map((r) => ({
        table: LEDGER_TABLES.find((t) => r.name === `${t}_p${r.name.slice(-8)}`)!,
        name: r.name,
        day: dayOf(r.name)!,
        attached: r.parent !== null,
      }))
      // a day's payments go first: its events (and sign-in uses) are archived only once the payments were
      .sort((a, b) => a.day.localeCompare(b.day) || LEDGER_TABLES.indexOf(a.table) - LEDGER_TABLES.indexOf(b.table))
  )
}

/**
 * Creates the day partitions from today (or the oldest day the default partitions hold rows of,
 * which then move into their day) through `aheadDays` ahead. Returns how many were created.
 */
export async function ensureLedgerPartitions(
  db: Kysely<Database>,
  aheadDays: number,
  now = new Date(),
): Promise<number> {
  const { rows } = await sql<{ made: number }>`
    select ledger_ensure_partitions(
      least(${utcDay(now)}::date,
            (select (min(created_at) at time zone 'UTC')::date from payments_default),
            (select (min(created_at) at time zone 'UTC')::date from payment_events_default),
            (select (min(created_at) at time zone 'UTC')::date from access_uses_default)),
      ${utcDay(now, aheadDays)}::date) as made`.execute(db)
  return Number(rows[0]?.made ?? 0)
}

/**
 * Deletes claimed nonces whose authorization expired more than NONCE_MARGIN_SECONDS ago: the
 * proxy refuses an authorization whose validBefore is not ahead of now, so they can never be
 * presented again (and the chain's authorizationState refuses them anyway). In slices, so one run
 * never holds a long transaction.
 */
export async function pruneExpiredNonces(db: Kysely<Database>, nowMs = Date.now(), slice = 10_000): Promise<number> {
  const before = Math.floor(nowMs / 1000) - NONCE_MARGIN_SECONDS
  let total = 0
  for (;;) {
    const r = await sql`
      delete from payment_nonces where ctid = any(array(
        select ctid from payment_nonces where valid_before < ${before} limit ${slice}))`.execute(db)
    const n = Number(r.numAffectedRows ?? 0)
    total += n
    if (n < slice) return total
  }
}

/** The partitions (of payments, default included) holding payments created before `day` that are not final. */
async function openPaymentsBefore(db: Kysely<Database>, day: string): Promise<OpenPartition[]> {
  const { rows } = await sql<{ name: string; open: string }>`
    select tableoid::regclass::text as name, count(*) as open from payments
    where created_at < ${day}::date::timestamp at time zone 'UTC' and status = any(${OPEN}::text[])
    group by 1 order by 1`.execute(db)
  return rows.map((r) => ({ name: r.name, open: Number(r.open) }))
}

export function describeOpen(open: OpenPartition[]): string {
  return open.map((o) => `${o.name} (${o.open} payment${o.open === 1 ? '' : 's'} not settled yet)`).join(', ')
}

/**
 * Detaches one partition inside a transaction that first proves it holds no open payment (under
 * the detach's lock, so none can appear meanwhile). Returns the refusal instead when it does.
 */
async function detach(db: Kysely<Database>, p: LedgerPartition): Promise<OpenPartition | undefined> {
  if (!p.attached) return undefined
  return db
    .transaction()
    .execute(async (trx) => {
      // DETACH takes an exclusive lock on the whole table: queued behind a long reader (an export)
      // it would hold every ledger write back meanwhile, so it gives up after a moment instead
      await sql.raw(`set local lock_timeout = '${DETACH_LOCK_TIMEOUT_MS}ms'`).execute(trx)
      await sql`alter table ${sql.id(p.table)} detach partition ${sql.id(p.name)}`.execute(trx)
      if (p.table !== 'payments') return undefined
      const { rows } = await sql<{ open: string }>`
      select count(*) as open from ${sql.id(p.name)} where status = any(${OPEN}::text[])`.execute(trx)
      const open = Number(rows[0]!.open)
      // the rollback re-attaches it
      if (open > 0) throw Object.assign(new Error('open payments'), { refusal: { name: p.name, open } })
      return undefined
    })
    .catch((err: Error & { refusal?: OpenPartition; code?: string }) => {
      if (err.refusal) return err.refusal
      if (err.code === '55P03')
        throw new Error(
          `${p.name}: could not lock ${p.table} within ${DETACH_LOCK_TIMEOUT_MS} ms (a long query is reading it, an export perhaps); nothing was detached, try again`,
        )
      throw err
    })
}

export interface DropResult {
  dropped: string[]
  /** days left in place because they still hold payments that are not final */
  refused: OpenPartition[]
}

/**
 * LEDGER_RETENTION_DAYS: drops (without archiving) every day partition older than `retentionDays`,
 * unless payments created before that day are not all final: then nothing is dropped and the
 * partitions holding them are named.
 */
export async function dropExpiredPartitions(
  db: Kysely<Database>,
  retentionDays: number,
  now = new Date(),
): Promise<DropResult> {
  const cutoff = utcDay(now, -retentionDays)
  const old = (await listLedgerPartitions(db)).filter((p) => p.day < cutoff)
  if (old.length === 0) return { dropped: [], refused: [] }
  const refused = await openPaymentsBefore(db, cutoff)
  if (refused.length) return { dropped: [], refused }
  const dropped: string[] = []
  for (const p of old) {
    const r = await detach(db, p)
    if (r) return { dropped, refused: [r] }
    await sql`drop table ${sql.id(p.name)}`.execute(db)
    dropped.push(p.name)
  }
  return { dropped, refused: [] }
}

/** Counts CSV records (a newline outside double quotes ends one). */
class CsvRecordCounter extends Transform {
  records = 0
  private quoted = false
  private last = 10
  _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!
      if (c === 34) this.quoted = !this.quoted
      else if (c === 10 && !this.quoted) this.records++
      this.last = c
    }
    done(null, chunk)
  }
  _flush(done: TransformCallback): void {
    if (this.last !== 10) this.records++
    done()
  }
}

interface ArchivedPartition {
  name: string
  rows: number
  file: string
  bytes: number
}

export interface ArchiveResult {
  archived: ArchivedPartition[]
  refused: OpenPartition[]
}

export interface ArchiveOptions {
  /** archive the days before this one (YYYY-MM-DD) */
  before: string
  dir: string
  /** a line of progress per step */
  progress?: (line: string) => void
}

/**
 * `tollgate archive`: every day partition before `before`, oldest first, is detached, written to
 * `<dir>/<partition>.csv.gz` (COPY … TO STDOUT as CSV with a header), read back and its records
 * counted, and dropped only if that count equals the partition's row count. Refuses (archives
 * nothing) while payments created before `before` are not all final, naming their partitions. A
 * partition left detached by an interrupted run is picked up by the next one.
 */
export async function archiveLedger(
  db: Kysely<Database>,
  conn: { databaseUrl: string; schema: string },
  opts: ArchiveOptions,
): Promise<ArchiveResult> {
  const say = opts.progress ?? (() => {})
  const parts = (await listLedgerPartitions(db)).filter((p) => p.day < opts.before)
  if (parts.length === 0) {
    say(`no day partitions before ${opts.before}`)
    return { archived: [], refused: [] }
  }
  const refused = await openPaymentsBefore(db, opts.before)
  if (refused.length) return { archived: [], refused }
  await fs.mkdir(opts.dir, { recursive: true })
  const client = new pg.Client({ connectionString: conn.databaseUrl, options: `-c search_path=${conn.schema}` })
  await client.connect()
  const archived: ArchivedPartition[] = []
  try {
    for (const [i, p] of parts.entries()) {
      const step = `[${i + 1}/${parts.length}] ${p.name}`
      const r = await detach(db, p)
      if (r) return { archived, refused: [r] }
      const { rows } = await client.query<{ n: string }>(`select count(*) as n from ${pg.escapeIdentifier(p.name)}`)
      const expected = Number(rows[0]!.n)
      say(`${step}: detached, ${expected} rows; writing`)
      const file = path.join(opts.dir, `${p.name}.csv.gz`)
      const tmp = `${file}.partial`
      const copy = client.query(copyTo(`copy ${pg.escapeIdentifier(p.name)} to stdout with (format csv, header true)`))
      await pipeline(copy, createGzip(), createWriteStream(tmp))
      const handle = await fs.open(tmp, 'r+')
      await handle.sync()
      await handle.close()
      const counter = new CsvRecordCounter()
      await pipeline(
        createReadStream(tmp),
        createGunzip(),
        counter,
        new Writable({ write: (_chunk, _enc, done) => done() }),
      )
      const written = counter.records - 1
      if (written !== expected || copy.rowCount !== expected)
        throw new Error(
          `${p.name}: the file holds ${written} rows and COPY sent ${copy.rowCount}, the partition has ${expected}; left detached, not dropped`,
        )
      await fs.rename(tmp, file)
      const { size } = await fs.stat(file)
      await client.query(`drop table ${pg.escapeIdentifier(p.name)}`)
      archived.push({ name: p.name, rows: expected, file, bytes: size })
      say(`${step}: ${expected} rows verified in ${file} (${size} bytes); dropped`)
    }
  } finally {
    await client.end()
  }
  return { archived, refused: [] }
}
