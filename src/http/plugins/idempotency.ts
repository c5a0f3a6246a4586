import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { RedisClient } from '../../redis-client.js'
import { appError } from '../../errors.js'
import { decryptSecret, encryptSecret } from '../../secrets/wallet-crypto.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** a creating POST: honours the Idempotency-Key header */
    idempotent?: boolean
  }
  interface FastifyRequest {
    idempotencySlot: string | null
  }
}

export interface IdempotencyOptions {
  redis: RedisClient
  key: (...parts: string[]) => string
  /** encrypts stored answers: they may hold a secret shown once (a new API key) */
  masterKey: () => Buffer
  /** who owns the key space (the user) */
  owner: (request: FastifyRequest) => string | undefined
}

/** Stored answers are replayed for 24 hours (Stripe's window). */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 3600
// A request that dies mid-way frees its key after this long.
const PENDING_TTL_SECONDS = 60

interface Stored {
  state: 'pending' | 'done'
  fp: string
  status?: number
  type?: string
  body?: string
}

/**
 * `Idempotency-Key` on creating POSTs (routes with `config.idempotent`): the same key with the same
 * method, path and body returns the first answer again (header `Idempotent-Replayed: true`); with a
 * different request it is 409 `idempotency_key_reused`; while the first is running, 409
 * `idempotency_in_progress`. Error answers are not stored, so a failed attempt can be retried.
 * Answers sit in Redis for 24 h, AES-GCM-encrypted under the master key.
 */
export const idempotency = fp<IdempotencyOptions>(
  async (app: FastifyInstance, opts) => {
    app.decorateRequest('idempotencySlot', null)
    app.addHook('preHandler', async (request, reply) => {
      if (!request.routeOptions.config?.idempotent) return
      const header = request.headers['idempotency-key']
      if (header === undefined) return
      const owner = opts.owner(request)
      if (typeof header !== 'string' || header.length < 1 || header.length > 255 || owner === undefined) {
        throw appError(
          'invalid_parameter',
          { param: 'Idempotency-Key', detail: 'expected 1 to 255 characters' },
          { details: { param: 'Idempotency-Key' } },
        )
      }
      const masterKey = opts.masterKey()
      const slot = opts.key('idempotency', owner, createHash('sha256').update(header).digest('hex'))
      const fp = createHash('sha256')
        .update(`${request.method} ${request.url}\n`)
        .update(JSON.stringify(request.body ?? null))
        .digest('hex')
      const claimed = await opts.redis.set(
        slot,
        JSON.stringify({ state: 'pending', fp } satisfies Stored),
        'EX',
        PENDING_TTL_SECONDS,
        'NX',
      )
      if (claimed === 'OK') {
        request.idempotencySlot = slot
        return
      }
      const raw = await opts.redis.get(slot)
      if (raw === null) throw appError('idempotency_in_progress')
      const stored = JSON.parse(raw) as Stored
      if (stored.fp !== fp) throw appError('idempotency_key_reused')
      if (stored.state === 'pending') throw appError('idempotency_in_progress')
      let body: string
      try {
        body = decryptSecret([masterKey], stored.body!, slot)
      } catch {
        // stored under a master key this process no longer holds (a rotation happened since)
        throw appError('idempotency_answer_unreadable')
      }
      reply.header('idempotent-replayed', 'true')
      reply.code(stored.status!).type(stored.type ?? 'application/json; charset=utf-8')
      return reply.send(body)
    })
    app.addHook('onSend', async (request, reply, payload) => {
      const slot = request.idempotencySlot
      if (!slot) return payload
      request.idempotencySlot = null
      if (reply.statusCode >= 400 || typeof payload !== 'string') {
        await opts.redis.del(slot)
        return payload
      }
      const fp = (JSON.parse((await opts.redis.get(slot)) ?? '{}') as Stored).fp
      const stored: Stored = {
        state: 'done',
        fp,
        status: reply.statusCode,
        type: String(reply.getHeader('content-type') ?? ''),
        body: encryptSecret(opts.masterKey(), payload, slot),
      }
      await opts.redis.set(slot, JSON.stringify(stored), 'EX', IDEMPOTENCY_TTL_SECONDS)
      return payload
    })
  },
  { name: 'tollgate-idempotency' },
)
