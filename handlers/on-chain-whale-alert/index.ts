import { addressSchema, chainClient, CHAIN_DATA_RPC_URL, isoTime, parseAddress } from '../_shared/evm-client.js'
import { readTokenInfo, transferEvent } from '../_shared/evm-erc20.js'
import { describeScan, LOG_CHUNK_SETTING, logChunkBlocks, scanLogs } from '../_shared/evm-logs.js'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

interface Input {
  token?: string
  minAmount: string
  blocks?: number
  limit: number
}

const MAX_LOG_REQUESTS = 60
const MAX_LOGS = 200_000
const SCAN_DEADLINE_MS = 18_000
const MAX_NATIVE_BLOCKS = 50
const DEFAULT_TOKEN_BLOCKS = 5_000
const DEFAULT_NATIVE_BLOCKS = 20

interface Row {
  transactionHash: `0x${string}`
  blockNumber: bigint
  logIndex: number | null
  from: `0x${string}`
  to: `0x${string}` | null
  value: bigint
  contractCall?: boolean
}

/**
 * Large transfers on the configured chain (Base in production): ERC-20 Transfer logs of one
 * token, or top-level native ETH transfers, at or above a threshold, newest first, within a
 * bounded range of recent blocks that the answer states.
 */
export default defineHandler<Input>({
  slug: 'on-chain-whale-alert',
  description:
    'Recent large transfers: Transfer logs of an ERC-20 (or native ETH transactions when no token is given) at or above a threshold in token units, newest first, with transaction hash, block, time, from, to and amount.',
  providers: [CHAIN_DATA_RPC_URL],
  timeoutMs: 30_000,
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['minAmount'],
    properties: {
      token: addressSchema(
        'The ERC-20 token to watch. Leave out to watch native ETH transfers (top-level transaction values; internal transfers by contracts are not seen).',
      ),
      minAmount: {
        type: 'string',
        pattern: '^[0-9]{1,40}(\\.[0-9]{1,36})?$',
        description:
          "Threshold in whole token units (or ETH), e.g. '100000' or '50.5'; transfers of at least this amount are listed.",
      },
      blocks: {
        type: 'integer',
        minimum: 1,
        maximum: 50_000,
        description: `How many recent blocks to scan: token mode 1–50000 (default ${DEFAULT_TOKEN_BLOCKS}), native mode 1–${MAX_NATIVE_BLOCKS} (default ${DEFAULT_NATIVE_BLOCKS}; each block is read whole).`,
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 100,
        default: 25,
        description:
          'Most transfers to return (1–100, default 25); the scan stops once the newest blocks hold this many.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ chainId, blockNumber, asset { type (erc20 | native), address, name, symbol, decimals }, threshold { amount, baseUnits }, ' +
      'scan { fromBlock, toBlock, requestedFromBlock, complete, stoppedBecause, requests, description }, count, ' +
      'transfers[] { transactionHash, blockNumber, time, logIndex (null for native), from, to, amount, amountBaseUnits, kind (transfer | mint: from the zero address | burn: to the zero address), contractCall (native only: the transaction also carried calldata) }, method }. ' +
      'Newest first. Only the stated block range was scanned; when stoppedBecause is result-limit, older blocks were not needed.',
    schema: {
      type: 'object',
      properties: {
        chainId: { type: 'integer' },
        blockNumber: { type: 'string' },
        asset: { type: 'object' },
        threshold: { type: 'object' },
        scan: { type: 'object' },
        count: { type: 'integer' },
        transfers: { type: 'array' },
        method: { type: 'string' },
      },
    },
    example: {
      chainId: 84532,
      blockNumber: '16',
      asset: {
        type: 'erc20',
        address: '0xfD7a66AfFfB3f087218c5Efba38d812534238E62',
        name: 'Whale',
        symbol: 'WHL',
        decimals: 6,
      },
      threshold: { amount: '100000', baseUnits: '100000000000' },
      scan: {
        fromBlock: '0',
        toBlock: '16',
        requestedFromBlock: '0',
        complete: true,
        stoppedBecause: null,
        requests: 1,
        description: 'Transfer logs in blocks 0–16 (17 blocks, 1 eth_getLogs requests, 6 logs)',
      },
      count: 4,
      transfers: [
        {
          transactionHash: '0x1f9b921c611d3c9463e58523340287a552a700318b21ea5b5bc31b3174d20e5e',
          blockNumber: '16',
          time: '2026-11-28T12:31:24.000Z',
          logIndex: 2,
          from: '0xFD8B2fbB140d9e80ac721c74923E20483867D90d',
          to: '0xF8Db38A748bc7E47Ed0040FE506F21312Dc03a5a',
          amount: '2000000',
          amountBaseUnits: '2000000000000',
          kind: 'transfer',
        },
        {
          transactionHash: '0x1f9b921c611d3c9463e58523340287a552a700318b21ea5b5bc31b3174d20e5e',
          blockNumber: '16',
          time: '2026-11-28T12:31:24.000Z',
          logIndex: 0,
          from: '0xFD8B2fbB140d9e80ac721c74923E20483867D90d',
          to: '0x1F6167380a77aDc1658B585F47780765D1d844B7',
          amount: '100000',
          amountBaseUnits: '100000000000',
          kind: 'transfer',
        },
        {
          transactionHash: '0xc4c6bfa2d86c0ed95a214bd2f4a95d8ee20d2d534932bd8e871de64c2a66504a',
          blockNumber: '4',
          time: '2026-11-28T12:31:24.000Z',
          logIndex: 0,
          from: '0xFD8B2fbB140d9e80ac721c74923E20483867D90d',
          to: '0xd62699ac0baEF08Ae41e43FFaF680e6f41d21736',
          amount: '500000',
          amountBaseUnits: '500000000000',
          kind: 'transfer',
        },
      ],
      method:
        'eth_getLogs for Transfer(address,address,uint256) of the token, newest blocks first, in chunks of at most CHAIN_DATA_LOG_CHUNK_BLOCKS blocks (halved when the node refuses a range); transfers with valu…',
    },
  },
  example: { token: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', minAmount: '100000', blocks: 1000, limit: 10 },
  async run(input, ctx) {
    const c = await chainClient(ctx, { what: 'on-chain-whale-alert', maxBytes: 32 * 1024 * 1024 })
    const { viem, client, read } = c
    const token = input.token ? parseAddress(viem, input.token, 'token') : null
    const limit = input.limit ?? 25
    if (!token && input.blocks !== undefined && input.blocks > MAX_NATIVE_BLOCKS)
      throw new HandlerInputError('blocks', `native ETH mode reads whole blocks: at most ${MAX_NATIVE_BLOCKS}`)
    const blocks = BigInt(input.blocks ?? (token ? DEFAULT_TOKEN_BLOCKS : DEFAULT_NATIVE_BLOCKS))
    const head = await read('the latest block', () => client.getBlockNumber())
    const chainId = await read('the chain id', () => client.getChainId())
    const fromBlock = head >= blocks - 1n ? head - blocks + 1n : 0n
    const rows: Row[] = []
    let asset: Record<string, unknown>
    let decimals: number
    let threshold: bigint
    let scanOut: Record<string, unknown>

    if (token) {
      const code = await read('the token code', () => client.getCode({ address: token, blockNumber: head }))
      if (!code || code === '0x')
        throw new HandlerInputError('token', `token ${token} has no contract code on this chain (id ${chainId})`, 422)
      const info = await readTokenInfo(c, token, head)
      if (info.decimals === null)
        throw new HandlerInputError(
          'token',
          `${token} does not answer decimals(), so minAmount cannot be converted`,
          422,
        )
      decimals = info.decimals
      threshold = toUnits(viem, input.minAmount, decimals)
      asset = { type: 'erc20', address: token, name: info.name, symbol: info.symbol, decimals }
      const scan = await scanLogs(c, {
        fromBlock,
        toBlock: head,
        chunkBlocks: logChunkBlocks(ctx),
        maxRequests: MAX_LOG_REQUESTS,
        maxLogs: MAX_LOGS,
        deadlineMs: SCAN_DEADLINE_MS,
        fetch: (a, b) =>
          client.getLogs({ address: token, event: transferEvent, fromBlock: a, toBlock: b, strict: true }),
        onLogs(logs) {
          for (const l of logs)
            if (l.args.value >= threshold)
              rows.push({
                transactionHash: l.transactionHash,
                blockNumber: l.blockNumber,
                logIndex: l.logIndex,
                from: l.args.from,
                to: l.args.to,
                value: l.args.value,
              })
        },
        enough: () => rows.length >= limit,
      })
      scanOut = {
        fromBlock: scan.scannedFrom.toString(),
        toBlock: head.toString(),
        requestedFromBlock: fromBlock.toString(),
        complete: scan.complete,
        stoppedBecause: scan.stoppedBecause,
        requests: scan.requests,
        description: describeScan(scan, 'Transfer logs'),
      }
    } else {
      decimals = 18
      threshold = toUnits(viem, input.minAmount, 18)
      asset = { type: 'native', address: null, name: 'Ether', symbol: 'ETH', decimals: 18 }
      const deadline = Date.now() + SCAN_DEADLINE_MS
      let cursor = head
      let stoppedBecause: string | null = null
      // newest first, a few blocks at a time
      while (cursor >= fromBlock) {
        if (rows.length >= limit) stoppedBecause = 'result-limit'
        else if (Date.now() > deadline) stoppedBecause = 'time-limit'
        if (stoppedBecause) break
        const batch: bigint[] = []
        for (let b = cursor; b >= fromBlock && batch.length < 5; b--) batch.push(b)
        const got = await Promise.all(
          batch.map((b) => read(`block ${b}`, () => client.getBlock({ blockNumber: b, includeTransactions: true }))),
        )
        for (const block of got) {
          const txs = [...block.transactions].sort((x, y) => (y.transactionIndex ?? 0) - (x.transactionIndex ?? 0))
          for (const tx of txs)
            if (tx.value >= threshold && tx.value > 0n)
              rows.push({
                transactionHash: tx.hash,
                blockNumber: block.number!,
                logIndex: null,
                from: viem.getAddress(tx.from),
                to: tx.to ? viem.getAddress(tx.to) : null,
                value: tx.value,
                contractCall: tx.input !== '0x',
              })
        }
        cursor = batch[batch.length - 1]! - 1n
      }
      const scannedFrom = cursor + 1n
      const range = `blocks ${scannedFrom}–${head}`
      scanOut = {
        fromBlock: scannedFrom.toString(),
        toBlock: head.toString(),
        requestedFromBlock: fromBlock.toString(),
        complete: scannedFrom <= fromBlock,
        stoppedBecause,
        requests: Number(head - scannedFrom + 1n),
        description:
          stoppedBecause === null
            ? `native transactions in ${range} (every block read whole)`
            : `native transactions in ${range} only (stopped at its ${stoppedBecause}; requested from ${fromBlock})`,
      }
    }

    rows.sort((x, y) =>
      x.blockNumber === y.blockNumber ? (y.logIndex ?? 0) - (x.logIndex ?? 0) : y.blockNumber > x.blockNumber ? 1 : -1,
    )
    const listed = rows.slice(0, limit)
    const times = new Map<bigint, bigint>()
    const unique = [...new Set(listed.map((r) => r.blockNumber))]
    for (let i = 0; i < unique.length; i += 10) {
      const got = await Promise.all(
        unique.slice(i, i + 10).map((b) => read(`block ${b}`, () => client.getBlock({ blockNumber: b }))),
      )
      for (const b of got) times.set(b.number!, b.timestamp)
    }
    return {
      body: {
        chainId,
        blockNumber: head.toString(),
        asset,
        threshold: { amount: input.minAmount, baseUnits: threshold.toString() },
        scan: scanOut,
        count: listed.length,
        transfers: listed.map((r) => ({
          transactionHash: r.transactionHash,
          blockNumber: r.blockNumber.toString(),
          time: isoTime(times.get(r.blockNumber)!),
          logIndex: r.logIndex,
          from: r.from,
          to: r.to,
          amount: viem.formatUnits(r.value, decimals),
          amountBaseUnits: r.value.toString(),
          kind: r.from === viem.zeroAddress ? 'mint' : r.to === viem.zeroAddress ? 'burn' : 'transfer',
          ...(token ? {} : { contractCall: r.contractCall }),
        })),
        method: token
          ? `eth_getLogs for Transfer(address,address,uint256) of the token, newest blocks first, in chunks of at most ${LOG_CHUNK_SETTING} blocks (halved when the node refuses a range); transfers with value ≥ the threshold are kept; at most ${MAX_LOG_REQUESTS} requests and ${MAX_LOGS} logs per call.`
          : 'eth_getBlockByNumber with full transactions, newest first; top-level transactions whose value ≥ the threshold are kept. ETH moved inside contract calls (internal transfers) is not visible this way.',
      },
    }
  },
})

function toUnits(viem: typeof import('viem'), amount: string, decimals: number): bigint {
  if ((amount.split('.')[1] ?? '').replace(/0+$/, '').length > decimals)
    throw new HandlerInputError('minAmount', `minAmount has more decimals than the asset's ${decimals}`)
  return viem.parseUnits(amount, decimals)
}
