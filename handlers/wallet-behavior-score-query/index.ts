import { BANDS, scoreOutputSchema, scoreWallet, WEIGHTS } from '../_shared/wallet-score-model.js'
import {
  defineHandler,
  HandlerInputError,
  HandlerUpstreamError,
  type HandlerContext,
} from '../../src/pool/handler-contract.js'

interface Input {
  address: string
}

/** Provider settings this handler reads from ctx.providers (filled from the environment, see README). */
export const PROVIDER_KEYS = [
  'WALLET_SCORE_RPC_URL',
  'WALLET_SCORE_AAVE_POOL',
  'WALLET_SCORE_LOG_BLOCKS',
  'WALLET_SCORE_LOG_CHUNK_BLOCKS',
] as const

const DEFAULT_LOG_BLOCKS = 100_000n
const DEFAULT_LOG_CHUNK_BLOCKS = 10_000n
/** liquidation events listed (and timed) in the answer; all are counted */
const LISTED_LIQUIDATIONS = 20
/** Aave v3 reports amounts in its base currency, USD with 8 decimals, on every v3 market */
const BASE_CURRENCY_DECIMALS = 8

const poolAbi = [
  {
    type: 'function',
    name: 'getUserAccountData',
    stateMutability: 'view',
    inputs: [{ name: 'user', type: 'address' }],
    outputs: [
      { name: 'totalCollateralBase', type: 'uint256' },
      { name: 'totalDebtBase', type: 'uint256' },
      { name: 'availableBorrowsBase', type: 'uint256' },
      { name: 'currentLiquidationThreshold', type: 'uint256' },
      { name: 'ltv', type: 'uint256' },
      { name: 'healthFactor', type: 'uint256' },
    ],
  },
] as const

/** Aave v3 Pool `LiquidationCall`, the user being liquidated is the third indexed topic. */
const liquidationCallEvent = {
  type: 'event',
  name: 'LiquidationCall',
  inputs: [
    { name: 'collateralAsset', type: 'address', indexed: true },
    { name: 'debtAsset', type: 'address', indexed: true },
    { name: 'user', type: 'address', indexed: true },
    { name: 'debtToCover', type: 'uint256', indexed: false },
    { name: 'liquidatedCollateralAmount', type: 'uint256', indexed: false },
    { name: 'liquidator', type: 'address', indexed: false },
    { name: 'receiveAToken', type: 'bool', indexed: false },
  ],
} as const

const bandsText = BANDS.map((b) => `${b.min}–${b.max} ${b.classification}`)
  .reverse()
  .join(', ')
const weightsText = Object.entries(WEIGHTS)
  .map(([k, w]) => `${k} ${w}`)
  .join(', ')

/**
 * Hosted service B (tollgate/wallet-score): the risk score of a wallet's real Aave v3 position.
 * Reads `getUserAccountData` and the `LiquidationCall` logs of the configured Pool through JSON-RPC
 * at one pinned block, plus the wallet's transaction count and ETH balance, and applies the model
 * in handlers/_shared/wallet-score-model.ts. Without WALLET_SCORE_RPC_URL and WALLET_SCORE_AAVE_POOL
 * it answers 503 upstream_not_configured; an RPC failure is a 502; the buyer pays for neither.
 */
export default defineHandler<Input>({
  slug: 'wallet-behavior-score-query',
  description:
    "Risk score (0–100) of a wallet's Aave v3 lending position on chain: risk classification, behavioural profile, liquidation history and a per-component explanation of the score.",
  methods: ['GET'],
  providers: ['WALLET_SCORE_RPC_URL', 'WALLET_SCORE_AAVE_POOL'],
  timeoutMs: 20_000,
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['address'],
    properties: {
      address: {
        type: 'string',
        pattern: '^0x[0-9a-fA-F]{40}$',
        description:
          'The wallet to score: a 0x-prefixed 20-byte hex address (mixed case must be a valid EIP-55 checksum).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      `{ address, chainId, pool, blockNumber, score, classification, model, components[], profile, account, liquidations, activity }. ` +
      `score 0 (safest) … 100 (riskiest); classification bands: ${bandsText}. ` +
      `Component weights: ${weightsText}; a position liquidatable now (health factor < 1) scores at least 90. ` +
      'account: Aave v3 getUserAccountData in USD (base currency, 8 decimals) with the raw values; healthFactor null when there is no debt. ' +
      'liquidations: LiquidationCall events where the wallet is the user, within the scanned block range (fromBlock–toBlock), newest first (at most 20 listed, all counted). ' +
      'activity: transaction count and ETH balance.',
    schema: {
      type: 'object',
      properties: {
        ...scoreOutputSchema.properties,
        address: { type: 'string' },
        chainId: { type: 'integer' },
        pool: { type: 'string', description: 'the Aave v3 Pool read' },
        blockNumber: { type: 'string', description: 'every figure was read at this block' },
        account: {
          type: 'object',
          description:
            'totalCollateralUsd, totalDebtUsd, availableBorrowsUsd, liquidationThresholdPercent, ltvPercent, healthFactor, raw (the uint256 values as decimal strings)',
        },
        liquidations: {
          type: 'object',
          description:
            'fromBlock, toBlock, count, daysSinceLast, events[]: blockNumber, transactionHash, timestamp, collateralAsset, debtAsset, debtToCover, liquidatedCollateralAmount, liquidator, receiveAToken',
        },
        activity: { type: 'object', description: 'transactionCount (nonce), ethBalanceWei, ethBalance' },
      },
    },
    example: {
      address: '0x82B87a310abA6e0dab2bEC35F21656E9570177C5',
      chainId: 84532,
      pool: '0xe7c1f599bd9a725c72ee8fa2a7afea4bba3bcb50',
      blockNumber: '9',
      model: 'wallet-behavior-score/1',
      score: 8,
      classification: 'low',
      components: [
        {
          name: 'healthFactor',
          risk: 0,
          value: 8.25,
          explanation: 'health factor 8.25: risk rises linearly from 0 at 3 to full at 1',
          weight: 35,
          points: 0,
        },
        {
          name: 'borrowUtilisation',
          risk: 0.1333,
          value: 0.1333,
          explanation: '13.33 % of the borrowing power (debt + available borrows) is used',
          weight: 25,
          points: 3.33,
        },
        {
          name: 'liquidationCount',
          risk: 0,
          value: 0,
          explanation: 'never liquidated in the period looked at',
          weight: 20,
          points: 0,
        },
      ],
      profile: {
        position: 'borrower',
        leverage: 'conservative',
        liquidationHistory: 'none',
        activity: 'new',
        liquidatableNow: false,
        summary: 'A new wallet that borrows with conservative leverage, with no liquidations.',
      },
      account: {
        totalCollateralUsd: 50000,
        totalDebtUsd: 5000,
        availableBorrowsUsd: 32500,
        liquidationThresholdPercent: 82.5,
        ltvPercent: 80,
        healthFactor: 8.25,
        raw: {
          totalCollateralBase: '5000000000000',
          totalDebtBase: '500000000000',
          availableBorrowsBase: '3250000000000',
          currentLiquidationThreshold: '8250',
          ltv: '8000',
          healthFactor: '8250000000000000000',
        },
      },
      liquidations: { fromBlock: '0', toBlock: '9', count: 0, daysSinceLast: null, events: [] },
      activity: { transactionCount: 0, ethBalanceWei: '0', ethBalance: '0' },
    },
  },
  example: { address: '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045' },
  async run(input, ctx) {
    const viem = await import('viem')
    if (
      /[A-F]/.test(input.address.slice(2)) &&
      /[a-f]/.test(input.address.slice(2)) &&
      !viem.isAddress(input.address, { strict: true })
    ) {
      throw new HandlerInputError(
        'address',
        'address has mixed case but is not a valid EIP-55 checksum; send it all lower-case or correctly checksummed',
      )
    }
    const user = viem.getAddress(input.address)
    const settings = readSettings(ctx)
    const client = viem.createPublicClient({ transport: viem.http(settings.rpcUrl, { timeout: 8_000, retryCount: 1 }) })

    const step = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
      try {
        return await fn()
      } catch (err) {
        // viem's messages carry the RPC URL, which may hold a key: say only which read failed
        throw (
          notAPool(viem, settings.pool, err) ??
          new HandlerUpstreamError('upstream_failed', `the chain RPC failed while reading ${what}`)
        )
      }
    }

    const blockNumber = await step('the latest block', () => client.getBlockNumber())
    const [chainId, data, nonce, balance, head] = await Promise.all([
      step('the chain id', () => client.getChainId()),
      step('getUserAccountData', () =>
        client.readContract({
          address: settings.pool,
          abi: poolAbi,
          functionName: 'getUserAccountData',
          args: [user],
          blockNumber,
        }),
      ),
      step('the transaction count', () => client.getTransactionCount({ address: user, blockNumber })),
      step('the ETH balance', () => client.getBalance({ address: user, blockNumber })),
      step('the latest block', () => client.getBlock({ blockNumber })),
    ])

    const fromBlock = blockNumber >= settings.logBlocks ? blockNumber - settings.logBlocks + 1n : 0n
    const ranges: Array<[bigint, bigint]> = []
    for (let a = fromBlock; a <= blockNumber; a += settings.chunkBlocks)
      ranges.push([a, a + settings.chunkBlocks - 1n < blockNumber ? a + settings.chunkBlocks - 1n : blockNumber])
    const logs = []
    // a few ranges at a time: RPC providers cap both range size and request rate
    for (let i = 0; i < ranges.length; i += 4) {
      const batch = await Promise.all(
        ranges.slice(i, i + 4).map(([a, b]) =>
          step('LiquidationCall logs', () =>
            client.getLogs({
              address: settings.pool,
              event: liquidationCallEvent,
              args: { user },
              fromBlock: a,
              toBlock: b,
              strict: true,
            }),
          ),
        ),
      )
      for (const l of batch) logs.push(...l)
    }
    logs.sort((x, y) =>
      x.blockNumber === y.blockNumber ? y.logIndex - x.logIndex : y.blockNumber > x.blockNumber ? 1 : -1,
    )
    const listed = logs.slice(0, LISTED_LIQUIDATIONS)
    const blockTimes = new Map<bigint, bigint>()
    for (const b of new Set(listed.map((l) => l.blockNumber))) {
      blockTimes.set(b, (await step('a liquidation block', () => client.getBlock({ blockNumber: b }))).timestamp)
    }
    const events = listed.map((l) => ({
      blockNumber: l.blockNumber.toString(),
      transactionHash: l.transactionHash,
      timestamp: new Date(Number(blockTimes.get(l.blockNumber)!) * 1000).toISOString(),
      collateralAsset: l.args.collateralAsset,
      debtAsset: l.args.debtAsset,
      debtToCover: l.args.debtToCover.toString(),
      liquidatedCollateralAmount: l.args.liquidatedCollateralAmount.toString(),
      liquidator: l.args.liquidator,
      receiveAToken: l.args.receiveAToken,
    }))
    // "now" is the pinned block's time, so the answer depends on the chain only
    const daysSinceLast =
      listed.length > 0 ? Math.max(0, Number(head.timestamp - blockTimes.get(listed[0]!.blockNumber)!) / 86_400) : null

    const [collateral, debt, available, threshold, ltv, hf] = data
    const usd = (x: bigint) => Number(viem.formatUnits(x, BASE_CURRENCY_DECIMALS))
    const healthFactor = debt === 0n ? null : Number(viem.formatUnits(hf, 18))
    const scored = scoreWallet({
      totalCollateralUsd: usd(collateral),
      totalDebtUsd: usd(debt),
      availableBorrowsUsd: usd(available),
      healthFactor,
      liquidationCount: logs.length,
      daysSinceLastLiquidation: daysSinceLast === null ? null : Math.round(daysSinceLast * 100) / 100,
      transactionCount: nonce,
    })
    return {
      body: {
        address: user,
        chainId,
        pool: settings.pool,
        blockNumber: blockNumber.toString(),
        ...scored,
        account: {
          totalCollateralUsd: usd(collateral),
          totalDebtUsd: usd(debt),
          availableBorrowsUsd: usd(available),
          liquidationThresholdPercent: Number(threshold) / 100,
          ltvPercent: Number(ltv) / 100,
          healthFactor,
          raw: {
            totalCollateralBase: collateral.toString(),
            totalDebtBase: debt.toString(),
            availableBorrowsBase: available.toString(),
            currentLiquidationThreshold: threshold.toString(),
            ltv: ltv.toString(),
            healthFactor: hf.toString(),
          },
        },
        liquidations: {
          fromBlock: fromBlock.toString(),
          toBlock: blockNumber.toString(),
          count: logs.length,
          daysSinceLast: daysSinceLast === null ? null : Math.round(daysSinceLast * 100) / 100,
          events,
        },
        activity: { transactionCount: nonce, ethBalanceWei: balance.toString(), ethBalance: viem.formatEther(balance) },
      },
    }
  },
})

/**
 * The answer when the configured pool's node answered but the contract did not answer
 * getUserAccountData as an Aave v3 Pool does (no contract, a revert, data of another shape);
 * undefined for node and transport failures, which are the RPC's.
 */
function notAPool(viem: typeof import('viem'), pool: string, err: unknown): HandlerUpstreamError | undefined {
  if (!(err instanceof viem.ContractFunctionExecutionError) || err.functionName !== 'getUserAccountData')
    return undefined
  const cause = err.cause
  let why: string
  if (cause instanceof viem.ContractFunctionZeroDataError)
    why = 'it returned no data for getUserAccountData (no contract there, or one without that function)'
  else if (cause instanceof viem.ContractFunctionRevertedError) why = 'it reverted getUserAccountData'
  else if (
    !err.walk(
      (e) => e instanceof viem.HttpRequestError || e instanceof viem.TimeoutError || e instanceof viem.RpcRequestError,
    )
  ) {
    // the node answered and the answer did not decode (too short, out of bounds)
    why = 'it answered getUserAccountData with data that is not an Aave v3 account'
  } else return undefined
  return new HandlerUpstreamError(
    'upstream_failed',
    `WALLET_SCORE_AAVE_POOL (${pool}) does not answer as an Aave v3 Pool on this chain: ${why}; point it at the chain's Aave v3 Pool`,
  )
}

function readSettings(ctx: HandlerContext) {
  const p = ctx.providers
  const rpcUrl = p.WALLET_SCORE_RPC_URL
  const pool = p.WALLET_SCORE_AAVE_POOL
  if (!rpcUrl || !/^https?:\/\//.test(rpcUrl) || !pool || !/^0x[0-9a-fA-F]{40}$/.test(pool)) {
    throw new HandlerUpstreamError(
      'upstream_not_configured',
      'wallet-behavior-score-query is not configured on this deployment (WALLET_SCORE_RPC_URL and WALLET_SCORE_AAVE_POOL)',
    )
  }
  const positive = (v: string | undefined, fallback: bigint) => (v && /^[1-9]\d{0,9}$/.test(v) ? BigInt(v) : fallback)
  const logBlocks = positive(p.WALLET_SCORE_LOG_BLOCKS, DEFAULT_LOG_BLOCKS)
  // at most 100 log requests per call, whatever the settings
  const chunk = positive(p.WALLET_SCORE_LOG_CHUNK_BLOCKS, DEFAULT_LOG_CHUNK_BLOCKS)
  const chunkBlocks = chunk * 100n < logBlocks ? (logBlocks + 99n) / 100n : chunk
  return { rpcUrl, pool: pool as `0x${string}`, logBlocks, chunkBlocks }
}
