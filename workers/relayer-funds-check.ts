import { formatEther } from 'viem'
import { relayerFunds } from '../src/services/metrics/relayer-funds.js'
import type { JobModule } from './job.js'

/**
 * Warns in the worker's log while any relayer is below RELAYER_MIN_ETH_WEI, before it runs dry
 * (the same threshold fails /readyz). Returns the balances so Bull Board shows them too.
 */
export const name = 'relayer-funds-check'
export type Payload = Record<string, never>

export const relayerFundsCheck: JobModule<Payload> = {
  name,
  defaultOptions: { attempts: 1, removeOnComplete: 20, removeOnFail: 20 },
  everyMs: () => 60_000,
  async process({ deps, log }) {
    if (deps.config.settlement.mode === 'facilitator') return []
    const funds = await relayerFunds(deps)
    for (const r of funds.filter((f) => f.low)) {
      log.warn(
        { relayer: r.address, eth: formatEther(r.wei), minEth: formatEther(deps.config.settlement.relayerMinEthWei) },
        'relayer low on ETH: top it up before settlement stops',
      )
    }
    return funds.map((f) => ({ address: f.address, eth: formatEther(f.wei), low: f.low }))
  },
}
