/**
 * `tollgate archive`: writes the ledger's old day partitions (payments, payment_events, and access_uses: the calls served on a sign-in) to files
 * and drops them from Postgres (src/ledger/partitions.ts). An operator command: it reads the
 * server environment (DATABASE_URL, DATABASE_SCHEMA) like every role.
 */
import path from 'node:path'
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig, type Config } from '../../config.js'
import { createDb } from '../../db/create-db.js'
import { archiveLedger, describeOpen, utcDay } from '../../ledger/partitions.js'
import { wantsHelp, type Command } from '../command.js'
import { EXIT } from '../exit-codes.js'
import type { CliIo } from './users.js'

export const ARCHIVE_USAGE = `usage: tollgate archive --dir <directory> (--older-than <days> | --before <YYYY-MM-DD>)

Archives the day partitions of payments, payment_events and access_uses (calls served on a
sign-in) older than the given day (UTC), oldest first: each is detached, written to <directory>/<partition>.csv.gz (CSV with a header line), read
back and its rows counted, and dropped only when the file holds every row. Refuses, archiving
nothing, while payments created before that day are not all settled, voided or failed, and names
the partitions that hold them. A partition left detached by an interrupted run is archived by the
next one. Reads DATABASE_URL and DATABASE_SCHEMA from the environment, as every role.

options:
  --dir <directory>        where the files go (created if missing)
  --older-than <days>      the days more than this many days before today (at least 1)
  --before <YYYY-MM-DD>    the days before this one (not after today)
  -h, --help               this help
`

/** Runs `archive`; returns the exit code (0 done, 1 refused or failed, 2 usage). */
export async function archiveCli(argv: string[], io: CliIo): Promise<number> {
  let values: { dir?: string; 'older-than'?: string; before?: string }
  try {
    ;({ values } = parseArgs({
      args: argv,
      options: { dir: { type: 'string' }, 'older-than': { type: 'string' }, before: { type: 'string' } },
      strict: true,
      allowPositionals: false,
    }))
  } catch (err) {
    io.err(`${(err as Error).message}\n${ARCHIVE_USAGE}`)
    return 2
  }
  const today = utcDay(new Date())
  let before: string | undefined
  if (!values.dir) io.err(`--dir is required\n${ARCHIVE_USAGE}`)
  else if ((values['older-than'] === undefined) === (values.before === undefined))
    io.err(`give one of --older-than and --before\n${ARCHIVE_USAGE}`)
  else if (values['older-than'] !== undefined) {
    const days = /^\d{1,5}$/.test(values['older-than']) ? Number(values['older-than']) : NaN
    if (!(days >= 1)) io.err(`--older-than: expected a whole number of days, at least 1\n${ARCHIVE_USAGE}`)
    else before = utcDay(new Date(), -days)
  } else {
    const b = values.before!
    const at = new Date(`${b}T00:00:00Z`)
    const valid = /^\d{4}-\d{2}-\d{2}$/.test(b) && !Number.isNaN(at.getTime()) && utcDay(at) === b
    if (!valid) io.err(`--before: expected a day as YYYY-MM-DD\n${ARCHIVE_USAGE}`)
    else if (b > today) io.err(`--before: ${b} is after today (${today}); only past days can be archived`)
    else before = b
  }
  if (before === undefined) return 2
  let config: Readonly<Config>
  try {
    config = io.config ?? loadConfig(io.env)
  } catch (err) {
    io.err(err instanceof ConfigError ? err.message : `configuration: ${(err as Error).message}`)
    return 1
  }
  const dir = path.resolve(values.dir!)
  const db = createDb({ databaseUrl: config.databaseUrl, schema: config.databaseSchema, max: 1 })
  try {
    io.out(`archiving ledger partitions before ${before} to ${dir}`)
    const r = await archiveLedger(
      db,
      { databaseUrl: config.databaseUrl, schema: config.databaseSchema },
      { before, dir, progress: (line) => io.out(line) },
    )
    if (r.refused.length) {
      io.err(`refused: payments not settled yet in ${describeOpen(r.refused)}; nothing more was archived`)
      return 1
    }
    const rows = r.archived.reduce((n, a) => n + a.rows, 0)
    io.out(`archived ${r.archived.length} partition${r.archived.length === 1 ? '' : 's'}, ${rows} rows`)
    return 0
  } catch (err) {
    io.err(`archive failed: ${(err as Error).message}`)
    return 1
  } finally {
    await db.destroy()
  }
}

/** `tollgate archive …` as main.ts runs it. */
export async function archiveCommand(args: string[], cmd: Command): Promise<number> {
  if (wantsHelp(args)) {
    cmd.io.stdout(ARCHIVE_USAGE)
    return EXIT.ok
  }
  const code = await archiveCli(args, {
    out: (l) => cmd.io.stdout(l + '\n'),
    err: (l) => cmd.io.stderr(l + '\n'),
    env: cmd.io.env,
  })
  return code === 2 ? EXIT.usage : code
}
