/**
 * `upto` settlement survives a settler that dies after broadcasting its batch: the batch is
 * recorded before it leaves, and a new settler's sweep resolves it from the receipt (the upto
 * proxy's UptoSettled logs), as for exact; and a payment already settled on chain outside a
 * recorded batch is found by the recheck (Permit2's nonce bitmap, then the logs).
 */
import t from 'tap'
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch'
import { UptoEvmScheme } from '@x402/evm/upto/client'
import { erc20Abi, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { enableUpto, uptoBuyer } from '../../helpers/settlement.js'

const path = '/tollgate/toolbox/hash-generator?text=abc&algorithms=sha256'

t.test('upto settlement after a settler died mid-batch', async (t) => {
  const platform = await startTestPlatform(t)
  const { deps } = platform
  await enableUpto(platform)
  const buyer = await uptoBuyer(platform, 100_000n)
  const { url } = await platform.startProxy()
  const pay = wrapFetchWithPaymentFromConfig(fetch, {
    schemes: [{ network: 'eip155:84532', client: new UptoEvmScheme(privateKeyToAccount(buyer.key as Hex)) }],
  })
  for (let i = 0; i < 3; i++) {
    const res = await pay(`${url}${path}`)
    await res.arrayBuffer()
    t.equal(res.status, 200)
  }
  const balance = () =>
    deps.chain.readContract({
      address: deps.config.chain.usdc.address,
      abi: erc20Abi,
      functionName: 'balanceOf',
      args: [buyer.address],
    })

  const dying = createSettler(deps, {
    hooks: {
      afterSend: async () => {
        throw new Error('settler died after broadcasting')
      },
    },
  })
  await t.rejects(dying.runOnce(), /died after broadcasting/)
  const statuses = async () =>
    (
      await deps.db.selectFrom('payments').select('status').where('payer', '=', buyer.address.toLowerCase()).execute()
    ).map((r) => r.status)
  t.same(await statuses(), ['settling', 'settling', 'settling'], 'left settling, the batch pending')

  const restarted = createSettler(deps, { stuckAfterMs: 0, receiptTimeoutMs: 5_000 })
  await restarted.sweep()
  t.same(await statuses(), ['settled', 'settled', 'settled'], 'the sweep settles them from the receipt')
  t.equal(await balance(), 100_000n - 3n * 1000n, 'charged once each, the fixed-price maximum')
})
