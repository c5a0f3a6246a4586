/**
 * A facilitator's transaction through the platform's relayers (exact's transfer, batch-settlement's
 * deposit, claim, settle and refund): one relayer call, tried again while every relayer is busy, its
 * hash written to the `facilitator_settlements` row as it is sent, so a repeat (even after a crash)
 * finds the transaction. `sent` learns the hash before the broadcast.
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Hex, PublicClient } from 'viem'
import type { Kysely } from 'kysely'
import { relayerCall, type RelayerCallResult } from '../../chain/relayer-call.js'
import type { createRelayerLock, Relayer } from '../../chain/relayer.js'
import type { Config } from '../../config.js'
import type { Database } from '../../db/database.js'

const RELAYER_TRIES = 20
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export interface RelayedSendDeps {
  config: Readonly<Config>
  db: Kysely<Database>
  chain: PublicClient
  relayers: readonly Relayer[]
  lock: ReturnType<typeof createRelayerLock>
  log: FastifyBaseLogger
}

export async function relayedSend(
  x: RelayedSendDeps,
  id: string,
  tx: { to: Hex; data: Hex },
  sent: { hash?: Hex },
): Promise<RelayerCallResult | null> {
  const ctx = {
    chain: x.chain,
    chainId: x.config.chain.chainId,
    maxFeePerGasWei: x.config.settlement.maxFeePerGasWei,
    lock: x.lock,
    relayers: x.relayers,
  }
  const onSent = (hash: Hex) => {
    sent.hash = hash
    x.db
      .updateTable('facilitator_settlements')
      .set({ tx_hash: hash })
      .where('id', '=', id)
      .execute()
      .catch((err) => x.log.warn({ err: (err as Error).message }, 'facilitator tx_hash not recorded'))
  }
  for (let i = 0; i < RELAYER_TRIES; i++) {
    const r = await relayerCall(ctx, tx, { timeoutMs: 60_000, onSent })
    if (r) return r
    await sleep(250)
  }
  return null
}
