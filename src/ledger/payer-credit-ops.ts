import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { CreditContext } from './payer-credit-keys.js'
import {
  BALANCE_TTL_S,
  FRESH_TTL_S,
  REBUILD_BEGIN_LUA,
  REBUILD_END_LUA,
  REBUILD_TTL_MS,
  RELEASE_LUA,
  STAMPED_SET_LUA,
} from './payer-credit-scripts.js'
import { OPEN_STATUSES } from './statuses.js'

/*
 * The operations of payer credit (payer-credit.ts) off the hot-path guard: exposure released or
 * settled, cached balances read, exposure rebuilt from Postgres, a cold payer warmed.
 */

type Value = { payer: string; asset: string; value: bigint }
type ReadBalances = (payers: string[]) => Promise<bigint[]>

export async function release({ redis, k }: CreditContext, p: Value): Promise<void> {
  // A missing key (cold cache, flushed Redis) stays missing: it is rebuilt from Postgres, and a
  // negative exposure would overstate the payer's credit.
  await redis.eval(RELEASE_LUA, 1, k.exposure(p.asset, p.payer), p.value.toString())
}

export async function settled({ redis, k }: CreditContext, p: Value): Promise<void> {
  const keys = [
    k.exposure(p.asset, p.payer),
    k.balance(p.asset, p.payer),
    k.fresh(p.asset, p.payer),
    k.stamp(p.asset, p.payer),
  ]
  await redis.eval(RELEASE_LUA, 4, ...keys, p.value.toString(), String(BALANCE_TTL_S))
}

export async function setBalance({ redis, k }: CreditContext, asset: string, payer: string, balance: bigint) {
  await redis
    .multi()
    .set(k.balance(asset, payer), balance.toString(), 'EX', BALANCE_TTL_S)
    .set(k.fresh(asset, payer), '1', 'EX', FRESH_TTL_S)
    .exec()
}

export async function readBalances(
  { redis, k }: CreditContext,
  asset: string,
  payers: string[],
  read: ReadBalances,
): Promise<bigint[]> {
  if (payers.length === 0) return []
  // one GET per payer (each payer's keys sit in its own slot on a cluster; auto-pipelined)
  const stamps = await Promise.all(payers.map((p) => redis.get(k.stamp(asset, p))))
  const balances = await read(payers)
  await Promise.all(
    payers.map((p, i) =>
      redis.eval(
        STAMPED_SET_LUA,
        3,
        k.balance(asset, p),
        k.fresh(asset, p),
        k.stamp(asset, p),
        balances[i]!.toString(),
        stamps[i] ?? '',
        String(BALANCE_TTL_S),
        String(FRESH_TTL_S),
      ),
    ),
  )
  return balances
}

export async function rebuildExposure(
  { redis, db, k }: CreditContext,
  asset: string,
  payer: string,
  opts: { ifMissing?: boolean } = {},
): Promise<bigint> {
  const token = randomUUID()
  const begun = await redis.eval(
    REBUILD_BEGIN_LUA,
    2,
    k.rebuild(asset, payer),
    k.exposure(asset, payer),
    token,
    String(REBUILD_TTL_MS),
    opts.ifMissing ? '1' : '0',
  )
  if (begun === 2) return BigInt((await redis.get(k.exposure(asset, payer))) ?? '0')
  // pending USDC withdrawals from the wallet are reserved here too (src/services/withdrawals/)
  const r = await sql<{ total: string | null }>`
    select (coalesce((select sum(value) from payments where payer = ${payer} and asset = ${asset} and scheme in ('exact', 'upto') and status = any(${OPEN_STATUSES}::text[])), 0)
      + coalesce((select sum(amount) from withdrawals where lower(from_address) = lower(${payer}) and status = 'pending' and asset = 'USDC'), 0))::text as total`.execute(
    db,
  )
  const stored = (await redis.eval(
    REBUILD_END_LUA,
    2,
    k.exposure(asset, payer),
    k.rebuild(asset, payer),
    r.rows[0]?.total ?? '0',
    token,
  )) as string
  return BigInt(stored)
}

export async function warm(ctx: CreditContext, asset: string, payer: string, read: ReadBalances): Promise<void> {
  const { redis, db, k } = ctx
  const blocked = await db.selectFrom('payer_blocks').select('reason').where('payer', '=', payer).executeTakeFirst()
  if (blocked) await redis.set(k.blocked(payer), blocked.reason)
  else await redis.del(k.blocked(payer))
  // Only a missing exposure is rebuilt: callers that met the cold cache together each warm it,
  // and a rebuild that began after another's warm-up would drop the reservations made since
  // whose rows were not committed yet when it read Postgres (the payer over-credited).
  await rebuildExposure(ctx, asset, payer, { ifMissing: true })
  // a payment of this payer settling during the read leaves the balance unwritten: read again
  for (let i = 0; i < 3; i++) {
    await readBalances(ctx, asset, [payer], read)
    if ((await redis.exists(k.balance(asset, payer))) === 1) return
  }
}

export async function block({ redis, db, k }: CreditContext, payer: string, reason: string, paymentId?: string) {
  await db
    .insertInto('payer_blocks')
    .values({ payer, reason, payment_id: paymentId ?? null })
    .onConflict((oc) => oc.column('payer').doNothing())
    .execute()
  await redis.set(k.blocked(payer), reason)
}

export async function unblock({ redis, db, k }: CreditContext, payer: string): Promise<void> {
  await db.deleteFrom('payer_blocks').where('payer', '=', payer).execute()
  await redis.del(k.blocked(payer))
}
