/**
 * Issue #33 §4, upto after the buyer revokes its Permit2 allowance: the proxy trusts an allowance
 * it read for at most UPTO_ALLOWANCE_EXPOSURE of maxima (and UPTO_ALLOWANCE_CACHE_MS), so after a
 * revoke at most that much is served unpaid per proxy; the first settlement round that fails them
 * blocks the buyer, whose next call is refused even once it approves again.
 */
import t from 'tap'
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch'
import { UptoEvmScheme } from '@x402/evm/upto/client'
import { erc20Abi, maxUint256, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { PERMIT2_ADDRESS } from '../../../src/chain/permit2.js'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { enableUpto, settleAllOf, uptoBuyer, walletFor } from '../../helpers/settlement.js'

const PATH = '/tollgate/toolbox/hash-generator?text=abc&algorithms=sha256'
const PRICE = 1000n
const EXPOSURE = 5n * PRICE
const AFTER_REVOKE = 20

t.test(
  'revoke after calls: at most UPTO_ALLOWANCE_EXPOSURE served unpaid, the buyer blocked in one round',
  async (t) => {
    // the cache's time limit out of the way (a minute): only the exposure limit bounds what is served
    const platform = await startTestPlatform(t, {
      env: { UPTO_ALLOWANCE_EXPOSURE: EXPOSURE.toString(), UPTO_ALLOWANCE_CACHE_MS: '60000' },
    })
    const { deps } = platform
    await enableUpto(platform)
    const buyer = await uptoBuyer(platform, 1_000_000n)
    const { url } = await platform.startProxy()
    const pay = wrapFetchWithPaymentFromConfig(fetch, {
      schemes: [{ network: 'eip155:84532', client: new UptoEvmScheme(privateKeyToAccount(buyer.key as Hex)) }],
    })
    const call = async () => {
      const res = await pay(`${url}${PATH}`)
      await res.arrayBuffer()
      const header = res.headers.get('payment-required')
      return { status: res.status, reason: header ? decodeRequired(header).error : undefined }
    }
    for (let i = 0; i < 3; i++) t.equal((await call()).status, 200)
    await settleAllOf(deps, buyer.address)

    const wallet = walletFor(platform, buyer.key)
    const approve = async (amount: bigint) =>
      deps.chain.waitForTransactionReceipt({
        hash: await wallet.writeContract({
          address: deps.config.chain.usdc.address,
          abi: erc20Abi,
          functionName: 'approve',
          args: [PERMIT2_ADDRESS, amount],
        }),
      })
    await approve(0n)
    let served = 0
    const reasons = new Set<string>()
    const started = Date.now()
    for (let i = 0; i < AFTER_REVOKE; i++) {
      const r = await call()
      if (r.status === 200) served++
      else reasons.add(r.reason ?? String(r.status))
    }
    const rate = (AFTER_REVOKE * 1000) / (Date.now() - started)
    t.ok(served <= Number(EXPOSURE / PRICE), `${served} of ${AFTER_REVOKE} calls served after the revoke (bound 5)`)
    t.same([...reasons], ['permit2_allowance_required'], 'the rest refused for the allowance')

    // one settlement round: what was served on the old allowance fails, and the buyer is blocked
    await createSettler(deps, { batchSize: 50 }).runOnce()
    const rows = await deps.db
      .selectFrom('payments')
      .select(['status', 'failure_reason'])
      .where('payer', '=', buyer.address.toLowerCase())
      .where('status', '!=', 'settled')
      .execute()
    t.equal(rows.length, served, 'the calls served after the revoke are the unpaid ones')
    t.ok(
      rows.every((r) => r.status === 'failed'),
      `decided in one round: ${rows.map((r) => `${r.status}:${r.failure_reason}`).join(', ')}`,
    )
    const block = await deps.db
      .selectFrom('payer_blocks')
      .select('reason')
      .where('payer', '=', buyer.address.toLowerCase())
      .executeTakeFirst()
    t.ok(served === 0 || block, `blocked after one settlement round (${block?.reason})`)
    // approving again does not help a blocked buyer: this proxy cannot settle before answering
    await approve(maxUint256)
    if (served > 0) t.same(await call(), { status: 402, reason: 'payer_blocked' }, 'the blocked buyer is refused')
    t.comment(
      `figures: ${served} served unpaid after the revoke of ${AFTER_REVOKE} tried (exposure ${EXPOSURE}), ${rate.toFixed(1)} calls/s`,
    )
  },
)
