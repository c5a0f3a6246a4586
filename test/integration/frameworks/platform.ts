import { startBuyerPlatform, type BuyerPlatform } from '../../helpers/buyer.js'

interface T {
  teardown(fn: () => unknown): void
}

/**
 * A buyer platform for the framework tools' tests: the hosted echo endpoint (0.001 USDC a call),
 * and counts of what was paid (the platform's agent payments, the proxy's seller payments).
 */
export async function frameworkPlatform(t: T): Promise<{
  p: BuyerPlatform
  echo: (msg: string) => string
  agentPayments: (agentId: string) => Promise<Array<{ id: string; amount: string; status: string }>>
  sellerPayments: () => Promise<number>
}> {
  const p = await startBuyerPlatform(t)
  return {
    p,
    echo: (msg) => `${p.proxyUrl}/tollgate/toolbox/echo?msg=${encodeURIComponent(msg)}`,
    agentPayments: (agentId) =>
      p.deps.db
        .selectFrom('agent_payments')
        .select(['id', 'amount', 'status'])
        .where('agent_id', '=', agentId)
        .orderBy('created_at')
        .execute(),
    sellerPayments: async () =>
      Number(
        (
          await p.deps.db
            .selectFrom('payments')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      ),
  }
}
