import type { FastifyBaseLogger } from 'fastify'
import type { SchemeDeps } from '../scheme-deps.js'
import type { PayerCredit } from '../../ledger/payer-credit.js'

const BALANCE_OF = [
  {
    type: 'function',
    name: 'balanceOf',
    stateMutability: 'view',
    inputs: [{ name: 'a', type: 'address' }],
    outputs: [{ type: 'uint256' }],
  },
] as const

/**
 * Reads payers' balances of the configured USDC from the chain for the payer-credit cache:
 * `readOne` for the hot path's cold cache (first sight of a payer), `refreshInBackground` when a
 * cached balance is stale (at most one read per payer at a time).
 */
export function createBalanceReader(deps: Pick<SchemeDeps, 'chain' | 'config'>, credit: PayerCredit) {
  const refreshing = new Set<string>()
  /** balanceOf for the one payer of the list `credit.readBalances` hands over */
  const readOne = async ([payer]: string[]): Promise<bigint[]> => [
    await deps.chain.readContract({
      address: deps.config.chain.usdc.address,
      abi: BALANCE_OF,
      functionName: 'balanceOf',
      args: [payer as `0x${string}`],
    }),
  ]
  return {
    readOne,
    refreshInBackground(asset: string, payer: string, log: FastifyBaseLogger): void {
      if (refreshing.has(payer)) return
      refreshing.add(payer)
      credit
        .readBalances(asset, [payer], readOne)
        .catch((err) => log.warn({ err: (err as Error).message, payer }, 'balance refresh failed'))
        .finally(() => refreshing.delete(payer))
    },
  }
}
