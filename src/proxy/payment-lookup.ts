import type { FastifyInstance } from 'fastify'
import type { Deps } from '../deps.js'
import { appError } from '../errors.js'
import { sendAppError } from '../http/plugins/error-handler.js'

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** `GET /_tollgate/payments/:id`: a payment's status and settlement, for the buyer holding its receipt. */
export function paymentLookupRoutes(deps: Pick<Deps, 'db'>) {
  return async function (app: FastifyInstance) {
    app.get('/_tollgate/payments/:id', async (request, reply) => {
      const { id } = request.params as { id: string }
      if (!UUID_RE.test(id)) {
        return sendAppError(reply, appError('invalid_parameter', { param: 'id', detail: 'expected a payment id (UUID)' }, { details: { param: 'id' } }))
      }
      const row = await deps.db
        .selectFrom('payments')
        .select(['id', 'status', 'tx_hash', 'network', 'payer', 'pay_to', 'value', 'resource', 'failure_reason', 'created_at', 'settled_at'])
        .where('id', '=', id)
        .executeTakeFirst()
      if (!row) return sendAppError(reply, appError('not_found', { what: 'payment' }))
      reply.header('cache-control', row.status === 'settled' || row.status === 'voided' || row.status === 'failed' ? 'public, max-age=3600' : 'no-store')
      return {
        id: row.id,
        status: row.status,
        transaction: row.tx_hash,
        network: row.network,
        payer: row.payer,
        payTo: row.pay_to,
        amount: row.value,
        resource: row.resource,
        failureReason: row.failure_reason,
        createdAt: row.created_at.getTime(),
        settledAt: row.settled_at ? row.settled_at.getTime() : null,
      }
    })
  }
}
