import { sql, type Kysely } from 'kysely'
import { groupCommit } from '../../db/group-commit.js'
import type { Database } from '../../db/database.js'

export interface ReservationRow {
  agent_id: string
  x402_version: number
  url: string
  method: string
  network: string
  asset: string
  payer: string
  pay_to: string
  amount: string
  nonce: string
  valid_after: string
  valid_before: string
  day_window: string
  month_window: string
}

/**
 * Writes reservations and their `sending` events through the shared group-commit writer: while
 * one write is in flight the next ones queue and go together as one fixed statement over column
 * arrays, so under load Postgres sees a few large inserts instead of one round trip per payment.
 * Each caller still waits for its own row to commit (a signed header is never returned unrecorded).
 */
export function reservationWriter(db: Kysely<Database>, maxBatch = 256) {
  const writer = groupCommit<ReservationRow, string | undefined>({
    maxItems: maxBatch,
    // one flush at a time measured best here (two in flight was slower)
    maxInFlight: 1,
    async flush(rows) {
      const col = <K extends keyof ReservationRow>(k: K) => rows.map((r) => String(r[k]))
      const res = await sql<{ id: string; nonce: string }>`
        with p as (
          insert into agent_payments (agent_id, status, x402_version, url, method, network, asset, payer, pay_to, amount, nonce, valid_after, valid_before, day_window, month_window)
          select agent_id, 'reserved', x402_version, url, method, network, asset, payer, pay_to, amount, nonce, valid_after, valid_before, day_window, month_window
          from unnest(${col('agent_id')}::uuid[], ${col('x402_version')}::int[], ${col('url')}::text[], ${col('method')}::text[], ${col('network')}::text[],
                      ${col('asset')}::text[], ${col('payer')}::text[], ${col('pay_to')}::text[], ${col('amount')}::numeric[], ${col('nonce')}::text[],
                      ${col('valid_after')}::bigint[], ${col('valid_before')}::bigint[], ${col('day_window')}::text[], ${col('month_window')}::text[])
            as t(agent_id, x402_version, url, method, network, asset, payer, pay_to, amount, nonce, valid_after, valid_before, day_window, month_window)
          returning id, nonce
        ), e as (insert into agent_payment_events (agent_payment_id, type) select id, 'sending' from p)
        select id, nonce from p`.execute(db)
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
