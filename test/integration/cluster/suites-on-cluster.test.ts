import { spawn } from 'node:child_process'
import t from 'tap'
import { startRedisCluster } from '../../helpers/redis-cluster.js'

// Existing suites that take their Redis from the test config (TEST_REDIS_URL), run unchanged on a
// real Redis Cluster: the payment guard and replay guard, and the login and endpoint rate limits;
// with TOLLGATE_CLUSTER_SUITES=all also agent caps across two processes' connections and paid calls
// settled by the workers through the BullMQ queue (their cluster-specific parts run in every suite
// run in redis-cluster.test.ts and failover.test.ts; these take two more minutes).
const SUITES = [
  'test/integration/proxy/payer-credit.test.ts',
  'test/integration/accounts/login-throttle.test.ts',
  ...(process.env.TOLLGATE_CLUSTER_SUITES === 'all'
    ? ['test/integration/buyer/caps.test.ts', 'test/integration/settlement/settlement.test.ts']
    : []),
]

function runSuite(file: string, redisUrl: string): Promise<{ code: number | null; out: string }> {
  // a child of its own, not a subtest of this runner's: without the runner's TAP_* variables
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TAP')))
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      // the timeout the runner gives (package.json "tap".timeout): a file alone gets 30 s
      env: { ...env, TEST_REDIS_URL: redisUrl, TAP_TIMEOUT: '300' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    child.on('error', reject)
    child.on('exit', (code) => resolve({ code, out }))
  })
}

t.test('existing Redis suites pass on a Redis Cluster', async (t) => {
  const cluster = await startRedisCluster(t)
  for (const file of SUITES) {
    const { code, out } = await runSuite(file, cluster.url)
    const summary = /# \{ total: \d+.*\}/.exec(out)?.[0] ?? 'no summary'
    const failures = out
      .split('\n')
      .filter((l) => /^\s*not ok/.test(l))
      .slice(0, 10)
      .join('\n')
    t.equal(code, 0, `${file} on the cluster: ${summary}${failures ? `\n${failures}` : ''}`)
    t.match(out, /# \{ total: [1-9]\d*, pass: [1-9]\d* \}/, `${file}: every test passed`)
  }
})
