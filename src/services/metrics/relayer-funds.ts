import { formatEther, getAddress } from 'viem'
import type { CoreDeps as Deps } from '../../core-deps.js'
import { relayersFromKeys } from '../../chain/relayer.js'

export interface RelayerFunds {
  address: string
  wei: bigint
  /** below config.settlement.relayerMinEthWei */
  low: boolean
}

/** ETH balances of the configured relayers against RELAYER_MIN_ETH_WEI. */
export async function relayerFunds(deps: Pick<Deps, 'config' | 'chain'>): Promise<RelayerFunds[]> {
  const min = deps.config.settlement.relayerMinEthWei
  return Promise.all(
    relayersFromKeys(deps.config.relayerKeys).map(async (r) => {
      const wei = await deps.chain.getBalance({ address: r.address })
      return { address: getAddress(r.address), wei, low: wei < min }
    }),
  )
}

/**
 * The `relayers` readiness check (/readyz on web and proxy): fails naming every relayer below
 * RELAYER_MIN_ETH_WEI, so an operator tops it up before settlement stops. In facilitator mode
 * no relayer pays gas, so there is nothing to check.
 *
 * @example
 *   await app.register(healthRoutes(deps, { relayers: relayersReadiness }))
 */
export async function relayersReadiness(deps: Deps): Promise<void> {
  if (deps.config.settlement.mode === 'facilitator') return
  const low = (await relayerFunds(deps)).filter((r) => r.low)
  if (low.length > 0) {
    const min = formatEther(deps.config.settlement.relayerMinEthWei)
    throw new Error(`relayer ETH below ${min}: ${low.map((r) => `${r.address} has ${formatEther(r.wei)}`).join(', ')}`)
  }
}

/** The extra /readyz checks of a role: `relayers` when this deployment pays gas from relayers. */
export function relayerReadinessChecks(deps: Deps): Record<string, (deps: Deps) => Promise<void>> {
  return deps.config.settlement.mode === 'relayer' && deps.config.relayerKeys.length > 0
    ? { relayers: relayersReadiness }
    : {}
}
