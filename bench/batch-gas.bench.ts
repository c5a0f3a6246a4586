/**
 * Gas per paid call of the `batch-settlement` scheme (our dev-chain contracts, at their canonical
 * addresses) against `exact`, on a fresh devnet: channels opened and vouchers signed by the official
 * `@x402/evm` client; each channel's cumulative voucher claimed once for 20, 200 or 2,000 calls,
 * in claimWithSignature batches of 1 and 10 channels, then one settle per batch (one receiver).
 * exact: a single transferWithAuthorization transaction and a Multicall3 batch of 50 (what the
 * settler sends). Prints a markdown table.
 *   npm run bench:batch-gas
 */
import { randomBytes } from 'node:crypto'
import { createPublicClient, createWalletClient, getAddress, http, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { startDevnet } from '../src/chain/devnet.js'
import { MULTICALL3_ADDRESS } from '../src/chain/multicall3-abi.js'
import { eip3009Types } from '../src/chain/usdc-abi.js'
import { BATCH_SETTLEMENT_ADDRESS } from '../src/chain/batch-settlement/addresses.js'
import { signClaimBatch } from '../src/chain/batch-settlement/authorizer.js'
import { claimEntries, encodeClaimWithSignature, encodeSettle } from '../src/chain/batch-settlement/calldata.js'
import type { Payment } from '../src/db/database.js'
import { aggregate3Data, transferCallData } from '../src/services/settlement/chain-ops.js'
import { openChannel } from '../test/helpers/batch-channel.js'

const PRICE = 1000n
const devnet = await startDevnet({ port: 0 })
try {
  const relayerAccount = privateKeyToAccount(devnet.accounts.relayer.privateKey)
  const relayer = createWalletClient({ account: relayerAccount, transport: http(devnet.rpcUrl), chain: devnet.chain })
  const pub = createPublicClient({ transport: http(devnet.rpcUrl), chain: devnet.chain, pollingInterval: 50 })
  const gasOf = async (to: Hex, data: Hex) => {
    const r = await pub.waitForTransactionReceipt({ hash: await relayer.sendTransaction({ to, data }) })
    if (r.status !== 'success') throw new Error('reverted')
    return r.gasUsed
  }

  // exact: the payer's transferWithAuthorization, alone and in a Multicall3 batch of 50
  const payer = privateKeyToAccount(devnet.accounts.demoPayer.privateKey)
  const now = Math.floor(Date.now() / 1000)
  const payment = async (): Promise<Payment> => {
    const msg = {
      from: payer.address,
      to: devnet.accounts.receiver.address,
      value: PRICE,
      validAfter: 0n,
      validBefore: BigInt(now + 3600),
      nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
    }
    const signature = await payer.signTypedData({
      domain: { name: 'USDC', version: '2', chainId: devnet.chainId, verifyingContract: devnet.usdcAddress },
      types: { TransferWithAuthorization: eip3009Types.TransferWithAuthorization },
      primaryType: 'TransferWithAuthorization',
      message: msg,
    })
    return {
      payer: payer.address.toLowerCase(),
      pay_to: msg.to.toLowerCase(),
      value: PRICE.toString(),
      valid_after: '0',
      valid_before: String(msg.validBefore),
      nonce: msg.nonce,
      signature,
    } as unknown as Payment
  }
  const usdc = getAddress(devnet.usdcAddress)
  let single = 0n
  for (let i = 0; i < 5; i++) single += await gasOf(usdc, transferCallData(await payment()))
  const exactSingle = Number(single) / 5
  const exact50 =
    Number(
      await gasOf(MULTICALL3_ADDRESS, aggregate3Data(usdc, await Promise.all(Array.from({ length: 50 }, payment)))),
    ) / 50

  // batch-settlement
  const authorizer = privateKeyToAccount(generatePrivateKey())
  const deposits: bigint[] = []
  /** one claim of `k` fresh channels at `calls` calls each, then settle: [claim gas, settle gas] */
  async function claimAndSettle(k: number, calls: bigint): Promise<[bigint, bigint]> {
    const receiver = privateKeyToAccount(generatePrivateKey()).address
    const channels = []
    for (let i = 0; i < k; i++) {
      const ch = await openChannel(devnet, {
        receiver,
        receiverAuthorizer: authorizer.address,
        relayer: relayerAccount,
        deposit: calls * PRICE,
      })
      const r = await pub.getTransactionReceipt({ hash: ch.depositTx })
      deposits.push(r.gasUsed)
      channels.push(ch)
    }
    const claims = await Promise.all(
      channels.map(async (ch) => ({
        config: ch.config,
        maxClaimableAmount: calls * PRICE,
        signature: await ch.voucher(calls * PRICE),
        totalClaimed: calls * PRICE,
      })),
    )
    const ids = channels.map((c) => c.channelId)
    const sig = await signClaimBatch(authorizer, devnet.chainId, claimEntries(claims, ids))
    const claimGas = await gasOf(BATCH_SETTLEMENT_ADDRESS, encodeClaimWithSignature(claims, sig))
    const settleGas = await gasOf(BATCH_SETTLEMENT_ADDRESS, encodeSettle(receiver, usdc))
    return [claimGas, settleGas]
  }

  const rows = [
    '| scheme | calls per channel | channels per claim | claim gas | settle gas | gas per paid call | vs exact (batch of 50) | with the deposit |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    `| exact, single transferWithAuthorization | | | | | ${exactSingle.toFixed(0)} | ${((exactSingle / exact50) * 100).toFixed(1)}% | |`,
    `| exact, Multicall3 batch of 50 | | | | | ${exact50.toFixed(0)} | 100% | |`,
  ]
  const measured: Record<number, [bigint, bigint]> = {}
  for (const k of [1, 10]) measured[k] = await claimAndSettle(k, 200n)
  const deposit = Number(deposits.reduce((a, b) => a + b, 0n)) / deposits.length
  for (const calls of [20, 200, 2000]) {
    for (const k of [1, 10]) {
      const [claimGas, settleGas] = measured[k]!
      const per = Number(claimGas + settleGas) / (k * calls)
      const withDeposit = per + deposit / calls
      rows.push(
        `| batch-settlement | ${calls} | ${k} | ${claimGas} | ${settleGas} | ${per.toFixed(1)} | ${((per / exact50) * 100).toFixed(2)}% | ${withDeposit.toFixed(1)} (${((withDeposit / exact50) * 100).toFixed(2)}%) |`,
      )
    }
  }
  console.log(rows.join('\n'))
  console.log(`\ndeposit through the ERC-3009 collector: ${deposit.toFixed(0)} gas (mean of ${deposits.length})`)
} finally {
  await devnet.stop()
}
