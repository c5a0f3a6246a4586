/**
 * The cooperative refund of an agent wallet's `batch-settlement` channel (issue #34): what the seller
 * did not charge comes back to the agent wallet, now, without gas from it.
 *
 * The platform holds both sides of the refund: the agent's custodial key signs the zero-charge
 * voucher (the official client's `signVoucher`, ceiling = what the proxy charged), and the proxy's
 * refund (src/schemes/batch-settlement/refund.ts, the same code a `refund` payload on an endpoint
 * runs) claims the charged amount and refunds the rest in one transaction signed by the platform's
 * receiverAuthorizer key, recorded before it is broadcast and decided from its receipt.
 *
 * Only once the receipt says the refund happened (its `Refunded` event) does the agent get back
 * what its caps still counted for the channel: the vouchers it signed on it and the proxy never
 * charged stop counting (`superseded`), as nothing can claim them any more. A refund that failed or
 * is not mined yet releases nothing.
 */
import type { Kysely } from 'kysely'
import type { FastifyBaseLogger } from 'fastify'
import type { Hex, PublicClient } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { toClientEvmSigner } from '@x402/evm'
import { computeChannelId, signVoucher } from '@x402/evm/batch-settlement/client'
import type { Config } from '../../config.js'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import type { RedisClient } from '../../redis-client.js'
import { requireMasterKey } from '../../secrets/wallet-crypto.js'
import { batchChannelSides, createBatchRefunds } from '../../schemes/batch-settlement/batch-scheme.js'
import { U128_MAX } from '../../schemes/batch-settlement/constants.js'
import type { RefundExecutor } from '../../schemes/batch-settlement/refund.js'
import type { ChannelConfig } from '../../schemes/batch-settlement/typed-data.js'
import type { AgentRow } from '../accounts/agent-auth.js'
import { ensurePlatformKey } from '../wallets/platform-key.js'
import { createAgentChannels } from './agent-channels.js'
import { CustodialKeys } from './custodial-keys.js'
import { createSpendWindows } from './spend-windows.js'

export interface AgentChannelRefundDeps {
  db: Kysely<Database>
  redis: RedisClient
  key(...parts: string[]): string
  chain: PublicClient
  config: Readonly<Config>
}

const CHANNEL_ID = /^0x[0-9a-f]{64}$/

export function createAgentChannelRefunds(deps: AgentChannelRefundDeps) {
  const { db, config } = deps
  const keys = new CustodialKeys(config.masterKey)
  const windows = createSpendWindows(deps.redis, deps.key)
  const channels = createAgentChannels({ db })
  let executor: Promise<RefundExecutor> | undefined
  const refunds = () =>
    (executor ??= ensurePlatformKey(db, requireMasterKey(config), 'batch-receiver-authorizer').then((k) =>
      createBatchRefunds(deps, batchChannelSides(deps), k.signer),
    ))

  return {
    /**
     * Refunds what is not charged in `agent`'s channel `channelId` (or `amount` of it) to the agent
     * wallet; its answer once the receipt decided it.
     */
    async refund(agent: AgentRow, channelId: string, body: { amount?: unknown }, log: FastifyBaseLogger) {
      if (!config.batchSettlement.enabled)
        throw appError('service_unavailable', { detail: 'batch-settlement is not enabled on this deployment' })
      const id = channelId.toLowerCase()
      const amount = amountOf(body.amount)
      const row = CHANNEL_ID.test(id) ? await channelOf(db, agent.id, id) : undefined
      if (!row) throw appError('not_found', { what: 'channel' })
      const c: ChannelConfig = {
        payer: row.payer as Hex,
        payerAuthorizer: row.payer as Hex,
        receiver: row.receiver as Hex,
        receiverAuthorizer: row.receiver_authorizer as Hex,
        token: row.token as Hex,
        withdrawDelay: row.withdraw_delay,
        salt: row.salt as Hex,
      }
      if (computeChannelId(c, config.chain.caip2).toLowerCase() !== id)
        throw new Error(`agent channel ${id} does not hash to its id`)
      const charged = BigInt(row.charged ?? 0)
      const account = privateKeyToAccount(`0x${keys.privateKeyOf(agent).toString('hex')}`)
      const voucher = await signVoucher(toClientEvmSigner(account), id as Hex, charged.toString(), config.chain.caip2)
      const r = await (
        await refunds()
      ).refund(
        {
          config: c,
          channelId: id as Hex,
          maxClaimable: charged,
          signature: voucher.signature as Hex,
          ...(amount === undefined ? {} : { amount }),
        },
        log,
      )
      if (!r.ok) {
        const detail = `${r.reason}: ${r.detail || 'the channel moved; retry'}`
        if (r.retry) throw appError('service_unavailable', { detail }, { headers: { 'retry-after': '2' } })
        throw appError('channel_refund_refused', { detail }, { details: { reason: r.reason, channel_id: id } })
      }
      // confirmed on chain: what nothing can claim any more stops counting against the caps
      await channels.releaseCovered(windows, {
        rowId: r.id,
        payer: row.payer,
        payTo: row.receiver,
        channelId: id,
        charged: r.charged,
        aggregate: U128_MAX,
      })
      const view = (await channels.list(agent.id)).find((v) => v.channel_id === id)
      return {
        object: 'agent_channel_refund' as const,
        channel_id: id,
        refunded: r.refunded.toString(),
        transaction: r.txHash,
        charged: r.charged.toString(),
        channel: view ?? null,
      }
    },
  }
}

/** `amount`: absent (everything not charged), or a positive atomic amount as a decimal string. */
function amountOf(v: unknown): bigint | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string' || !/^[1-9][0-9]{0,37}$/.test(v) || BigInt(v) > U128_MAX)
    throw appError(
      'invalid_parameter',
      { param: 'amount', detail: 'a positive amount of atomic USDC as a decimal string' },
      { details: { param: 'amount' } },
    )
  return BigInt(v)
}

async function channelOf(db: Kysely<Database>, agentId: string, channelId: string) {
  return db
    .selectFrom('agent_channels as a')
    .leftJoin('batch_channels as b', 'b.channel_id', 'a.channel_id')
    .select(['a.payer', 'a.receiver', 'a.receiver_authorizer', 'a.token', 'a.withdraw_delay', 'a.salt', 'b.charged'])
    .where('a.agent_id', '=', agentId)
    .where('a.channel_id', '=', channelId)
    .executeTakeFirst()
}
