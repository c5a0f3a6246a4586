/**
 * A settlement batch that would need more gas than one transaction may take (EIP-7825's cap,
 * which Base enforces, or `maxTxGas`) is split until each part fits: every payment settles, each
 * transaction under the cap. At the default batch size the cap is far; here a small `maxTxGas`
 * brings it within a dozen payments.
 */
import t from 'tap'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { MAX_TX_GAS } from '../../../src/services/settlement/settler-context.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer, payMany } from '../../helpers/settlement.js'

t.test('a batch over the per-transaction gas cap is split until each part fits', async (t) => {
  t.equal(MAX_TX_GAS, 2n ** 24n, 'the default is the EIP-7825 cap')
  const platform = await startTestPlatform(t)
  const { deps } = platform
  const payer = await newPayer(platform, 1_000_000n)
  const statuses = await payMany(platform, payer.key, 12)
  t.same(new Set(statuses), new Set([200]))

  const maxTxGas = 300_000n
  const stats = await createSettler(deps, { batchSize: 50, maxTxGas }).runOnce(60_000)
  t.equal(stats.settled, 12, 'every payment settled')
  t.ok(stats.batches > 1, `split into ${stats.batches} transactions`)
  const batches = await deps.db.selectFrom('settlement_batches').select(['size', 'gas_used', 'status']).execute()
  t.equal(
    batches.reduce((a, b) => a + b.size, 0),
    12,
    'each payment in exactly one batch',
  )
  for (const b of batches) {
    t.equal(b.status, 'confirmed')
    t.ok(BigInt(b.gas_used!) <= maxTxGas, `a batch of ${b.size} used ${b.gas_used} gas, under the cap`)
  }
  const rows = await deps.db.selectFrom('payments').select('status').execute()
  t.ok(rows.every((r) => r.status === 'settled'))
})
