import t from 'tap'
import { AAVE_V3_POOL_BASE, ConfigError, loadConfig } from '../../src/config.js'

const production = {
  TOLLGATE_DEPLOYMENT: 'production',
  RPC_URL: 'https://mainnet.base.example',
  RELAYER_PRIVATE_KEYS: `0x${'11'.repeat(32)}`,
  TOLLGATE_MASTER_KEY: '22'.repeat(32),
  TOLLGATE_RECEIVER_ADDRESS: `0x${'33'.repeat(20)}`,
}

t.test('wallet-behavior-score-query settings (handler providers)', async (t) => {
  const sandbox = loadConfig({ RPC_URL: 'http://127.0.0.1:8545' }).handlerProviders
  t.equal(sandbox.WALLET_SCORE_RPC_URL, 'http://127.0.0.1:8545', 'the platform RPC by default')
  t.equal(sandbox.WALLET_SCORE_AAVE_POOL, undefined, 'no Aave pool on the sandbox chain unless configured')
  t.equal(sandbox.WALLET_SCORE_LOG_BLOCKS, '100000')
  t.equal(sandbox.WALLET_SCORE_LOG_CHUNK_BLOCKS, '10000')

  const prod = loadConfig(production).handlerProviders
  t.equal(prod.WALLET_SCORE_AAVE_POOL, AAVE_V3_POOL_BASE, 'production reads the Aave v3 Pool on Base')
  t.equal(prod.WALLET_SCORE_RPC_URL, 'https://mainnet.base.example')

  const other = loadConfig({ ...production, WALLET_SCORE_RPC_URL: 'https://other.example/' }).handlerProviders
  t.equal(other.WALLET_SCORE_RPC_URL, 'https://other.example')
  t.equal(other.WALLET_SCORE_AAVE_POOL, undefined, 'another RPC needs its own pool address')

  const pool = `0x${'ab'.repeat(20)}`
  t.equal(
    loadConfig({ WALLET_SCORE_AAVE_POOL: pool, WALLET_SCORE_LOG_BLOCKS: '5000' }).handlerProviders
      .WALLET_SCORE_AAVE_POOL,
    pool,
  )
  t.ok(Object.isFrozen(loadConfig({}).handlerProviders), 'frozen')
})

t.test('bad wallet-score settings are reported', async (t) => {
  const err = (() => {
    try {
      loadConfig({ WALLET_SCORE_RPC_URL: 'ftp://x', WALLET_SCORE_AAVE_POOL: '0x12', WALLET_SCORE_LOG_BLOCKS: '0' })
    } catch (e) {
      return e
    }
  })()
  t.ok(err instanceof ConfigError)
  const problems = (err as ConfigError).problems.join('\n')
  t.match(problems, /WALLET_SCORE_RPC_URL/)
  t.match(problems, /WALLET_SCORE_AAVE_POOL/)
  t.match(problems, /WALLET_SCORE_LOG_BLOCKS/)
})
