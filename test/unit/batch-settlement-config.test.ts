import t from 'tap'
import { loadConfig } from '../../src/config.js'

const production = {
  TOLLGATE_DEPLOYMENT: 'production',
  RPC_URL: 'https://mainnet.base.example',
  RELAYER_PRIVATE_KEYS: `0x${'11'.repeat(32)}`,
  TOLLGATE_MASTER_KEY: '22'.repeat(32),
  TOLLGATE_RECEIVER_ADDRESS: `0x${'33'.repeat(20)}`,
}

t.test('batch-settlement is on by default wherever a master key and relayers are', async (t) => {
  t.equal(loadConfig(production).batchSettlement.enabled, true, 'production with a master key')
  t.equal(loadConfig({ ...production, BATCH_SETTLEMENT: 'off' }).batchSettlement.enabled, false, 'the switch')
  const sandbox = { RPC_URL: 'http://127.0.0.1:8545' }
  t.equal(loadConfig({ ...sandbox, TOLLGATE_MASTER_KEY: '22'.repeat(32) }).batchSettlement.enabled, true, 'sandbox')
  t.equal(loadConfig(sandbox).batchSettlement.enabled, false, 'no master key: no receiverAuthorizer key to hold')
  t.equal(
    loadConfig({ ...production, SETTLEMENT_MODE: 'facilitator', FACILITATOR_URL: 'https://f.example' }).batchSettlement
      .enabled,
    false,
    'no relayer to submit deposits',
  )
})
