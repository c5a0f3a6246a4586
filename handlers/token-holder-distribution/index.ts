import { addressSchema, chainClient, CHAIN_DATA_RPC_URL, parseAddress } from '../_shared/evm-client.js'
import { erc20Abi, readTokenInfo, transferEvent } from '../_shared/evm-erc20.js'
import { describeScan, LOG_CHUNK_SETTING, logChunkBlocks, scanLogs } from '../_shared/evm-logs.js'
import { multiRead } from '../_shared/evm-multicall.js'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

interface Input {
  token: string
  blocks: number
  top: number
}

/** bounds of one call, whatever the input */
const MAX_REQUESTS = 60
const MAX_LOGS = 100_000
const SCAN_DEADLINE_MS = 18_000
/** addresses whose balanceOf is read (the most active in the range) */
const MAX_BALANCE_READS = 1_000

/**
 * Holder distribution of an ERC-20 as far as a bounded recent log scan can see: Transfer logs of
 * the last `blocks` blocks give the addresses that moved the token; their real balances are read
 * with balanceOf at the same block. Holders who did not move the token in the range are not
 * seen, and the answer says so.
 */
export default defineHandler<Input>({
  slug: 'token-holder-distribution',
  description:
    'Top holders of an ERC-20 among the addresses that moved it in a recent, bounded block range: balances read on chain with balanceOf, share of total supply, top-10 share, holder count within the scanned range and a contract/EOA flag.',
  providers: [CHAIN_DATA_RPC_URL],
  timeoutMs: 30_000,
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['token'],
    properties: {
      token: addressSchema('The ERC-20 token contract: a 0x-prefixed 20-byte hex address.'),
      blocks: {
        type: 'integer',
        minimum: 1,
        maximum: 100_000,
        default: 10_000,
        description:
          'How many recent blocks of Transfer logs to scan (1–100000, default 10000; about 5.5 hours on Base).',
      },
      top: {
        type: 'integer',
        minimum: 1,
        maximum: 100,
        default: 20,
        description: 'How many top holders to list (1–100, default 20).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ token, chainId, blockNumber, erc20 { name, symbol, decimals, totalSupply }, scan { fromBlock, toBlock, requestedFromBlock, complete, stoppedBecause, transfers, requests, description }, ' +
      'addressesSeen, balancesRead, holdersInScannedRange, topHolders[] { rank, address, balance (base units), balanceFormatted (token units; null, like totalSupplyFormatted, when the token has no decimals()), shareOfSupplyPercent, type (contract | eoa | eoa-delegated), netFlowInRange }, ' +
      'top10SharePercent, listedSharePercent, method }. Balances are balanceOf at blockNumber; only addresses that sent or received the token within the scanned range are considered, ' +
      `so holdersInScannedRange counts holders among them, not all holders. Bounds: at most ${MAX_REQUESTS} eth_getLogs requests, ${MAX_LOGS} logs and ${MAX_BALANCE_READS} balance reads per call (the ${MAX_BALANCE_READS} addresses that moved the most); a scan cut short says so and gives the range it covered.`,
    schema: {
      type: 'object',
      properties: {
        token: { type: 'string' },
        chainId: { type: 'integer' },
        blockNumber: { type: 'string' },
        erc20: { type: 'object' },
        scan: { type: 'object' },
        addressesSeen: { type: 'integer' },
        balancesRead: { type: 'integer' },
        holdersInScannedRange: { type: 'integer' },
        topHolders: { type: 'array' },
        top10SharePercent: { type: ['number', 'null'] },
        method: { type: 'string' },
      },
    },
    example: {
      token: '0xC60AA8af6D7fea6410eBCc1458e51A1b400BBfd8',
      chainId: 84532,
      blockNumber: '156',
      erc20: {
        name: 'Spread',
        symbol: 'SPR',
        decimals: 6,
        totalSupply: '1000000000000',
        totalSupplyFormatted: '1000000',
      },
      scan: {
        fromBlock: '0',
        toBlock: '156',
        requestedFromBlock: '0',
        complete: true,
        stoppedBecause: null,
        transfers: 6,
        requests: 1,
        description: 'Transfer logs in blocks 0–156 (157 blocks, 1 eth_getLogs requests, 6 logs)',
      },
      addressesSeen: 6,
      balancesRead: 6,
      holdersInScannedRange: 6,
      topHolders: [
        {
          rank: 1,
          address: '0xcD0865c06048A5607E3bDE1F4763e5dFB6b3e11D',
          balance: '400000000000',
          balanceFormatted: '400000',
          shareOfSupplyPercent: 40,
          type: 'eoa',
          netFlowInRange: '400000000000',
        },
        {
          rank: 2,
          address: '0x5A05bb261165923eb76C7020a4eeFF3C4D31E6bE',
          balance: '250000000000',
          balanceFormatted: '250000',
          shareOfSupplyPercent: 25,
          type: 'eoa',
          netFlowInRange: '250000000000',
        },
        {
          rank: 3,
          address: '0xddf752D5B08d241C8E933A3ab6775E2fE0509389',
          balance: '180000000000',
          balanceFormatted: '180000',
          shareOfSupplyPercent: 18,
          type: 'eoa',
          netFlowInRange: '180000000000',
        },
      ],
      top10SharePercent: 100,
      listedSharePercent: 100,
      method:
        'Transfer(address,address,uint256) logs of the token in the scanned block range give the addresses that moved it (the zero address, mint/burn side, excluded); the 1000 that moved the most are read with…',
    },
  },
  example: { token: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', blocks: 1000, top: 10 },
  async run(input, ctx) {
    const c = await chainClient(ctx, { what: 'token-holder-distribution', maxBytes: 32 * 1024 * 1024 })
    const { viem, client, read } = c
    const token = parseAddress(viem, input.token, 'token')
    const blocks = BigInt(input.blocks ?? 10_000)
    const top = input.top ?? 20
    const head = await read('the latest block', () => client.getBlockNumber())
    const [chainId, code] = await Promise.all([
      read('the chain id', () => client.getChainId()),
      read('the token code', () => client.getCode({ address: token, blockNumber: head })),
    ])
    if (!code || code === '0x')
      throw new HandlerInputError('token', `token ${token} has no contract code on this chain (id ${chainId})`, 422)
    const info = await readTokenInfo(c, token, head)
    if (info.totalSupply === null)
      throw new HandlerInputError('token', `${token} does not answer totalSupply(), so it is not an ERC-20`, 422)

    const fromBlock = head >= blocks - 1n ? head - blocks + 1n : 0n
    const net = new Map<string, bigint>()
    const moved = new Map<string, bigint>()
    const add = (m: Map<string, bigint>, k: string, v: bigint) => m.set(k, (m.get(k) ?? 0n) + v)
    let transfers = 0
    const scan = await scanLogs(c, {
      fromBlock,
      toBlock: head,
      chunkBlocks: logChunkBlocks(ctx),
      maxRequests: MAX_REQUESTS,
      maxLogs: MAX_LOGS,
      deadlineMs: SCAN_DEADLINE_MS,
      fetch: (a, b) => client.getLogs({ address: token, event: transferEvent, fromBlock: a, toBlock: b, strict: true }),
      onLogs(logs) {
        for (const l of logs) {
          const { from, to, value } = l.args
          transfers++
          if (from !== viem.zeroAddress) {
            add(net, from, -value)
            add(moved, from, value)
          }
          if (to !== viem.zeroAddress) {
            add(net, to, value)
            add(moved, to, value)
          }
        }
      },
    })

    const candidates = [...moved.entries()]
      .sort((a, b) => (b[1] > a[1] ? 1 : b[1] < a[1] ? -1 : 0))
      .slice(0, MAX_BALANCE_READS)
      .map(([a]) => a as `0x${string}`)
    const balances = await multiRead(
      c,
      candidates.map((address) => ({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [address] })),
      head,
      'balanceOf of the holders',
    )
    const held = candidates
      .map((address, i) => ({ address, balance: balances[i] as bigint | null }))
      .filter((h): h is { address: `0x${string}`; balance: bigint } => typeof h.balance === 'bigint' && h.balance > 0n)
    held.sort((a, b) => (b.balance > a.balance ? 1 : b.balance < a.balance ? -1 : 0))
    const listed = held.slice(0, top)
    // ten at a time: public nodes rate-limit bursts
    const codes: Array<string | undefined> = []
    for (let i = 0; i < listed.length; i += 10) {
      codes.push(
        ...(await Promise.all(
          listed
            .slice(i, i + 10)
            .map((h) => read('holder code', () => client.getCode({ address: h.address, blockNumber: head }))),
        )),
      )
    }

    const supply = info.totalSupply
    const pct = (x: bigint) => (supply > 0n ? Number((x * 1_000_000n) / supply) / 10_000 : null)
    // a token without decimals() has no token-unit form: formatting with 0 would show base units as whole tokens
    const formatted = (x: bigint) => (info.decimals === null ? null : viem.formatUnits(x, info.decimals))
    const sum = (xs: Array<{ balance: bigint }>) => xs.reduce((a, h) => a + h.balance, 0n)
    return {
      body: {
        token,
        chainId,
        blockNumber: head.toString(),
        erc20: {
          name: info.name,
          symbol: info.symbol,
          decimals: info.decimals,
          totalSupply: supply.toString(),
          totalSupplyFormatted: formatted(supply),
        },
        scan: {
          fromBlock: scan.scannedFrom.toString(),
          toBlock: scan.toBlock.toString(),
          requestedFromBlock: scan.requestedFrom.toString(),
          complete: scan.complete,
          stoppedBecause: scan.stoppedBecause,
          transfers,
          requests: scan.requests,
          description: describeScan(scan, 'Transfer logs'),
        },
        addressesSeen: moved.size,
        balancesRead: candidates.length,
        holdersInScannedRange: held.length,
        topHolders: listed.map((h, i) => ({
          rank: i + 1,
          address: h.address,
          balance: h.balance.toString(),
          balanceFormatted: formatted(h.balance),
          shareOfSupplyPercent: pct(h.balance),
          type:
            !codes[i] || codes[i] === '0x' ? 'eoa' : codes[i]!.startsWith('0xef0100') ? 'eoa-delegated' : 'contract',
          netFlowInRange: (net.get(h.address) ?? 0n).toString(),
        })),
        top10SharePercent: pct(sum(held.slice(0, 10))),
        listedSharePercent: pct(sum(listed)),
        method:
          'Transfer(address,address,uint256) logs of the token in the scanned block range give the addresses that moved it (the zero address, mint/burn side, excluded); ' +
          `the ${MAX_BALANCE_READS} that moved the most are read with balanceOf at blockNumber through Multicall3; shares are balance / totalSupply. ` +
          `Holders that did not move the token in the range are not seen. type: eoa (no code), eoa-delegated (EIP-7702 delegation code), contract. ` +
          `Log requests span at most ${LOG_CHUNK_SETTING} blocks (a deployment setting) and are halved when the node refuses a range as too large.`,
      },
    }
  },
})
