import t from 'tap'
import { ConfigError, loadConfig } from '../../src/config.js'

t.test('defaults describe the sandbox deployment on Base Sepolia', async (t) => {
  const c = loadConfig({})
  t.equal(c.deployment, 'sandbox')
  t.equal(c.chain.chainId, 84532)
  t.equal(c.chain.network, 'base-sepolia')
  t.equal(c.chain.caip2, 'eip155:84532')
  t.equal(c.chain.usdc.address, '0x036CbD53842c5426634e7929541eC2318f3dCF7e')
  t.same(c.chain.usdc, {
    address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
    name: 'USDC',
    version: '2',
    decimals: 6,
  })
  t.equal(c.apiKeyPrefix, 'sk_test_')
  t.equal(c.webPort, 4020)
  t.equal(c.proxyPort, 4021)
  t.equal(c.rpcUrl, undefined, 'unset RPC_URL means the embedded chain')
  t.same(
    [c.x402.recoveryThreads, c.x402.recoveryOffload],
    [1, 'busy'],
    'one recovery thread, used while the proxy is busy',
  )
  t.ok(Object.isFrozen(c) && Object.isFrozen(c.chain), 'frozen')
})

t.test(
  'ERC-6492 wallets not deployed yet: accepted when our relayer settles, refused by default when a facilitator does',
  async (t) => {
    t.equal(loadConfig({}).x402.counterfactualWallets, true, 'the relayer deploys them')
    t.equal(loadConfig({ X402_COUNTERFACTUAL_WALLETS: 'refuse' }).x402.counterfactualWallets, false)
    const viaFacilitator = { SETTLEMENT_MODE: 'facilitator', FACILITATOR_URL: 'https://facilitator.example' }
    t.equal(loadConfig(viaFacilitator).x402.counterfactualWallets, false, 'a facilitator may not deploy them')
    t.equal(
      loadConfig({ ...viaFacilitator, X402_COUNTERFACTUAL_WALLETS: 'accept' }).x402.counterfactualWallets,
      true,
      'unless the operator says it does',
    )
    t.throws(() => loadConfig({ X402_COUNTERFACTUAL_WALLETS: 'maybe' }), ConfigError)
  },
)

t.test('challenge validity leaves room for the slowest call and its settlement', async (t) => {
  t.equal(loadConfig({}).x402.maxTimeoutSeconds, 300)
  t.equal(
    loadConfig({ X402_MAX_TIMEOUT_SECONDS: '150' }).x402.maxTimeoutSeconds,
    150,
    'a 120 s call, the batch pickup and the margin',
  )
  t.throws(
    () => loadConfig({ X402_MAX_TIMEOUT_SECONDS: '60' }),
    ConfigError,
    'clients would sign less than the slowest endpoints accept',
  )
  t.throws(() => loadConfig({ X402_MAX_VALID_FOR_SECONDS: '100' }), ConfigError)
})

t.test('production derives Base mainnet values', async (t) => {
  const c = loadConfig({
    TOLLGATE_DEPLOYMENT: 'production',
    RPC_URL: 'https://mainnet.base.example',
    RELAYER_PRIVATE_KEYS: `0x${'11'.repeat(32)}`,
    TOLLGATE_MASTER_KEY: '22'.repeat(32),
    TOLLGATE_RECEIVER_ADDRESS: `0x${'33'.repeat(20)}`,
  })
  t.equal(c.chain.chainId, 8453)
  t.equal(c.chain.network, 'base')
  t.equal(c.chain.usdc.address, '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913')
  t.equal(c.chain.usdc.name, 'USD Coin')
  t.equal(c.apiKeyPrefix, 'sk_live_')
})

t.test('DEFERRED_COLLECT_*: when the worker collects deferred vouchers', async (t) => {
  t.same(loadConfig({}).deferred, {
    collectThreshold: 1_000_000n,
    collectMaxAgeSeconds: 3600,
    collectEveryMs: 30_000,
    stuckSeconds: 120,
    watchEveryMs: 1000,
  })
  const c = loadConfig({
    DEFERRED_COLLECT_THRESHOLD: '50000',
    DEFERRED_COLLECT_MAX_AGE_SECONDS: '60',
    DEFERRED_COLLECT_EVERY_MS: '1000',
    DEFERRED_COLLECT_STUCK_SECONDS: '30',
    DEFERRED_WATCH_EVERY_MS: '200',
  })
  t.same(c.deferred, {
    collectThreshold: 50_000n,
    collectMaxAgeSeconds: 60,
    collectEveryMs: 1000,
    stuckSeconds: 30,
    watchEveryMs: 200,
  })
  const err = t.throws(() =>
    loadConfig({ DEFERRED_COLLECT_THRESHOLD: '-1', DEFERRED_COLLECT_EVERY_MS: '5' }),
  ) as unknown as ConfigError
  t.match(err.problems.join('\n'), /DEFERRED_COLLECT_THRESHOLD[\s\S]*DEFERRED_COLLECT_EVERY_MS/)
})

t.test(
  "DEFERRED_ESCROW_ADDRESS: the embedded chain's escrow on sandbox, unset in production, a bad address reported",
  async (t) => {
    t.equal(loadConfig({}).deferredEscrowAddress, '0xdEfE55ed00000000000000000000000000000402')
    t.equal(
      loadConfig({ DEFERRED_ESCROW_ADDRESS: `0x${'44'.repeat(20)}` }).deferredEscrowAddress,
      `0x${'44'.repeat(20)}`,
    )
    const production = {
      TOLLGATE_DEPLOYMENT: 'production',
      RPC_URL: 'https://mainnet.base.example',
      RELAYER_PRIVATE_KEYS: `0x${'11'.repeat(32)}`,
      TOLLGATE_MASTER_KEY: '22'.repeat(32),
      TOLLGATE_RECEIVER_ADDRESS: `0x${'33'.repeat(20)}`,
    }
    t.equal(loadConfig(production).deferredEscrowAddress, undefined, 'no escrow is assumed on Base')
    t.equal(
      loadConfig({ ...production, DEFERRED_ESCROW_ADDRESS: `0x${'44'.repeat(20)}` }).deferredEscrowAddress,
      `0x${'44'.repeat(20)}`,
    )
    const err = t.throws(() => loadConfig({ DEFERRED_ESCROW_ADDRESS: '0x1234' })) as unknown as ConfigError
    t.match(err.problems.join('\n'), 'DEFERRED_ESCROW_ADDRESS')
  },
)

t.test('every invalid variable is reported together', async (t) => {
  const err = t.throws(() =>
    loadConfig({
      TOLLGATE_DEPLOYMENT: 'staging',
      WEB_PORT: '99999',
      DATABASE_URL: 'mysql://x',
      REDIS_URL: 'nope',
      RELAYER_PRIVATE_KEYS: '0x1234',
      LOG_LEVEL: 'loud',
      X402_RECOVERY_OFFLOAD: 'sometimes',
    }),
  ) as unknown as ConfigError
  t.type(err, ConfigError)
  const text = err.problems.join('\n')
  for (const name of [
    'TOLLGATE_DEPLOYMENT',
    'WEB_PORT',
    'DATABASE_URL',
    'REDIS_URL',
    'RELAYER_PRIVATE_KEYS',
    'LOG_LEVEL',
    'X402_RECOVERY_OFFLOAD',
  ]) {
    t.match(text, name, `${name} is named`)
  }
  t.equal(err.problems.length, 7)
  t.match(
    err.problems.find((p) => p.startsWith('WEB_PORT')),
    /integer from 0 to 65535/,
    'says what was expected',
  )
})

t.test('production refuses a wrong chain id and the embedded chain', async (t) => {
  const err = t.throws(() =>
    loadConfig({ TOLLGATE_DEPLOYMENT: 'production', TOLLGATE_CHAIN_ID: '84532' }),
  ) as unknown as ConfigError
  const text = err.problems.join('\n')
  t.match(text, /TOLLGATE_CHAIN_ID: the production deployment settles on chain 8453/)
  t.match(text, /RPC_URL: production needs/)
  t.match(text, /RELAYER_PRIVATE_KEYS/)
  t.match(text, /TOLLGATE_MASTER_KEY/)
})

t.test('a credential in a bad URL is not echoed', async (t) => {
  const err = t.throws(() => loadConfig({ DATABASE_URL: 'mysql://u:supersecret@h/db' })) as unknown as ConfigError
  t.notMatch(err.message, 'supersecret')
})

t.test(
  'a Unix-socket DATABASE_URL: the host-less URL form is accepted, credentials without a host get a hint',
  async (t) => {
    t.equal(
      loadConfig({ DATABASE_URL: 'postgres:///tollgate?host=/var/run/postgresql&user=app' }).databaseUrl,
      'postgres:///tollgate?host=/var/run/postgresql&user=app',
    )
    const err = t.throws(() =>
      loadConfig({ DATABASE_URL: 'postgres://app:hunter2@/tollgate?host=/var/run/postgresql' }),
    ) as unknown as ConfigError
    t.match(err.message, 'for a Unix socket write postgres:///<database>?host=<socket dir>&user=<user>')
    t.notMatch(err.message, 'hunter2')
  },
)

t.test('the config entry exits non-zero and prints every problem', async (t) => {
  const { spawnSync } = await import('node:child_process')
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/start/migrate.ts'], {
    env: { PATH: process.env.PATH, TOLLGATE_DEPLOYMENT: 'prod', PROXY_PORT: 'x' },
    encoding: 'utf8',
  })
  t.not(r.status, 0)
  t.match(r.stderr, /TOLLGATE_DEPLOYMENT/)
  t.match(r.stderr, /PROXY_PORT/)
})

t.test('TRUST_PROXY: unset trusts no forwarding header; true, or the load balancers by address or CIDR', async (t) => {
  t.equal(loadConfig({}).trustProxy, false)
  t.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, false)
  t.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true)
  t.same(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.7,fd00::/8 ,loopback' }).trustProxy, [
    '10.0.0.0/8',
    '192.168.1.7',
    'fd00::/8',
    'loopback',
  ])
  const problems = (v: string) => {
    try {
      loadConfig({ TRUST_PROXY: v })
      return []
    } catch (e) {
      return (e as ConfigError).problems
    }
  }
  for (const bad of ['10.0.0.0/33', 'lb.internal', '10.0.0.1/8/2', '::1/129', ','])
    t.match(problems(bad), [/^TRUST_PROXY: expected true, false/], bad)
  t.match(
    problems('1'),
    [/^TRUST_PROXY: a hop count .* not supported by Fastify since 5\.12\.1/],
    'a hop count is refused, not silently ignored',
  )
})

t.test('SETTLEMENT_LOG_CHUNK_BLOCKS: 2000 blocks per eth_getLogs request by default', async (t) => {
  t.equal(loadConfig({}).settlement.logChunkBlocks, 2000)
  t.equal(loadConfig({ SETTLEMENT_LOG_CHUNK_BLOCKS: '500' }).settlement.logChunkBlocks, 500)
  t.throws(() => loadConfig({ SETTLEMENT_LOG_CHUNK_BLOCKS: '0' }), ConfigError)
})

t.test('hosted handlers: processes of the proxy by default; HANDLERS_URL names the handlers role', async (t) => {
  const d = loadConfig({}).handlers
  t.same(
    [d.url, d.listen, d.rssMb, d.maxThreads, d.memoryMb],
    [[], undefined, 1536, 2, 256],
    'no address: the proxy starts its own handler processes',
  )
  const one = loadConfig({ HANDLERS_URL: 'unix:/run/tollgate/handlers.sock' }).handlers
  t.same(
    [one.url, one.listen],
    [[{ path: '/run/tollgate/handlers.sock' }], { path: '/run/tollgate/handlers.sock' }],
    'one address: the proxy connects there, the role listens there',
  )
  const two = loadConfig({
    HANDLERS_URL: 'tcp://10.0.0.7:4030, tcp://10.0.0.8:4030',
    HANDLERS_LISTEN: 'tcp://0.0.0.0:4030',
  }).handlers
  t.same([two.url.length, two.listen], [2, { host: '0.0.0.0', port: 4030 }])
  t.equal(
    loadConfig({ HANDLERS_URL: 'tcp://a:1,tcp://b:1' }).handlers.listen,
    undefined,
    'several: which one a role listens on is HANDLERS_LISTEN',
  )
  const bad = (() => {
    try {
      loadConfig({ HANDLERS_URL: 'http://x:1', HANDLERS_LISTEN: 'unix:/a.sock,unix:/b.sock', HANDLER_RSS_MB: '10' })
    } catch (err) {
      return (err as ConfigError).problems
    }
  })()
  t.match(bad, [
    /^HANDLERS_URL: expected unix:/,
    /^HANDLERS_LISTEN: one address/,
    /^HANDLER_RSS_MB: expected an integer from 64/,
  ])
})
