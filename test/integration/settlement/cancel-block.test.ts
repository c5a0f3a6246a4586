/**
 * Issue #33 §4, exact after the buyer cancels its authorizations: a buyer served 10 calls cancels 8
 * of their authorizations on chain (`cancelAuthorization`) before they settle. One settlement round
 * decides all 10 (2 settled, 8 failed authorization_canceled) and blocks the buyer, whose next call
 * is refused by a proxy that cannot settle before answering: what it can leave unpaid is what it was
 * served before that round.
 */
import t from 'tap'
import { getAddress, type Hex } from 'viem'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer, payMany, walletFor } from '../../helpers/settlement.js'

const SERVED = 10
const CANCELLED = 8

t.test('cancelAuthorization after served: failed, and the payer blocked within one settlement round', async (t) => {
  const platform = await startTestPlatform(t)
  const { deps, devnet } = platform
  const p = await newPayer(platform, 100_000n)
  const started = Date.now()
  t.same(await payMany(platform, p.key, SERVED, 1), Array(SERVED).fill(200), 'served, not settled yet')
  const rate = (SERVED * 1000) / (Date.now() - started)
  const rows = await deps.db
    .selectFrom('payments')
    .select(['id', 'nonce'])
    .where('payer', '=', p.address.toLowerCase())
    .orderBy('created_at')
    .execute()
  const wallet = walletFor(platform, p.key)
  for (const row of rows.slice(0, CANCELLED)) {
    const signature = await wallet.signTypedData({
      domain: {
        name: deps.config.chain.usdc.name,
        version: deps.config.chain.usdc.version,
        chainId: devnet.chainId,
        verifyingContract: devnet.usdcAddress,
      },
      types: {
        CancelAuthorization: [
          { name: 'authorizer', type: 'address' },
          { name: 'nonce', type: 'bytes32' },
        ],
      },
      primaryType: 'CancelAuthorization',
      message: { authorizer: p.address, nonce: row.nonce as Hex },
    })
    await deps.chain.waitForTransactionReceipt({
      hash: await wallet.writeContract({
        address: devnet.usdcAddress,
        abi: usdcAbi,
        functionName: 'cancelAuthorization',
        args: [getAddress(p.address), row.nonce as Hex, signature],
      }),
    })
  }

  await createSettler(deps, { batchSize: 50 }).runOnce()
  const after = await deps.db
    .selectFrom('payments')
    .select(['status', 'failure_reason'])
    .where('payer', '=', p.address.toLowerCase())
    .execute()
  const count = (k: string) => after.filter((r) => `${r.status}:${r.failure_reason}` === k).length
  t.equal(count('settled:null'), SERVED - CANCELLED, 'the others settled in the same round')
  t.equal(count('failed:authorization_canceled'), CANCELLED, 'the cancelled ones failed in that round')
  const block = await deps.db
    .selectFrom('payer_blocks')
    .select('reason')
    .where('payer', '=', p.address.toLowerCase())
    .executeTakeFirst()
  t.equal(block?.reason, 'authorization_canceled', 'blocked after one settlement round')
  const [next] = await payMany(platform, p.key, 1, 1)
  t.equal(next, 402, 'the next call refused (payer_blocked: this proxy cannot settle first)')
  t.comment(
    `figures: ${CANCELLED}/${SERVED} unpaid, all served before the first settlement round; blocked after it; ${rate.toFixed(1)} calls/s`,
  )
})
