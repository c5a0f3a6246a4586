import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { createPublicClient, createTestClient, http } from 'viem'
import { mintUsdc } from '../../src/chain/devnet.js'
import { buildWebApp } from '../../src/http/web-app.js'
import { createAgentKeys } from '../../src/services/accounts/agent-keys.js'
import { createAgents } from '../../src/services/accounts/agents.js'
import { createAllowlist } from '../../src/services/accounts/allowlist.js'
import { createUsers } from '../../src/services/accounts/users.js'
import type { ProxyAppOptions } from '../../src/http/proxy-app.js'
import { freePort, startTestPlatform, type TestPlatform } from './platform.js'

interface T {
  teardown(fn: () => unknown): void
}

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/handlers')
export const MASTER_KEY = randomBytes(32).toString('hex')

export interface BuyerPlatform extends TestPlatform {
  web: FastifyInstance
  webUrl: string
  /** a user's agent with a key; funded with `fund` atomic USDC when given */
  agent(opts?: {
    user?: string
    caps?: {
      per_transaction?: string | null
      daily?: string | null
      monthly?: string | null
      channel_deposit?: string | null
    }
    fund?: bigint
    allow?: Array<{ kind: string; value: string }>
  }): Promise<{ id: string; address: `0x${string}`; key: string; auth: { authorization: string } }>
  /**
   * Moves the chain's clock (anvil evm_increaseTime + a mined block) to at least `unixSeconds`: the
   * sweep reads validBefore against the chain's latest block, never the wall clock alone.
   */
  chainTimeAtLeast(unixSeconds: number): Promise<void>
}

/**
 * The test platform (devnet, proxy) plus a listening web app with the agent payment API; `env` adds
 * to the platform's, `proxy` to the proxy's options (default: the fixture handlers).
 */
export async function startBuyerPlatform(
  t: T,
  o: { env?: Record<string, string>; proxy?: ProxyAppOptions } = {},
): Promise<BuyerPlatform> {
  const p = await startTestPlatform(t, {
    proxy: { handlersDir: fixtures, ...o.proxy },
    env: { TOLLGATE_MASTER_KEY: MASTER_KEY, HANDLER_MAX_THREADS: '2', HANDLER_MEMORY_MB: '128', ...o.env },
  })
  const web = await buildWebApp(p.deps, { logger: false })
  const port = await freePort()
  await web.listen({ host: '127.0.0.1', port })
  t.teardown(() => web.close())
  const user = await createUsers({ db: p.deps.db }).create(
    `b${randomBytes(4).toString('hex')}@example.com`,
    'correct horse battery',
  )
  const agents = createAgents({ db: p.deps.db, masterKey: () => Buffer.from(MASTER_KEY, 'hex') })
  const keys = createAgentKeys({ db: p.deps.db, deployment: p.deps.config.deployment })
  const allowlist = createAllowlist({ db: p.deps.db })
  const transport = http(p.devnet.rpcUrl)
  const anvil = createTestClient({ chain: p.devnet.chain, mode: 'anvil', transport })
  const pub = createPublicClient({ chain: p.devnet.chain, transport })
  return {
    ...p,
    web,
    webUrl: `http://127.0.0.1:${port}`,
    async chainTimeAtLeast(unixSeconds) {
      const { timestamp } = await pub.getBlock({ blockTag: 'latest' })
      if (Number(timestamp) >= unixSeconds) return
      await anvil.increaseTime({ seconds: unixSeconds - Number(timestamp) })
      await anvil.mine({ blocks: 1 })
    },
    async agent(o = {}) {
      const a = await agents.create(o.user ?? user.id, {
        name: `agent ${randomBytes(3).toString('hex')}`,
        spend_caps: o.caps,
      })
      const row = await agents.find(o.user ?? user.id, a.address)
      const k = await keys.create({ id: row.id, address: a.address }, 'test')
      for (const e of o.allow ?? []) await allowlist.add({ id: row.id, address: a.address }, e)
      if (o.fund) await mintUsdc(p.devnet.rpcUrl, a.address as `0x${string}`, o.fund)
      return {
        id: row.id,
        address: a.address as `0x${string}`,
        key: k.secret,
        auth: { authorization: `Bearer ${k.secret}` },
      }
    },
  }
}
