import { formatEther } from 'viem'
import type { WithdrawalAsset } from '../../db/withdrawals-tables.js'
import { formatUsdc } from '../../x402/usdc-amount.js'

/**
 * An amount of a withdrawal's asset as a person reads it: USDC from atomic units, ETH from wei.
 * @example amountText('USDC', 9000n) // '0.009 USDC'
 */
export function amountText(asset: WithdrawalAsset, atomic: bigint): string {
  return asset === 'USDC' ? `${formatUsdc(atomic)} USDC` : `${formatEther(atomic)} ETH`
}
