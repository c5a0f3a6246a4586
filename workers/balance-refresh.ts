import type { JobModule } from './job.js'

/** Refreshes the hot path's cached payer balances and rebuilds exposure from Postgres. */
export const name = 'balance-refresh'
export type Payload = Record<string, never>

export const balanceRefresh: JobModule<Payload> = {
  name,
  defaultOptions: { attempts: 1, removeOnComplete: 20, removeOnFail: 20 },
  everyMs: () => 60_000,
  process: ({ settler }) => settler.refreshBalances(),
}
