// The 409 a withdrawal gets when what may leave the wallet does not cover it.
import type { WithdrawalAsset } from '../../db/withdrawals-tables.js'
import { appError } from '../../errors.js'
import { amountText } from './amount-text.js'

/**
 * 409 `withdrawal_exceeds_available`: the wallet's `balance` less what it has signed and not
 * settled (`unsettled`) and, for ETH, the gas of sending it (`fee`) is less than `amount`.
 */
export function exceedsAvailable(asset: WithdrawalAsset, balance: bigint, unsettled: bigint, amount: bigint, fee = 0n) {
  const available = balance > unsettled + fee ? balance - unsettled - fee : 0n
  return appError(
    'withdrawal_exceeds_available',
    {
      available: amountText(asset, available),
      balance: amountText(asset, balance),
      unsettled: amountText(asset, unsettled),
      fee: fee ? ` and ${amountText('ETH', fee)} of gas for the transfer` : '',
      amount: amountText(asset, amount),
    },
    {
      details: {
        asset,
        balance: balance.toString(),
        unsettled: unsettled.toString(),
        available: available.toString(),
        amount: amount.toString(),
        ...(fee ? { fee: fee.toString() } : {}),
      },
    },
  )
}
