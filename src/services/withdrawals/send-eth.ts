// One attempt at a claimed ETH withdrawal: the funding wallet's own transaction, signed once and
// recorded before its first broadcast, rebroadcast until it is mined; its receipt decides.
import { getAddress, keccak256, type Hex } from 'viem'
import type { Withdrawal, WithdrawalStatus } from '../../db/withdrawals-tables.js'
import { requireMasterKey } from '../../secrets/wallet-crypto.js'
import { broadcast } from '../../chain/relayer.js'
import { custodialAccount } from '../wallets/custodial-wallet.js'
import { gasPrice } from './chain.js'
import { AttemptFailed, ETH_TRANSFER_GAS, type WithdrawalContext } from './context.js'
import { confirm, fail } from './finish.js'
import { event, update } from './rows.js'

/** Sends the signed transaction again unless it is mined; the end when its receipt is there already. */
async function rebroadcast(ctx: WithdrawalContext, w: Withdrawal): Promise<WithdrawalStatus | undefined> {
  const { chain } = ctx
  const receipt = await chain.getTransactionReceipt({ hash: w.tx_hash as Hex }).catch(() => null)
  if (receipt)
    return receipt.status === 'success'
      ? confirm(ctx, w, w.tx_hash!, receipt.blockNumber)
      : fail(ctx, w, `the transaction ${w.tx_hash} reverted; only its gas was spent`)
  const mined = await chain.getTransactionCount({ address: getAddress(w.from_address), blockTag: 'latest' })
  if (BigInt(mined) > BigInt(w.tx_nonce!))
    throw new AttemptFailed("the wallet's nonce moved on but the transaction's receipt is not visible yet")
  await broadcast(chain, w.raw_tx as Hex)
  return undefined
}

/** Signs the transfer from the funding wallet, records it, then broadcasts it; the withdrawal as recorded. */
async function signAndSend(ctx: WithdrawalContext, w: Withdrawal): Promise<Withdrawal> {
  const { chain, config } = ctx
  const from = getAddress(w.from_address)
  const account = custodialAccount(
    [requireMasterKey(config)],
    'funding',
    from,
    (
      await ctx.db
        .selectFrom('funding_wallets')
        .select('encrypted_key')
        .where('user_id', '=', w.user_id)
        .executeTakeFirstOrThrow()
    ).encrypted_key,
  )
  const [nonce, fees, balance] = await Promise.all([
    chain.getTransactionCount({ address: from, blockTag: 'pending' }),
    gasPrice(ctx),
    chain.getBalance({ address: from }),
  ])
  const value = BigInt(w.amount)
  if (balance < value + fees.maxFeePerGas * ETH_TRANSFER_GAS)
    throw new AttemptFailed(
      `insufficient_funds: the wallet holds ${balance} wei, the withdrawal needs ${value} plus up to ${fees.maxFeePerGas * ETH_TRANSFER_GAS} of gas`,
    )
  const raw = await account.signTransaction({
    type: 'eip1559',
    chainId: config.chain.chainId,
    to: getAddress(w.to_address),
    value,
    gas: ETH_TRANSFER_GAS,
    nonce,
    ...fees,
  })
  const hash = keccak256(raw)
  // recorded before broadcast: a crash leaves the signed transaction to rebroadcast, never a second one
  await update(ctx.db, w.id, { raw_tx: raw, tx_hash: hash, tx_nonce: nonce })
  await event(ctx.db, w.id, 'submitted', 'pending', 'pending', null, { tx_hash: hash })
  await broadcast(chain, raw)
  return { ...w, raw_tx: raw, tx_hash: hash, tx_nonce: String(nonce) }
}

export async function attemptEth(ctx: WithdrawalContext, w: Withdrawal): Promise<WithdrawalStatus> {
  if (w.raw_tx && w.tx_hash) {
    const known = await rebroadcast(ctx, w)
    if (known) return known
  } else {
    w = await signAndSend(ctx, w)
  }
  const receipt = await ctx.chain
    .waitForTransactionReceipt({ hash: w.tx_hash as Hex, timeout: ctx.receiptTimeoutMs })
    .catch(() => null)
  if (!receipt) {
    await update(ctx.db, w.id, { locked_until: null, next_attempt_at: new Date(Date.now() + 5_000) })
    return 'pending'
  }
  return receipt.status === 'success'
    ? confirm(ctx, w, w.tx_hash!, receipt.blockNumber)
    : fail(ctx, w, `the transaction ${w.tx_hash} reverted; only its gas was spent`)
}
