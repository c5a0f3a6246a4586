import { Writable } from 'node:stream'
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch'
import { ExactEvmScheme } from '@x402/evm'
import { createTestClient, createWalletClient, erc20Abi, http, maxUint256, parseEther, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../../src/chain/devnet.js'
import { PERMIT2_ADDRESS } from '../../src/chain/permit2.js'
import type { Deps } from '../../src/deps.js'
import { processLogger } from '../../src/logger.js'
import { createSettler } from '../../src/services/settlement/settler.js'
import type { TestPlatform } from './platform.js'
import { until } from './until.js'

/** Prices the hosted endpoint `slug` by usage too (`upto` beside `exact`); before the proxy starts. */
export async function enableUpto(platform: TestPlatform, slug = 'hash-generator') {
  await platform.deps.db
    .updateTable('endpoints')
    .set({ schemes: ['exact', 'upto'] })
    .where('slug', '=', slug)
    .execute()
}

/**
 * An upto buyer on the devnet: a new payer holding `usdc` whose token allowance to Permit2 is
 * unlimited (the one approval an upto payer makes).
 */
export async function uptoBuyer(platform: TestPlatform, usdc: bigint) {
  const buyer = await newPayer(platform, usdc)
  await walletFor(platform, buyer.key).writeContract({
    address: platform.deps.config.chain.usdc.address,
    abi: erc20Abi,
    functionName: 'approve',
    args: [PERMIT2_ADDRESS, maxUint256],
  })
  return buyer
}

/** A hosted endpoint priced at 1000 atomic units (0.001 USDC). */
export const paidPath = '/tollgate/toolbox/hash-generator?text=abc&algorithms=sha256'

/** A fresh payer with `usdc` atomic units and some ETH (to move funds or cancel). */
export async function newPayer(platform: TestPlatform, usdc: bigint): Promise<{ key: Hex; address: `0x${string}` }> {
  const key = generatePrivateKey()
  const address = privateKeyToAccount(key).address
  await mintUsdc(platform.devnet.rpcUrl, address, usdc)
  await createTestClient({ mode: 'anvil', transport: http(platform.devnet.rpcUrl) }).setBalance({
    address,
    value: parseEther('1'),
  })
  return { key, address }
}

/** n paid calls with the official @x402/fetch client, `concurrency` at a time; returns statuses. */
export async function payMany(
  platform: TestPlatform,
  key: Hex,
  n: number,
  concurrency = 8,
  url = platform.proxyUrl + paidPath,
): Promise<number[]> {
  const pay = wrapFetchWithPaymentFromConfig(fetch, {
    schemes: [{ network: 'eip155:84532', client: new ExactEvmScheme(privateKeyToAccount(key)) }],
  })
  const statuses: number[] = []
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++
        const res = await pay(url, { method: 'GET' })
        await res.arrayBuffer()
        statuses.push(res.status)
      }
    }),
  )
  return statuses
}

/** Runs the batch settler until every payment of `payer` (the voided ones aside) is settled. */
export async function settleAllOf(deps: Deps, payer: string): Promise<void> {
  const settler = createSettler(deps, { batchSize: 50 })
  await until(`the payments of ${payer} settled`, async () => {
    await settler.runOnce()
    const open = await deps.db
      .selectFrom('payments')
      .select('id')
      .where('payer', '=', payer.toLowerCase())
      .where('status', 'not in', ['settled', 'voided'])
      .execute()
    return open.length === 0
  })
}

export function walletFor(platform: TestPlatform, key: Hex) {
  return createWalletClient({
    account: privateKeyToAccount(key),
    transport: http(platform.devnet.rpcUrl),
    chain: platform.devnet.chain,
  })
}

/** A logger like the worker's, its lines kept. */
export function capturedLog() {
  const lines: string[] = []
  const log = processLogger('trace', new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }))
  return { log, lines, msgs: () => lines.map((l) => JSON.parse(l) as { msg: string; [k: string]: unknown }) }
}
