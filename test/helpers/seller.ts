/** A seller as the tests of sellers' upstreams (HTTP, MCP, A2A) publish one. */
import { createHash, createHmac, randomBytes } from 'node:crypto'
import type { ProxyAppOptions } from '../../src/http/proxy-app.js'
import { createUsers } from '../../src/services/accounts/users.js'
import { createPublishing } from '../../src/services/publishing/publishing.js'
import { MASTER_KEY } from './accounts.js'
import type { Devnet } from '../../src/chain/devnet.js'
import { startTestPlatform, type TestPlatform } from './platform.js'

interface T {
  teardown(fn: () => unknown): void
}

/**
 * A test platform that lets sellers publish local upstreams (private addresses allowed, a master
 * key for their signing secrets), with one seller: a user, its namespace and one service paid to
 * the devnet's receiver. `who` and `pub` publish more as that seller.
 */
export async function startSellerPlatform(
  t: T,
  opts: { namespace: string; service: string; devnet?: Devnet; proxy?: ProxyAppOptions },
): Promise<{ platform: TestPlatform; pub: ReturnType<typeof createPublishing>; who: { userId: string } }> {
  const platform = await startTestPlatform(t, {
    devnet: opts.devnet,
    env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true', TOLLGATE_MASTER_KEY: MASTER_KEY },
    proxy: opts.proxy,
  })
  const email = `${opts.namespace}-${randomBytes(4).toString('hex')}@example.com`
  const user = await createUsers(platform.deps).create(email, 'correct horse battery staple')
  const pub = createPublishing(platform.deps)
  const who = { userId: user.id }
  await pub.claimNamespace(who, { namespace: opts.namespace })
  await pub.createService(who, opts.namespace, {
    name: opts.service,
    pay_to: platform.devnet.accounts.receiver.address,
  })
  return { platform, pub, who }
}

/**
 * An independent check of X-Tollgate-Signature as the proxy signs a forwarded call (upstream.ts):
 * `t=<unix>,v1=hmac-sha256(secret, "<t>.<METHOD>.<path>.<sha256(body) hex>")`.
 */
export function upstreamSignatureValid(
  secret: string,
  header: string | undefined,
  method: string,
  path: string,
  body: string,
): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? '')
  if (!m) return false
  const mac = createHmac('sha256', secret)
    .update(`${m[1]}.${method}.${path}.${createHash('sha256').update(body).digest('hex')}`)
    .digest('hex')
  return mac === m[2]
}
