import { BaseError, createPublicClient, createWalletClient, defineChain, http, NonceTooLowError } from 'viem'
import pLimit from 'p-limit'
import { privateKeyToAccount } from 'viem/accounts'
import type { Config } from '../../config.js'
import { testUsdcAbi } from '../../chain/usdc-abi.js'
import { appError } from '../../errors.js'

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

/** Mints test USDC to `to` with the first relayer key; returns the transaction hash once mined. */
export async function mintTestUsdc(config: Pick<Config, 'deployment' | 'rpcUrl' | 'relayerKeys' | 'chain'>, to: `0x${string}`, amount: bigint): Promise<`0x${string}`> {
  if (!faucetAvailable(config)) throw appError('faucet_unavailable')
  return oneAtATime(() => mintOnce(config, to, amount))
}

async function mintOnce(config: Pick<Config, 'rpcUrl' | 'relayerKeys' | 'chain'>, to: `0x${string}`, amount: bigint): Promise<`0x${string}`> {
  const chain = defineChain({
    id: config.chain.chainId,
    name: 'devnet',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [config.rpcUrl!] } },
  })
  const wallet = createWalletClient({ account: privateKeyToAccount(config.relayerKeys[0]!), chain, transport: http(config.rpcUrl) })
  // the settling worker (another process) sends with the same key: a nonce it took is tried again
  for (let attempt = 1; ; attempt++) {
    try {
      const hash = await wallet.writeContract({ address: config.chain.usdc.address, abi: testUsdcAbi, functionName: 'mint', args: [to, amount] })
      const receipt = await createPublicClient({ chain, transport: http(config.rpcUrl) }).waitForTransactionReceipt({ hash, timeout: 30_000 })
      if (receipt.status !== 'success') throw new Error('mint reverted')
      return hash
    } catch (err) {
      if (attempt < 3 && err instanceof BaseError && err.walk((e) => e instanceof NonceTooLowError)) continue
      throw appError('service_unavailable', { detail: 'the dev chain did not accept the mint; is the embedded chain running?' })
    }
  }
}
