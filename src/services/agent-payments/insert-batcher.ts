import { sql, type Kysely } from 'kysely'
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
 * Writes reservations and their `sending` events, coalescing concurrent calls into one
 * multi-row statement: while one write is in flight the next ones queue and go together, so
 * under load Postgres sees a few large inserts instead of one round trip per payment. Each
 * caller still waits for its own row to commit (a signed header is never returned unrecorded).
 */
export function reservationWriter(db: Kysely<Database>, maxBatch = 256) {
  type Item = { row: ReservationRow; resolve(id: string): void; reject(err: unknown): void }
  let queue: Item[] = []
  let busy = false

  async function flush(): Promise<void> {
    busy = true
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch)
      queue = queue.slice(batch.length)
      try {
        const values = sql.join(
          batch.map(
            ({ row: r }) =>
              sql`(${r.agent_id}::uuid, 'reserved', ${r.x402_version}::int, ${r.url}, ${r.method}, ${r.network}, ${r.asset}, ${r.payer}, ${r.pay_to}, ${r.amount}::numeric, ${r.nonce}, ${r.valid_after}::bigint, ${r.valid_before}::bigint, ${r.day_window}, ${r.month_window})`,
          ),
        )
        const res = await sql<{ id: string; nonce: string }>`
          with p as (
            insert into agent_payments (agent_id, status, x402_version, url, method, network, asset, payer, pay_to, amount, nonce, valid_after, valid_before, day_window, month_window)
            values ${values}
            returning id, nonce
          ), e as (insert into agent_payment_events (agent_payment_id, type) select id, 'sending' from p)
          select id, nonce from p`.execute(db)
        const ids = new Map(res.rows.map((r) => [r.nonce, r.id]))
        for (const it of batch) {
          const id = ids.get(it.row.nonce)
          if (id) it.resolve(id)
          else it.reject(new Error('reservation not written'))
        }
      } catch (err) {
        for (const it of batch) it.reject(err)
      }
    }
    busy = false
  }

  return {
    write(row: ReservationRow): Promise<string> {
      return new Promise<string>((resolve, reject) => {
        queue.push({ row, resolve, reject })
        if (!busy) void flush()
      })
    },
  }
}
