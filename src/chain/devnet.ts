/**
 * The embedded local chain: anvil (from the @foundry-rs/anvil npm package) with our TestUSDC at
 * the canonical Base Sepolia USDC address and Multicall3 at its canonical address, so x402
 * clients and our relayers work against it with their default settings (DESIGN.md §6), the
 * `deferred` scheme's DeferredPaymentEscrow at a fixed address of ours, and for the `upto` scheme
 * Permit2 (compiled from its published source) and our x402 upto proxy at their canonical addresses,
 * and for the `batch-settlement` scheme our own builds of x402BatchSettlement and its two deposit
 * collectors at their canonical addresses (production networks use the audited deployment there).
 */
import { createRequire } from 'node:module'
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  encodeDeployData,
  hashDomain,
  http,
  parseEther,
  type Address,
  type Chain,
  type Hex,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { AnvilProcess } from './anvil-process.js'
import artifacts from './contracts/artifacts.json' with { type: 'json' }
import { DEVNET_DEFERRED_ESCROW_ADDRESS } from './deferred-escrow-address.js'
import { PERMIT2_ADDRESS, UPTO_PROXY_ADDRESS } from './permit2.js'
import {
  BATCH_SETTLEMENT_ADDRESS,
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
  PERMIT2_DEPOSIT_COLLECTOR_ADDRESS,
} from './batch-settlement/addresses.js'
import { MULTICALL3_ADDRESS } from './multicall3-abi.js'
import { testUsdcAbi } from './usdc-abi.js'

/** Canonical USDC on Base Sepolia; the dev chain's TestUSDC is placed here. */
export const DEVNET_USDC_ADDRESS = '0x036CbD53842c5426634e7929541eC2318f3dCF7e' as const
export const DEVNET_MULTICALL3_ADDRESS = MULTICALL3_ADDRESS
export const DEVNET_DEFAULT_CHAIN_ID = 84532
export { DEVNET_DEFERRED_ESCROW_ADDRESS }
/** The dev escrow's thawing period: one day, the escrow text's standard value (tests move anvil's clock). */
export const DEVNET_ESCROW_THAWING_PERIOD = 86_400n

export interface DevAccount {
  address: Address
  privateKey: Hex
}

export interface DevnetAccounts {
  /** Submits settlements; the first of `relayers`. */
  relayer: DevAccount
  /** Extra relayer keys, for a relayer pool. relayers[0] === relayer. */
  relayers: DevAccount[]
  /** Holds test USDC and signs x402 payments in demos and tests. */
  demoPayer: DevAccount
  /** Receives the platform's own hosted-service payments. */
  receiver: DevAccount
  /** Sends the mint transactions (test USDC) and holds a large USDC float for handing out. */
  faucet: DevAccount
}

export interface Devnet {
  rpcUrl: string
  chainId: number
  /** A viem chain for this devnet, with Multicall3 configured. */
  chain: Chain
  usdcAddress: Address
  multicall3Address: Address
  /** DeferredPaymentEscrow (DEVNET_DEFERRED_ESCROW_ADDRESS), thawing period DEVNET_ESCROW_THAWING_PERIOD */
  deferredEscrowAddress: Address
  accounts: DevnetAccounts
  /** anvil's process id, for diagnostics. */
  pid: number | undefined
  /** Stops anvil (writing `stateFile`, if given) and waits for it to exit. Idempotent. */
  stop(): Promise<void>
}

/** Any pino-like logger; anvil's own chatter goes to `debug`. */
export interface DevnetLogger {
  info(msg: string): void
  debug?(msg: string): void
}

export interface StartDevnetOptions {
  /** 0 (the default) lets anvil pick a free port. */
  port?: number
  /** Default 84532 (Base Sepolia), so sandbox requirements match. */
  chainId?: number
  /** anvil --state: loaded at start if it exists, written at stop. */
  stateFile?: string
  logger?: DevnetLogger
  /** Overrides the anvil binary resolved from the npm package. */
  anvilPath?: string
  /** How long to wait for anvil to answer, default 30 s. */
  startTimeoutMs?: number
}

// Anvil's well-known deterministic dev keys (mnemonic "test test ... junk"). They are public,
// hold nothing of value, and must never be used outside a local dev chain.
const ANVIL_DEV_KEYS = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
  '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba',
] as const satisfies readonly Hex[]

function devAccount(index: number): DevAccount {
  const privateKey = ANVIL_DEV_KEYS[index]!
  return { address: privateKeyToAccount(privateKey).address, privateKey }
}

/** The dev chain's account roles, all taken from anvil's default accounts. */
export function devnetAccounts(): DevnetAccounts {
  const relayers = [devAccount(0), devAccount(4), devAccount(5)]
  return { relayer: relayers[0]!, relayers, demoPayer: devAccount(1), receiver: devAccount(2), faucet: devAccount(3) }
}

/** Test USDC the demo payer holds after setup: 1,000 USDC. */
export const DEMO_PAYER_USDC = 1_000_000_000n
/** Float kept by the faucet account: 1,000,000 USDC. */
export const FAUCET_USDC = 1_000_000_000_000n
/** ETH each dev account is topped up to when below MIN_ETH (matters with --state or a foreign anvil). */
const TOPUP_ETH = parseEther('10000')
const MIN_ETH = parseEther('10')

/** A minimal viem chain for a devnet: no OP-stack formatters, Multicall3 at its usual address. */
export function devnetChain(chainId: number, rpcUrl: string): Chain {
  return defineChain({
    id: chainId,
    name: 'Tollgate devnet',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    contracts: { multicall3: { address: MULTICALL3_ADDRESS } },
    testnet: true,
  })
}

/**
 * Installs TestUSDC, Multicall3 and DeferredPaymentEscrow on a running anvil and funds the dev
 * accounts. Idempotent:
 * code is only set where it differs, balances are only topped up. Use it when pointing at an
 * anvil someone else started.
 */
export async function setupDevnetContracts(rpcUrl: string): Promise<{ chainId: number; accounts: DevnetAccounts }> {
  const probe = createPublicClient({ transport: http(rpcUrl) })
  const chainId = await probe.getChainId()
  const chain = devnetChain(chainId, rpcUrl)
  const pub = createPublicClient({ chain, transport: http(rpcUrl), pollingInterval: 50 })
  const test = createTestClient({ chain, mode: 'anvil', transport: http(rpcUrl) })
  const accounts = devnetAccounts()

  const code: [Address, Hex][] = [
    [DEVNET_USDC_ADDRESS, artifacts.contracts.TestUSDC.deployedBytecode as Hex],
    [MULTICALL3_ADDRESS, artifacts.contracts.Multicall3.deployedBytecode as Hex],
    [DEVNET_DEFERRED_ESCROW_ADDRESS, await runtimeCode(rpcUrl, escrowCreation(DEVNET_ESCROW_THAWING_PERIOD))],
    [PERMIT2_ADDRESS, await permit2RuntimeCode(rpcUrl, chainId)],
    [UPTO_PROXY_ADDRESS, artifacts.contracts.X402UptoPermit2Proxy.deployedBytecode as Hex],
    ...(await batchSettlementCode(rpcUrl)),
  ]
  for (const [address, bytecode] of code) {
    const current = await pub.getCode({ address })
    if (current?.toLowerCase() !== bytecode.toLowerCase()) await test.setCode({ address, bytecode })
  }

  const all = [...accounts.relayers, accounts.demoPayer, accounts.receiver, accounts.faucet]
  for (const { address } of all) {
    if ((await pub.getBalance({ address })) < MIN_ETH) await test.setBalance({ address, value: TOPUP_ETH })
  }

  for (const [who, target] of [
    [accounts.demoPayer.address, DEMO_PAYER_USDC],
    [accounts.faucet.address, FAUCET_USDC],
  ] as const) {
    const have = await pub.readContract({
      address: DEVNET_USDC_ADDRESS,
      abi: testUsdcAbi,
      functionName: 'balanceOf',
      args: [who],
    })
    if (have < target) await mintUsdc(rpcUrl, who, target - have)
  }
  return { chainId, accounts }
}

/**
 * The batch-settlement contracts at their canonical addresses: x402BatchSettlement (no constructor
 * state: its EIP-712 domain uses `address(this)` at run time) and the two deposit collectors, whose
 * constructors bind them to the settlement contract (and Permit2) as immutables — run by `runtimeCode`
 * with the canonical addresses, so the installed code is what a deployment there would hold. These
 * are Tollgate's own dev-chain builds; Base and Base Sepolia use the audited canonical deployment.
 */
async function batchSettlementCode(rpcUrl: string): Promise<[Address, Hex][]> {
  const { ERC3009DepositCollector: erc3009, Permit2DepositCollector: permit2 } = artifacts.contracts
  const erc3009Creation = encodeDeployData({
    abi: erc3009.abi,
    bytecode: erc3009.bytecode as Hex,
    args: [BATCH_SETTLEMENT_ADDRESS],
  })
  const permit2Creation = encodeDeployData({
    abi: permit2.abi,
    bytecode: permit2.bytecode as Hex,
    args: [BATCH_SETTLEMENT_ADDRESS, PERMIT2_ADDRESS],
  })
  return [
    [BATCH_SETTLEMENT_ADDRESS, artifacts.contracts.X402BatchSettlement.deployedBytecode as Hex],
    [ERC3009_DEPOSIT_COLLECTOR_ADDRESS, await runtimeCode(rpcUrl, erc3009Creation)],
    [PERMIT2_DEPOSIT_COLLECTOR_ADDRESS, await runtimeCode(rpcUrl, permit2Creation)],
  ]
}

/** DeferredPaymentEscrow's creation code with its constructor argument, the thawing period in seconds. */
export function escrowCreation(thawingPeriod: bigint): Hex {
  const { abi, bytecode } = artifacts.contracts.DeferredPaymentEscrow
  return encodeDeployData({ abi, bytecode: bytecode as Hex, args: [thawingPeriod] })
}

/**
 * The runtime code a creation code would deploy, immutables filled in: an eth_call without a `to`
 * runs the constructor and returns what it would store, and changes nothing. setCode then puts it
 * at a fixed address, as for the contracts without a constructor.
 */
export async function runtimeCode(rpcUrl: string, creation: Hex): Promise<Hex> {
  const { data } = await createPublicClient({ transport: http(rpcUrl) }).call({ data: creation })
  if (!data || data === '0x') throw new Error('runtimeCode: the constructor returned no code')
  return data
}

/**
 * Permit2's runtime code for its canonical address. Permit2 caches its EIP-712 domain separator
 * (chain id and `address(this)`) as an immutable in its constructor; the constructor run by
 * `runtimeCode` sees another address, so the cached separator is replaced by the canonical one
 * (name "Permit2", this chain, PERMIT2_ADDRESS) — what clients sign against.
 */
export async function permit2RuntimeCode(rpcUrl: string, chainId: number): Promise<Hex> {
  const pub = createPublicClient({ transport: http(rpcUrl) })
  const code = await runtimeCode(rpcUrl, artifacts.contracts.Permit2.bytecode as Hex)
  // the separator the constructor cached: DOMAIN_SEPARATOR() of that code, read without installing it
  const probe = '0x000000000000000000000000000000000000fe02' as const
  const { data } = await pub.call({
    to: probe,
    data: '0x3644e515', // DOMAIN_SEPARATOR()
    stateOverride: [{ address: probe, code }],
  })
  const cached = data!.slice(2).toLowerCase()
  const canonical = permit2DomainSeparator(chainId).slice(2)
  const parts = code.toLowerCase().split(cached)
  if (parts.length < 2) throw new Error('permit2RuntimeCode: the cached domain separator was not found in the code')
  return parts.join(canonical) as Hex
}

/** Permit2's EIP-712 domain separator at its canonical address on `chainId`. */
export function permit2DomainSeparator(chainId: number): Hex {
  return hashDomain({
    domain: { name: 'Permit2', chainId: BigInt(chainId), verifyingContract: PERMIT2_ADDRESS },
    types: {
      EIP712Domain: [
        { name: 'name', type: 'string' },
        { name: 'chainId', type: 'uint256' },
        { name: 'verifyingContract', type: 'address' },
      ],
    },
  })
}

/**
 * Mints test USDC (base units, 6 decimals) on a devnet and waits for the receipt.
 * Sent from the faucet account through anvil's unlocked-account signing; calls are queued per
 * chain so concurrent mints do not race for the same nonce.
 *
 * @example
 * await mintUsdc(devnet.rpcUrl, payer, 5_000_000n) // 5 USDC
 */
export function mintUsdc(rpcUrl: string, to: Address, amount: bigint): Promise<Hex> {
  // one mint at a time per chain in this process: viem fills the faucet's nonce itself, so two
  // concurrent mints could pick the same one
  const prev = mintQueue.get(rpcUrl) ?? Promise.resolve()
  const next = prev.catch(() => {}).then(() => mintNow(rpcUrl, to, amount))
  mintQueue.set(rpcUrl, next)
  return next
}
const mintQueue = new Map<string, Promise<unknown>>()

async function mintNow(rpcUrl: string, to: Address, amount: bigint): Promise<Hex> {
  const probe = createPublicClient({ transport: http(rpcUrl) })
  const chain = devnetChain(await probe.getChainId(), rpcUrl)
  const pub = createPublicClient({ chain, transport: http(rpcUrl), pollingInterval: 50 })
  const wallet = createWalletClient({ chain, transport: http(rpcUrl) })
  const hash = await wallet.writeContract({
    account: devnetAccounts().faucet.address,
    address: DEVNET_USDC_ADDRESS,
    abi: testUsdcAbi,
    functionName: 'mint',
    args: [to, amount],
  })
  const receipt = await pub.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error(`mintUsdc: mint transaction ${hash} reverted`)
  return hash
}

/** Path of the anvil binary shipped in the platform package @foundry-rs/anvil-<os>-<arch>. */
export function resolveAnvilBinary(): string {
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch as string]
  const pkg = `@foundry-rs/anvil-${process.platform}-${arch ?? process.arch}`
  const file = process.platform === 'win32' ? 'anvil.exe' : 'anvil'
  try {
    return createRequire(import.meta.url).resolve(`${pkg}/bin/${file}`)
  } catch {
    throw new Error(
      `anvil binary not found: ${pkg} is not installed. It is an optional dependency of @foundry-rs/anvil; ` +
        `run "npm install" on this platform (${process.platform}/${process.arch}).`,
    )
  }
}

/**
 * Starts anvil and installs the dev contracts and balances.
 *
 * @example
 * const devnet = await startDevnet({ port: 0 })
 * try { ... devnet.rpcUrl ... } finally { await devnet.stop() }
 */
export async function startDevnet(opts: StartDevnetOptions = {}): Promise<Devnet> {
  const chainId = opts.chainId ?? DEVNET_DEFAULT_CHAIN_ID
  const binary = opts.anvilPath ?? resolveAnvilBinary()
  const args = ['--host', '127.0.0.1', '--port', String(opts.port ?? 0), '--chain-id', String(chainId)]
  if (opts.stateFile) args.push('--state', opts.stateFile)
  const startTimeoutMs = opts.startTimeoutMs ?? 30_000
  const anvil = new AnvilProcess(binary, args, { startTimeoutMs, logger: opts.logger })

  let rpcUrl: string
  try {
    rpcUrl = await anvil.listening
    await waitForRpc(rpcUrl, startTimeoutMs)
    await setupDevnetContracts(rpcUrl)
  } catch (e) {
    await anvil.stop()
    const detail = anvil.diagnostics()
    throw new Error(`startDevnet failed: ${(e as Error).message}${detail ? `\n${detail}` : ''}`, { cause: e })
  }

  opts.logger?.info(
    `devnet: anvil on ${rpcUrl}, chain ${chainId}, USDC at ${DEVNET_USDC_ADDRESS}, deferred escrow at ${DEVNET_DEFERRED_ESCROW_ADDRESS}`,
  )
  return {
    rpcUrl,
    chainId,
    chain: devnetChain(chainId, rpcUrl),
    usdcAddress: DEVNET_USDC_ADDRESS,
    multicall3Address: MULTICALL3_ADDRESS,
    deferredEscrowAddress: DEVNET_DEFERRED_ESCROW_ADDRESS,
    accounts: devnetAccounts(),
    get pid() {
      return anvil.pid
    },
    stop: () => anvil.stop(),
  }
}

/** Polls eth_chainId until anvil answers; "Listening" is printed just before it serves. */
async function waitForRpc(rpcUrl: string, timeoutMs: number): Promise<void> {
  const client = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }) })
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      await client.getChainId()
      return
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`anvil RPC at ${rpcUrl} did not answer: ${(e as Error).message}`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }
}
