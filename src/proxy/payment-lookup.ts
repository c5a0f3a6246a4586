import type { FastifyInstance, FastifyReply } from 'fastify'
import type { CoreDeps as Deps } from '../core-deps.js'
import { appError } from '../errors.js'
import { paymentVerdict } from './payment-verdict.js'

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/
const NONCE_RE = /^0x[0-9a-fA-F]{64}$/

/** A final status never changes again: its answer may be cached. */
function cacheFor(reply: FastifyReply, status: string) {
  reply.header(
    'cache-control',
    status === 'settled' || status === 'voided' || status === 'failed' ? 'public, max-age=3600' : 'no-store',
  )
}

function queryParam(query: unknown, name: 'payer' | 'nonce', re: RegExp, expected: string): string {
  const v = (query as Record<string, unknown> | undefined)?.[name]
  if (v === undefined)
    throw appError(
      'invalid_parameter',
      {
        param: name,
        detail: `missing: look a payment up by payer and nonce, e.g. /_tollgate/payments?payer=0x…&nonce=0x… (or by its id, /_tollgate/payments/{id})`,
      },
      { details: { param: name } },
    )
  if (typeof v !== 'string' || !re.test(v))
    throw appError(
      'invalid_parameter',
      { param: name, detail: `expected ${expected}, as signed in the payment's authorization` },
      { details: { param: name } },
    )
  return v.toLowerCase()
}

/**
 * The buyer's look-up of a payment on the proxy, without any credential:
 * - `GET /_tollgate/payments/{id}`: by the id the payment response carried (`paymentId`);
 * - `GET /_tollgate/payments?payer=0x…&nonce=0x…`: by what the buyer signed, for the buyer who
 *   never got the answer (and so never got the id). It answers only what the buyer knows or the
 *   chain shows: status, whether it was charged and what that means, amount, network, transaction.
 *
 * @example
 *   await app.register(paymentLookupRoutes(deps))
 */
export function paymentLookupRoutes(deps: Pick<Deps, 'db'>) {
  return async function (app: FastifyInstance) {
    app.get('/_tollgate/payments/:id', async (request, reply) =>
      byId(deps, (request.params as { id: string }).id, reply),
    )
    app.get('/_tollgate/payments', async (request, reply) => {
      const payer = queryParam(request.query, 'payer', ADDRESS_RE, 'an address (0x and 40 hex digits)')
      const nonce = queryParam(request.query, 'nonce', NONCE_RE, 'a nonce (0x and 64 hex digits)')
      return byPayerAndNonce(deps, payer, nonce, reply)
    })
  }
}

/** A payment by the id its payment response carried. */
async function byId(deps: Pick<Deps, 'db'>, id: string, reply: FastifyReply) {
  if (!UUID_RE.test(id))
    throw appError(
      'invalid_parameter',
      {
        param: 'id',
        detail:
          'expected a payment id (UUID), or look it up by payer and nonce: /_tollgate/payments?payer=0x…&nonce=0x…',
      },
      { details: { param: 'id' } },
    )
  const row = await deps.db
    .selectFrom('payments')
    .select([
      'id',
      'status',
      'tx_hash',
      'network',
      'payer',
      'pay_to',
      'value',
      'resource',
      'failure_reason',
      'created_at',
      'settled_at',
    ])
    .where('id', '=', id)
    .executeTakeFirst()
  if (!row) throw appError('not_found', { what: 'payment' })
  cacheFor(reply, row.status)
  return {
    id: row.id,
    status: row.status,
    ...paymentVerdict(row),
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
}

/** A payment by what its buyer signed (lower-case payer and nonce), for the buyer who never got its id. */
async function byPayerAndNonce(deps: Pick<Deps, 'db'>, payer: string, nonce: string, reply: FastifyReply) {
  const row = await deps.db
    .selectFrom('payments')
    .select(['status', 'tx_hash', 'network', 'value', 'failure_reason'])
    .where('payer', '=', payer)
    .where('nonce', '=', nonce)
    .executeTakeFirst()
  // never recorded: nothing was charged here (a payment refused before recording may be sent again while valid)
  if (!row) throw appError('not_found', { what: 'payment with this payer and nonce' })
  cacheFor(reply, row.status)
  // no id, resource or payee: once settled, payer and nonce are public on chain, and they must not lead to more
  return {
    status: row.status,
    ...paymentVerdict(row),
    transaction: row.tx_hash,
    network: row.network,
    amount: row.value,
    failureReason: row.failure_reason,
  }
}
