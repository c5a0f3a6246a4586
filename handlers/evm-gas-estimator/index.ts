import { addressSchema, chainClient, CHAIN_DATA_RPC_URL, parseAddress, upstreamError } from '../_shared/evm-client.js'
import { erc20Abi, readTokenInfo } from '../_shared/evm-erc20.js'
import { FEE_METHOD, gwei, readFees, TIERS } from '../_shared/evm-fees.js'
import { revertFrom } from '../_shared/evm-revert.js'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

interface Input {
  kind?: 'call' | 'eth-transfer' | 'erc20-transfer'
  from?: string
  to: string
  data?: string
  value?: string
  token?: string
  amount?: string
}

/** OP Stack GasPriceOracle predeploy (Base, Optimism, ...): getL1Fee(unsigned RLP tx) is the L1 data fee. */
const GAS_PRICE_ORACLE = '0x420000000000000000000000000000000000000F'
// https://specs.optimism.io/protocol/predeploys.html#gaspriceoracle
const gasPriceOracleAbi = [
  {
    type: 'function',
    name: 'getL1Fee',
    stateMutability: 'view',
    inputs: [{ name: '_data', type: 'bytes' }],
    outputs: [{ type: 'uint256' }],
  },
] as const
const FEE_BLOCKS = 20

/**
 * Gas estimate and cost of a transaction on the configured chain (Base in production):
 * eth_estimateGas at the current head plus the fee tiers of gas-price-oracle, and on OP Stack
 * chains the L1 data fee from the GasPriceOracle predeploy. A transaction that would fail is an
 * answer (willRevert with the decoded reason), not an error.
 */
export default defineHandler<Input>({
  slug: 'evm-gas-estimator',
  description:
    'Estimates the gas of a transaction (a contract call, an ETH transfer or an ERC-20 transfer) with eth_estimateGas and prices it at slow / standard / fast fees in wei and ETH; a transaction that would revert is reported with its reason.',
  providers: [CHAIN_DATA_RPC_URL],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['to'],
    properties: {
      kind: {
        type: 'string',
        enum: ['call', 'eth-transfer', 'erc20-transfer'],
        default: 'call',
        description:
          "'call' (default): the raw transaction given by to, data and value. 'eth-transfer': send `amount` ETH to `to`. 'erc20-transfer': send `amount` of `token` to `to` (calldata built here).",
      },
      from: addressSchema(
        "Sender. Optional for a call (the node then simulates from the zero address); required for the transfer kinds, since the sender's balance decides whether they succeed.",
      ),
      to: addressSchema('call: the contract or account called; transfers: the recipient.'),
      data: {
        type: 'string',
        pattern: '^0x([0-9a-fA-F]{2})*$',
        maxLength: 131_074,
        description: 'call only: calldata as 0x hex (at most 64 KiB).',
      },
      value: {
        type: 'string',
        pattern: '^[0-9]{1,78}$',
        description: 'call only: wei sent with the call, as a decimal integer string (default 0).',
      },
      token: addressSchema('erc20-transfer only: the ERC-20 token contract.'),
      amount: {
        type: 'string',
        pattern: '^[0-9]{1,40}(\\.[0-9]{1,36})?$',
        description:
          "Transfer kinds: the amount in whole units (ETH, or the token's units using its decimals()), e.g. '1.5'.",
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ chainId, blockNumber, kind, transaction { from, to, data, value } (what was estimated), willRevert, revert { reason, kind, data } | null, gasUnits, ' +
      'fees { baseFeePerGas, nextBaseFeePerGas, tiers { slow, standard, fast: { maxPriorityFeePerGas, maxFeePerGas, expectedFeePerGas } } } (wei and gwei), ' +
      'cost { slow, standard, fast: { expectedWei, expectedEth, maxWei, maxEth } } (gas × fee per gas, execution only), ' +
      'l1DataFee { wei, eth } | null (OP Stack chains such as Base: the L1 data fee from the GasPriceOracle predeploy, added on top; null on other chains), ' +
      'totalCost { slow, standard, fast: { expectedWei, expectedEth, maxWei, maxEth } } (cost + l1DataFee), ' +
      'sender { balanceWei, balanceEth, affordable { slow, standard, fast }: balance ≥ value + maximum total cost } | null (only when from is given), notes[], method }. ' +
      'willRevert is also true, with kind insufficient-funds, when the sender holds less ETH than the value sent. When willRevert is true, gasUnits and the costs are null.',
    schema: {
      type: 'object',
      properties: {
        chainId: { type: 'integer' },
        blockNumber: { type: 'string' },
        willRevert: { type: 'boolean' },
        revert: { type: ['object', 'null'] },
        gasUnits: { type: ['string', 'null'] },
        cost: { type: ['object', 'null'] },
        l1DataFee: { type: ['object', 'null'] },
        totalCost: { type: ['object', 'null'] },
      },
    },
    example: {
      chainId: 84532,
      blockNumber: '4',
      kind: 'eth-transfer',
      transaction: {
        from: '0x9B8AC4699047Cd5FBC5217d40bda6BEA79f17bbC',
        to: '0xfD5732Dc9B91C2D8383c7D8302A1BD9b517168BF',
        data: '0x',
        value: '1500000000000000000',
      },
      willRevert: false,
      revert: null,
      gasUnits: '21000',
      fees: {
        baseFeePerGas: { wei: '671741540', gwei: '0.67174154' },
        nextBaseFeePerGas: { wei: '591110478', gwei: '0.591110478' },
        gasPrice: { wei: '1591110478', gwei: '1.591110478' },
        tiers: {
          slow: {
            maxPriorityFeePerGas: { wei: '1000000000', gwei: '1' },
            maxFeePerGas: { wei: '2182220956', gwei: '2.182220956' },
            expectedFeePerGas: { wei: '1591110478', gwei: '1.591110478' },
          },
          standard: {
            maxPriorityFeePerGas: { wei: '1000000000', gwei: '1' },
            maxFeePerGas: { wei: '2182220956', gwei: '2.182220956' },
            expectedFeePerGas: { wei: '1591110478', gwei: '1.591110478' },
          },
          fast: {
            maxPriorityFeePerGas: { wei: '1000000000', gwei: '1' },
            maxFeePerGas: { wei: '2182220956', gwei: '2.182220956' },
            expectedFeePerGas: { wei: '1591110478', gwei: '1.591110478' },
          },
        },
      },
      cost: {
        slow: {
          expectedWei: '33413320038000',
          expectedEth: '0.000033413320038',
          maxWei: '45826640076000',
          maxEth: '0.000045826640076',
        },
        standard: {
          expectedWei: '33413320038000',
          expectedEth: '0.000033413320038',
          maxWei: '45826640076000',
          maxEth: '0.000045826640076',
        },
        fast: {
          expectedWei: '33413320038000',
          expectedEth: '0.000033413320038',
          maxWei: '45826640076000',
          maxEth: '0.000045826640076',
        },
      },
      l1DataFee: null,
      totalCost: {
        slow: {
          expectedWei: '33413320038000',
          expectedEth: '0.000033413320038',
          maxWei: '45826640076000',
          maxEth: '0.000045826640076',
        },
        standard: {
          expectedWei: '33413320038000',
          expectedEth: '0.000033413320038',
          maxWei: '45826640076000',
          maxEth: '0.000045826640076',
        },
        fast: {
          expectedWei: '33413320038000',
          expectedEth: '0.000033413320038',
          maxWei: '45826640076000',
          maxEth: '0.000045826640076',
        },
      },
      sender: {
        balanceWei: '999998718136257500947',
        balanceEth: '999.998718136257500947',
        affordable: { slow: true, standard: true, fast: true },
      },
      notes: ['not an OP Stack chain (no GasPriceOracle predeploy): no L1 data fee'],
      method:
        "eth_feeHistory over the last N blocks with reward percentiles 10/50/90; each tier's maxPriorityFeePerGas is the median, across the blocks that had transactions, of that percentile (slow 10th, standard…",
    },
  },
  // USDC on Base: balanceOf(0xd8dA…6045)
  example: {
    to: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    data: '0x70a08231000000000000000000000000d8da6bf26964af9d7eed9e03e53415d37aa96045',
  },
  timeoutMs: 20_000,
  async run(input, ctx) {
    const kind = input.kind ?? 'call'
    const present = (k: keyof Input) => input[k] !== undefined
    const onlyFor = (field: keyof Input, kinds: Input['kind'][]) => {
      if (present(field) && !kinds.includes(kind))
        throw new HandlerInputError(field, `${field} is not used with kind '${kind}'`)
    }
    onlyFor('data', ['call'])
    onlyFor('value', ['call'])
    onlyFor('token', ['erc20-transfer'])
    onlyFor('amount', ['eth-transfer', 'erc20-transfer'])
    if (kind !== 'call') {
      if (!present('from')) throw new HandlerInputError('from', `from is required with kind '${kind}'`)
      if (!present('amount')) throw new HandlerInputError('amount', `amount is required with kind '${kind}'`)
    }
    if (kind === 'erc20-transfer' && !present('token'))
      throw new HandlerInputError('token', "token is required with kind 'erc20-transfer'")

    const c = await chainClient(ctx, { what: 'evm-gas-estimator' })
    const { viem, client, read } = c
    const from = input.from ? parseAddress(viem, input.from, 'from') : undefined
    const to = parseAddress(viem, input.to, 'to')
    const notes: string[] = []
    let tx: { to: `0x${string}`; data?: `0x${string}`; value: bigint }
    if (kind === 'call') {
      const value = BigInt(input.value ?? '0')
      if (value >= 2n ** 256n) throw new HandlerInputError('value', 'value does not fit in uint256')
      tx = { to, data: (input.data as `0x${string}` | undefined) || undefined, value }
      if (!from) notes.push('no from given: the node simulated the call from the zero address')
    } else if (kind === 'eth-transfer') {
      // parseEther rounds digits past the 18th instead of refusing them
      if ((input.amount!.split('.')[1] ?? '').replace(/0+$/, '').length > 18)
        throw new HandlerInputError(
          'amount',
          "amount has more decimals than ETH's 18 (1 wei = 0.000000000000000001 ETH)",
        )
      tx = { to, value: viem.parseEther(input.amount!) }
    } else {
      const token = parseAddress(viem, input.token!, 'token')
      const code = await read('the token code', () => client.getCode({ address: token }))
      if (!code || code === '0x')
        throw new HandlerInputError('token', `token ${token} has no contract code on chain`, 422)
      const info = await readTokenInfo(c, token)
      if (info.decimals === null)
        throw new HandlerInputError(
          'token',
          `token ${token} does not answer decimals(), so amount cannot be converted`,
          422,
        )
      const amount = viem.parseUnits(input.amount!, info.decimals)
      if ((input.amount!.split('.')[1] ?? '').replace(/0+$/, '').length > info.decimals)
        throw new HandlerInputError('amount', `amount has more decimals than the token's ${info.decimals}`)
      tx = {
        to: token,
        data: viem.encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }),
        value: 0n,
      }
      notes.push(
        `ERC-20 transfer of ${input.amount} ${info.symbol ?? 'tokens'} (${amount} base units, ${info.decimals} decimals)`,
      )
    }

    const fees = await readFees(c, FEE_BLOCKS)
    const transaction = { from: from ?? null, to: tx.to, data: tx.data ?? '0x', value: tx.value.toString() }
    const base = { chainId: fees.chainId, blockNumber: fees.blockNumber.toString(), kind, transaction }
    const g = (x: bigint) => gwei(viem.formatGwei, x)
    const feesOut = {
      baseFeePerGas: fees.baseFeePerGas === null ? null : g(fees.baseFeePerGas),
      nextBaseFeePerGas: fees.nextBaseFeePerGas === null ? null : g(fees.nextBaseFeePerGas),
      gasPrice: g(fees.gasPrice),
      tiers: fees.tiers
        ? Object.fromEntries(
            TIERS.map(({ name }) => [
              name,
              {
                maxPriorityFeePerGas: g(fees.tiers![name].maxPriorityFeePerGas),
                maxFeePerGas: g(fees.tiers![name].maxFeePerGas),
                expectedFeePerGas: g(fees.tiers![name].expectedFeePerGas),
              },
            ]),
          )
        : null,
    }

    // some nodes (anvil) estimate a value transfer the sender cannot pay for; the balance decides
    const balance = from
      ? await read('the sender balance', () => client.getBalance({ address: from, blockNumber: fees.blockNumber }))
      : null
    if (balance !== null && tx.value > balance) {
      const r = {
        reason: `insufficient funds: the sender holds ${viem.formatEther(balance)} ETH, less than the ${viem.formatEther(tx.value)} ETH sent`,
        kind: 'insufficient-funds',
        data: null,
      }
      return {
        body: {
          ...base,
          willRevert: true,
          revert: r,
          gasUnits: null,
          fees: feesOut,
          cost: null,
          l1DataFee: null,
          totalCost: null,
          sender: { balanceWei: balance.toString(), balanceEth: viem.formatEther(balance), affordable: null },
          notes,
          method: FEE_METHOD,
        },
      }
    }
    const senderOut = (affordable: Record<string, boolean> | null) =>
      balance === null ? null : { balanceWei: balance.toString(), balanceEth: viem.formatEther(balance), affordable }

    let gas: bigint
    try {
      gas = await client.estimateGas({
        account: from,
        to: tx.to,
        data: tx.data,
        value: tx.value,
        blockNumber: fees.blockNumber,
      })
    } catch (err) {
      const r = revertFrom(viem, err, 'eth_estimateGas')
      if (r instanceof Error) throw r
      return {
        body: {
          ...base,
          willRevert: true,
          revert: r,
          gasUnits: null,
          fees: feesOut,
          cost: null,
          l1DataFee: null,
          totalCost: null,
          sender: senderOut(null),
          notes,
          method: FEE_METHOD,
        },
      }
    }

    // per-gas price of each tier; a chain without EIP-1559 has one price (eth_gasPrice) for all
    const perGas = (name: (typeof TIERS)[number]['name']) =>
      fees.tiers
        ? { expected: fees.tiers[name].expectedFeePerGas, max: fees.tiers[name].maxFeePerGas }
        : { expected: fees.gasPrice, max: fees.gasPrice }
    if (!fees.tiers) notes.push('this chain reports no base fee (no EIP-1559): every tier uses eth_gasPrice')

    let l1: bigint | null = null
    const oracleCode = await read('the GasPriceOracle code', () =>
      client.getCode({ address: GAS_PRICE_ORACLE, blockNumber: fees.blockNumber }),
    )
    if (oracleCode && oracleCode !== '0x') {
      const nonce = from
        ? await read('the sender nonce', () =>
            client.getTransactionCount({ address: from, blockNumber: fees.blockNumber }),
          )
        : 0
      const std = perGas('standard')
      const unsigned = viem.serializeTransaction({
        chainId: fees.chainId,
        type: 'eip1559',
        nonce,
        gas,
        to: tx.to,
        data: tx.data,
        value: tx.value,
        maxFeePerGas: std.max,
        maxPriorityFeePerGas: fees.tiers?.standard.maxPriorityFeePerGas ?? 0n,
      })
      try {
        l1 = await client.readContract({
          address: GAS_PRICE_ORACLE,
          abi: gasPriceOracleAbi,
          functionName: 'getL1Fee',
          args: [unsigned],
          blockNumber: fees.blockNumber,
        })
        notes.push(
          'l1DataFee: OP Stack GasPriceOracle.getL1Fee of the unsigned transaction (standard tier), charged on top of the execution cost',
        )
      } catch (err) {
        if (
          !(err instanceof viem.BaseError) ||
          !err.walk(
            (e) => e instanceof viem.ContractFunctionRevertedError || e instanceof viem.ContractFunctionZeroDataError,
          )
        )
          throw upstreamError(viem, err, 'the L1 data fee')
        notes.push(
          'a contract sits at the OP Stack GasPriceOracle address but getL1Fee failed: l1DataFee is not included',
        )
      }
    } else notes.push('not an OP Stack chain (no GasPriceOracle predeploy): no L1 data fee')

    const money = (wei: bigint) => ({ wei: wei.toString(), eth: viem.formatEther(wei) })
    const cost = Object.fromEntries(
      TIERS.map(({ name }) => {
        const p = perGas(name)
        return [
          name,
          {
            expectedWei: (gas * p.expected).toString(),
            expectedEth: viem.formatEther(gas * p.expected),
            maxWei: (gas * p.max).toString(),
            maxEth: viem.formatEther(gas * p.max),
          },
        ]
      }),
    )
    const totalCost = Object.fromEntries(
      TIERS.map(({ name }) => {
        const p = perGas(name)
        const e = gas * p.expected + (l1 ?? 0n)
        const m = gas * p.max + (l1 ?? 0n)
        return [
          name,
          {
            expectedWei: e.toString(),
            expectedEth: viem.formatEther(e),
            maxWei: m.toString(),
            maxEth: viem.formatEther(m),
          },
        ]
      }),
    )
    const affordable = Object.fromEntries(
      TIERS.map(({ name }) => [name, balance !== null && balance >= tx.value + gas * perGas(name).max + (l1 ?? 0n)]),
    )
    return {
      body: {
        ...base,
        willRevert: false,
        revert: null,
        gasUnits: gas.toString(),
        fees: feesOut,
        cost,
        l1DataFee: l1 === null ? null : money(l1),
        totalCost,
        sender: senderOut(affordable),
        notes,
        method: FEE_METHOD,
      },
    }
  },
})
