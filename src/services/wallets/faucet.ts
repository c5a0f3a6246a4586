import type { RedisClient } from '../../redis-client.js'
import { BaseError, createPublicClient, createWalletClient, defineChain, http, NonceTooLowError } from 'viem'
import pLimit from 'p-limit'
import { privateKeyToAccount } from 'viem/accounts'
import type { Config } from '../../config.js'
import { testUsdcAbi } from '../../chain/usdc-abi.js'
import { appError } from '../../errors.js'
import { createRelayerLock } from '../../chain/relayer.js'

/** Most one faucet call hands out: 1,000 test USDC. */
export const FAUCET_MAX = 1_000_000_000n

/**
 * The faucet exists only on the sandbox deployment's embedded dev chain: an RPC on a loopback
 * host, where TestUSDC (with its open `mint`) sits at the USDC address. On Base Sepolia proper
 * the real USDC has no mint, so the route refuses rather than fail on chain.
 */
export function faucetAvailable(config: Pick<Config, 'deployment' | 'rpcUrl' | 'relayerKeys'>): boolean {
  if (config.deployment !== 'sandbox' || !config.rpcUrl || config.relayerKeys.length === 0) return false
  const host = new URL(config.rpcUrl).hostname
  return host === '127.0.0.1' || host === 'localhost' || host === '[::1]'
}

// Mints from this process go one at a time: each one takes the relayer's next nonce, and two at once
// took the same one (the second was refused as "nonce too low" and answered 503).
const oneAtATime = pLimit(1)

/** How long a mint waits for the relayer while other processes (web, settlement worker) use it. */
export const FAUCET_LOCK_WAIT_MS = 20_000

type FaucetDeps = {
  config: Pick<Config, 'deployment' | 'rpcUrl' | 'relayerKeys' | 'chain'>
  redis: RedisClient
  key(...p: string[]): string
}

/**
 * Mints test USDC to `to` with the first relayer key; returns the transaction hash once mined. The
 * mint holds the relayer's lock, the one the settlement worker sends under, so mints from several
 * web processes and the worker's batches never pick the same nonce.
 */
export async function mintTestUsdc(
  deps: FaucetDeps,
  to: `0x${string}`,
  amount: bigint,
  waitMs = FAUCET_LOCK_WAIT_MS,
): Promise<`0x${string}`> {
  const { config } = deps
  if (!faucetAvailable(config)) throw appError('faucet_unavailable')
  const lock = createRelayerLock(deps.redis, deps.key)
  const relayer = privateKeyToAccount(config.relayerKeys[0]!).address
  return oneAtATime(async () => {
    const deadline = Date.now() + waitMs
    for (;;) {
      const held = await lock.hold(relayer, () => mintOnce(config, to, amount))
      if (held) return held.value
      if (Date.now() >= deadline)
        throw appError('service_unavailable', {
          detail: 'the dev chain relayer stayed busy settling payments; try the faucet again',
        })
      await new Promise((r) => setTimeout(r, 100))
    }
  })
}

async function mintOnce(
  config: Pick<Config, 'rpcUrl' | 'relayerKeys' | 'chain'>,
  to: `0x${string}`,
  amount: bigint,
): Promise<`0x${string}`> {
  const chain = defineChain({
    id: config.chain.chainId,
    name: 'devnet',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [config.rpcUrl!] } },
  })
  const wallet = createWalletClient({
    account: privateKeyToAccount(config.relayerKeys[0]!),
    chain,
    transport: http(config.rpcUrl),
  })
  // a nonce taken outside the lock (a transaction sent by hand with the same key) is tried again
  for (let attempt = 1; ; attempt++) {
    try {
      const hash = await wallet.writeContract({
        address: config.chain.usdc.address,
        abi: testUsdcAbi,
        functionName: 'mint',
        args: [to, amount],
      })
      const receipt = await createPublicClient({ chain, transport: http(config.rpcUrl) }).waitForTransactionReceipt({
        hash,
        timeout: 30_000,
      })
      if (receipt.status !== 'success') throw new Error('mint reverted')
      return hash
    } catch (err) {
      if (attempt < 3 && err instanceof BaseError && err.walk((e) => e instanceof NonceTooLowError)) continue
      throw appError('service_unavailable', {
        detail: 'the dev chain did not accept the mint; is the embedded chain running?',
      })
    }
  }
}
