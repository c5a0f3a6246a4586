import { randomBytes, randomUUID } from 'node:crypto'
import type { Deps } from '../../src/deps.js'

const hex = (n: number) => `0x${randomBytes(n).toString('hex')}`
const today = () => new Date().toISOString().slice(0, 10)

/** A seller namespace with one service and endpoint (owned by `owner`, or by nobody): its endpoint id and payee. */
export async function seedEndpoint(deps: Deps, namespace: string, displayName: string, owner: string | null) {
  const seller = await deps.db
    .insertInto('sellers')
    .values({ namespace, display_name: displayName, owner_user_id: owner })
    .returning('id')
    .executeTakeFirstOrThrow()
  const payTo = hex(20)
  const service = await deps.db
    .insertInto('services')
    .values({ seller_id: seller.id, name: 'api', display_name: `${displayName} API`, pay_to: payTo })
    .returning('id')
    .executeTakeFirstOrThrow()
  const endpoint = await deps.db
    .insertInto('endpoints')
    .values({
      service_id: service.id,
      slug: 'quote',
      methods: ['GET'],
      price: '3000',
      upstream_url: 'https://api.example.com/quote',
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  return { endpointId: endpoint.id, payTo, url: `http://127.0.0.1:4021/${namespace}/api/quote` }
}

interface PaymentSeed {
  payer: string
  payTo: string
  endpointId: string | null
  resource: string
  value: string
  status?: 'verified' | 'served' | 'settling' | 'settled' | 'voided' | 'failed'
  failureReason?: string
  txHash?: string
  /** the agent that paid (its id): an agent payment with the same payer and nonce is recorded too */
  agentId?: string
  createdAt?: Date
}

/**
 * A payment in the ledger as the proxy records it, with the events of the states it went through,
 * and, for one of the user's agents, its agent payment (accepted, counted against today's caps).
 */
export async function seedPayment(deps: Deps, p: PaymentSeed) {
  const id = randomUUID()
  const nonce = hex(32)
  const status = p.status ?? 'settled'
  const createdAt = p.createdAt ?? new Date()
  await deps.db
    .insertInto('payments')
    .values({
      id,
      endpoint_id: p.endpointId,
      resource: p.resource,
      method: 'GET',
      x402_version: 2,
      network: 'eip155:84532',
      asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
      payer: p.payer,
      pay_to: p.payTo,
      value: p.value,
      valid_after: 0,
      valid_before: 2_000_000_000,
      nonce,
      signature: '0xsig',
      status,
      failure_reason: p.failureReason ?? null,
      tx_hash: p.txHash ?? null,
      created_at: createdAt,
      settled_at: status === 'settled' ? new Date(createdAt.getTime() + 2000) : null,
    })
    .execute()
  const path =
    status === 'voided'
      ? ['verified', 'voided']
      : ['verified', 'served', ...(status === 'settling' || status === 'settled' ? ['settling'] : []), status]
  const steps = [...new Set(path)]
  for (const [i, to] of steps.entries())
    await deps.db
      .insertInto('payment_events')
      .values({
        payment_id: id,
        type: to,
        from_status: (i === 0 ? null : steps[i - 1]) as never,
        to_status: to as never,
        reason: to === 'voided' ? (p.failureReason ?? null) : null,
        data: null,
        created_at: new Date(createdAt.getTime() + i * 500),
      })
      .execute()
  let agentPaymentId: string | undefined
  if (p.agentId) {
    const day = today()
    const ap = await deps.db
      .insertInto('agent_payments')
      .values({
        agent_id: p.agentId,
        status: status === 'voided' ? 'rejected' : 'accepted',
        x402_version: 2,
        url: p.resource,
        method: 'GET',
        network: 'eip155:84532',
        asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        payer: p.payer,
        pay_to: p.payTo,
        amount: p.value,
        nonce,
        valid_after: 0,
        valid_before: 2_000_000_000,
        day_window: day,
        month_window: day.slice(0, 7),
        created_at: createdAt,
        updated_at: createdAt,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    agentPaymentId = ap.id
    await deps.db
      .insertInto('agent_payment_events')
      .values({ agent_payment_id: ap.id, type: status === 'voided' ? 'rejected' : 'accepted', data: null })
      .execute()
  }
  return { id, agentPaymentId }
}

/** The user's id by email. */
export async function userIdOf(deps: Deps, email: string): Promise<string> {
  return (await deps.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()).id
}
