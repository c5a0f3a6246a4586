import type { Kysely, Selectable } from 'kysely'
import { preparedQuery } from '../../db/create-db.js'
import { groupCommit } from '../../db/group-commit.js'
import type { Database } from '../../db/database.js'
import type { AgentPaymentsTable } from '../../db/agent-payments-tables.js'

const COLUMNS = [
  'agent_id',
  'x402_version',
  'url',
  'method',
  'network',
  'asset',
  'payer',
  'pay_to',
  'amount',
  'nonce',
  'valid_after',
  'valid_before',
  'day_window',
  'month_window',
  'scheme',
  'max_amount',
] as const

/** A new reservation: the agent_payments columns the batcher writes (status is always `reserved`), amount and validity times as decimal strings. */
export type ReservationRow = Omit<Pick<Selectable<AgentPaymentsTable>, (typeof COLUMNS)[number]>, 'max_amount'> & {
  /** upto only */
  max_amount?: string | null
}

// one fixed statement over column arrays, prepared once per connection
const RESERVATIONS_SQL = `
  with p as (
    insert into agent_payments (agent_id, status, ${COLUMNS.slice(1).join(', ')})
    select agent_id, 'reserved', ${COLUMNS.slice(1).join(', ')}
    from unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::numeric[], $10::text[],
                $11::bigint[], $12::bigint[], $13::text[], $14::text[], $15::text[], $16::numeric[])
      as t(${COLUMNS.join(', ')})
    returning id, nonce
  ), e as (insert into agent_payment_events (agent_payment_id, type) select id, 'sending' from p)
  select id, nonce from p`

/**
 * Writes reservations and their `sending` events through the shared group-commit writer: while
 * one write is in flight the next ones queue and go together as one fixed statement over column
 * arrays, so under load Postgres sees a few large inserts instead of one round trip per payment.
 * Each caller still waits for its own row to commit (a signed header is never returned unrecorded).
 */
export function createReservationWriter(db: Kysely<Database>, maxBatch = 256) {
  const writer = groupCommit<ReservationRow, string | undefined>({
    maxItems: maxBatch,
    // one flush at a time measured best here (two in flight was slower)
    maxInFlight: 1,
    async flush(rows) {
      const col = <K extends keyof ReservationRow>(k: K) =>
        rows.map((r) => (r[k] === null || r[k] === undefined ? null : String(r[k])))
      const res = await preparedQuery<{ id: string; nonce: string }>(
        db,
        'tollgate_agent_reservations_v3',
        RESERVATIONS_SQL,
        COLUMNS.map(col),
      )
      const ids = new Map(res.rows.map((r) => [r.nonce, r.id]))
      return rows.map((r) => ids.get(r.nonce))
    },
  })

  return {
    async write(row: ReservationRow): Promise<string> {
      const id = await writer.add(row)
      if (!id) throw new Error('reservation not written')
      return id
    },
  }
}
