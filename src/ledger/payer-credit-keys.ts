import type { Kysely } from 'kysely'
import type { Database } from '../db/database.js'
import { redisTag, type RedisClient } from '../redis-client.js'

/*
 * The Redis keys of payer credit (payer-credit.ts) and the context its operations share.
 */

export type RedisWithGuard = RedisClient & {
  tollgateGuardBatch?: (numberOfKeys: number, ...args: (string | number)[]) => Promise<number[]>
}

export type CreditDeps = { redis: RedisClient; db: Kysely<Database>; key(...p: string[]): string }

/**
 * Every key of a payer carries the payer as its hash tag: on a Redis Cluster they share one slot,
 * so each script touches one slot (docs/architecture.md "Redis Cluster").
 */
export function creditKeys(key: CreditDeps['key']) {
  return {
    nonce: (payer: string, nonce: string) => key('nonce', redisTag(payer), nonce),
    balance: (asset: string, payer: string) => key('bal', redisTag(payer), asset),
    fresh: (asset: string, payer: string) => key('balfresh', redisTag(payer), asset),
    exposure: (asset: string, payer: string) => key('exp', redisTag(payer), asset),
    blocked: (payer: string) => key('blocked', redisTag(payer)),
    rebuild: (asset: string, payer: string) => key('exprebuild', redisTag(payer), asset),
    stamp: (asset: string, payer: string) => key('balstamp', redisTag(payer), asset),
  }
}

export type CreditKeys = ReturnType<typeof creditKeys>

/** What the payer-credit operations share: Redis (with the guard script defined), Postgres, the keys. */
export interface CreditContext {
  redis: RedisWithGuard
  db: Kysely<Database>
  k: CreditKeys
}
