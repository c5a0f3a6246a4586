import { addressSchema, chainClient, CHAIN_DATA_RPC_URL, parseAddress } from '../_shared/evm-client.js'
import { erc20Abi } from '../_shared/evm-erc20.js'
import { multiRead, MULTICALL3_ADDRESS } from '../_shared/evm-multicall.js'
import { TOKEN_LISTS } from '../_shared/evm-token-list.js'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

/** chains whose native currency is ether: Ethereum, OP, Arbitrum One, Base, their Sepolia testnets */
const ETH_CHAINS = new Set([1, 10, 42161, 8453, 11155111, 11155420, 421614, 84532])

interface Input {
  address: string
  tokens?: string[]
  includeBuiltInTokens?: boolean
  hideZero?: boolean
}

/**
 * A wallet's native balance and ERC-20 balances on the configured chain (Base in production),
 * for the tokens the buyer names and/or a built-in list of major tokens of that chain
 * (handlers/_shared/evm-token-list.ts, with sources), read in one pinned block through Multicall3.
 */
export default defineHandler<Input>({
  slug: 'defi-wallet-portfolio',
  description:
    "A wallet's native ETH balance and ERC-20 balances (name, symbol, decimals read on chain) for tokens you name and/or a built-in list of major tokens of the chain, all at one block. Prices are not included.",
  providers: [CHAIN_DATA_RPC_URL],
  timeoutMs: 20_000,
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['address'],
    properties: {
      address: addressSchema('The wallet: a 0x-prefixed 20-byte hex address.'),
      tokens: {
        type: 'array',
        maxItems: 50,
        uniqueItems: true,
        items: addressSchema('An ERC-20 token contract address.'),
        description: 'ERC-20 contracts to read (at most 50). In a query string: a JSON array or repeated tokens=.',
      },
      includeBuiltInTokens: {
        type: 'boolean',
        description:
          'Also read the built-in list of major tokens of the chain (Base: USDC, WETH, USDbC, DAI, EURC, cbETH, cbBTC, wstETH, AERO). Default: true when no tokens are given, false otherwise.',
      },
      hideZero: {
        type: 'boolean',
        default: true,
        description: 'Leave out tokens with a zero balance (default true). Tokens named in `tokens` are always listed.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ address, chainId, blockNumber, native { symbol (ETH, or null on a chain not known to use ether), balance, balanceWei }, tokens[] { address, name, symbol, decimals, balance, balanceBaseUnits, source (input | built-in) }, ' +
      'unreadable[] { address, source, reason } (no ERC-20 answer at that address on this chain), builtInList { chain, source, count } | null, prices: null, pricesNote }. ' +
      'Every figure is read at blockNumber (balanceOf, name, symbol, decimals through Multicall3 aggregate3; the native balance with eth_getBalance). Prices are not included: no price source is configured.',
    schema: {
      type: 'object',
      properties: {
        address: { type: 'string' },
        chainId: { type: 'integer' },
        blockNumber: { type: 'string' },
        native: { type: 'object' },
        tokens: { type: 'array' },
        unreadable: { type: 'array' },
        builtInList: { type: ['object', 'null'] },
        prices: { type: 'null' },
        pricesNote: { type: 'string' },
      },
    },
    example: {
      address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      chainId: 84532,
      blockNumber: '4',
      native: { symbol: 'ETH', balance: '10000', balanceWei: '10000000000000000000000' },
      tokens: [
        {
          address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
          name: 'USDC',
          symbol: 'USDC',
          decimals: 6,
          balance: '1000',
          balanceBaseUnits: '1000000000',
          source: 'built-in',
        },
      ],
      unreadable: [
        {
          address: '0x4200000000000000000000000000000000000006',
          source: 'built-in',
          reason: 'balanceOf(address) gave no answer: no ERC-20 at this address on this chain',
        },
      ],
      builtInList: {
        chain: 'Base Sepolia',
        count: 2,
        source:
          "handlers/_shared/evm-token-list.ts: addresses from the issuers' documentation (Circle, Base, Coinbase, Lido, Aerodrome, ...)",
      },
      multicall: '0xcA11bde05977b3631167028862bE2a173976CA11',
      prices: null,
      pricesNote: 'Prices are not included: this deployment has no price source configured.',
    },
  },
  example: { address: '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045' },
  async run(input, ctx) {
    const c = await chainClient(ctx, { what: 'defi-wallet-portfolio' })
    const { viem, client, read } = c
    const wallet = parseAddress(viem, input.address, 'address')
    const named = (input.tokens ?? []).map((t, i) => parseAddress(viem, t, `tokens.${i}`))
    const hideZero = input.hideZero ?? true
    const head = await read('the latest block', () => client.getBlockNumber())
    const [chainId, balance] = await Promise.all([
      read('the chain id', () => client.getChainId()),
      read('the native balance', () => client.getBalance({ address: wallet, blockNumber: head })),
    ])
    const list = TOKEN_LISTS[chainId]
    const useBuiltIn = input.includeBuiltInTokens ?? named.length === 0
    if (useBuiltIn && !list && named.length === 0) {
      throw new HandlerInputError(
        'tokens',
        `there is no built-in token list for chain id ${chainId}: name the tokens to read`,
        422,
      )
    }
    const targets: Array<{ address: `0x${string}`; source: 'input' | 'built-in' }> = named.map((address) => ({
      address,
      source: 'input',
    }))
    const seen = new Set(named.map((a) => a.toLowerCase()))
    if (useBuiltIn && list)
      for (const t of list.tokens)
        if (!seen.has(t.address.toLowerCase()))
          targets.push({ address: viem.getAddress(t.address), source: 'built-in' })

    const fns = ['balanceOf', 'decimals', 'symbol', 'name'] as const
    const calls = targets.flatMap((t) =>
      fns.map((functionName) => ({
        address: t.address,
        abi: erc20Abi,
        functionName,
        args: functionName === 'balanceOf' ? [wallet] : [],
      })),
    )
    const results = await multiRead(c, calls, head, 'the token balances')
    const tokens: Array<Record<string, unknown>> = []
    const unreadable: Array<Record<string, unknown>> = []
    targets.forEach((t, i) => {
      const [bal, decimals, symbol, name] = results.slice(i * 4, i * 4 + 4) as [
        bigint | null,
        number | null,
        string | null,
        string | null,
      ]
      if (typeof bal !== 'bigint' || typeof decimals !== 'number') {
        unreadable.push({
          address: t.address,
          source: t.source,
          reason:
            typeof bal !== 'bigint'
              ? 'balanceOf(address) gave no answer: no ERC-20 at this address on this chain'
              : 'decimals() gave no answer, so the balance cannot be scaled',
        })
        return
      }
      if (hideZero && bal === 0n && t.source === 'built-in') return
      tokens.push({
        address: t.address,
        name,
        symbol,
        decimals,
        balance: viem.formatUnits(bal, decimals),
        balanceBaseUnits: bal.toString(),
        source: t.source,
      })
    })
    return {
      body: {
        address: wallet,
        chainId,
        blockNumber: head.toString(),
        native: {
          symbol: ETH_CHAINS.has(chainId) ? 'ETH' : null,
          balance: viem.formatEther(balance),
          balanceWei: balance.toString(),
        },
        tokens,
        unreadable,
        builtInList:
          useBuiltIn && list
            ? {
                chain: list.name,
                count: list.tokens.length,
                source:
                  "handlers/_shared/evm-token-list.ts: addresses from the issuers' documentation (Circle, Base, Coinbase, Lido, Aerodrome, ...)",
              }
            : null,
        multicall: MULTICALL3_ADDRESS,
        prices: null,
        pricesNote: 'Prices are not included: this deployment has no price source configured.',
      },
    }
  },
})
