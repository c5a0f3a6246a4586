/**
 * Gas per payment: Multicall3 aggregate3 batches of 1, 10, 50, 200 transferWithAuthorization calls
 * against single transferWithAuthorization transactions, measured in the same run on a fresh devnet.
 *   node --import tsx bench/settle.bench.ts
 */
import { randomBytes } from 'node:crypto'
import { createWalletClient, getAddress, http, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { startDevnet } from '../src/chain/devnet.js'
import { MULTICALL3_ADDRESS } from '../src/chain/multicall3-abi.js'
import { eip3009Types } from '../src/chain/usdc-abi.js'
import type { Payment } from '../src/db/database.js'
import { aggregate3Data, transferCallData } from '../src/services/settlement/chain-ops.js'

const devnet = await startDevnet({ port: 0 })
try {
  const payer = privateKeyToAccount(devnet.accounts.demoPayer.privateKey)
  const relayer = createWalletClient({
    account: privateKeyToAccount(devnet.accounts.relayer.privateKey),
    transport: http(devnet.rpcUrl),
    chain: devnet.chain,
  })
  const { createPublicClient } = await import('viem')
  const client = createPublicClient({ transport: http(devnet.rpcUrl), chain: devnet.chain })
  const now = Math.floor(Date.now() / 1000)
  async function payment(): Promise<Payment> {
    const nonce = `0x${randomBytes(32).toString('hex')}` as Hex
    const msg = {
      from: payer.address,
      to: devnet.accounts.receiver.address,
      value: 1000n,
      validAfter: 0n,
      validBefore: BigInt(now + 3600),
      nonce,
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
      value: '1000',
      valid_after: '0',
      valid_before: String(msg.validBefore),
      nonce,
      signature,
    } as unknown as Payment
  }
  async function gasOf(to: `0x${string}`, data: Hex): Promise<bigint> {
    const hash = await relayer.sendTransaction({ to, data })
    const r = await client.waitForTransactionReceipt({ hash })
    if (r.status !== 'success') throw new Error('reverted')
    return r.gasUsed
  }
  const usdc = getAddress(devnet.usdcAddress)
  let single = 0n
  for (let i = 0; i < 5; i++) single += await gasOf(usdc, transferCallData(await payment()))
  const singlePer = Number(single) / 5
  const rows = [
    `| batch | gas/payment | vs single |`,
    `|---|---|---|`,
    `| single tx | ${singlePer.toFixed(0)} | 100% |`,
  ]
  for (const n of [1, 10, 50, 200]) {
    const ps = await Promise.all(Array.from({ length: n }, payment))
    const t0 = performance.now()
    const gas = await gasOf(MULTICALL3_ADDRESS, aggregate3Data(usdc, ps))
    const per = Number(gas) / n
    rows.push(
      `| ${n} | ${per.toFixed(0)} | ${((per / singlePer) * 100).toFixed(1)}% (${(performance.now() - t0).toFixed(0)} ms) |`,
    )
  }
  console.log(rows.join('\n'))
} finally {
  await devnet.stop()
}
