import t from 'tap'
import {
  encodeFunctionData,
  getAddress,
  formatEther,
  parseEther,
  parseUnits,
  serializeTransaction,
  type Address,
} from 'viem'
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { withDevnet } from '../../test/helpers/devnet.js'
import { compileSolidity, deploy, evmClients, rpcStandIn } from '../../test/helpers/evm-chain.js'
import { TOKENS_SOL } from '../../test/helpers/evm-contracts.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const compiled = compileSolidity({ 'Tokens.sol': TOKENS_SOL })
const stranger = () => privateKeyToAccount(generatePrivateKey()).address

t.test('the example validates', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('against a real anvil', async (t) => {
  const devnet = await withDevnet(t)
  const c = await evmClients(devnet)
  const providers = { CHAIN_DATA_RPC_URL: devnet.rpcUrl }
  const run = (input: Record<string, unknown>) => runInline(handler, input, { providers })
  const reverter = await deploy(c, compiled.Reverter!)
  const token = getAddress(await deploy(c, compiled.PlainToken!, ['Test Token', 'TT', 18, parseUnits('1000', 18)]))
  const me = c.account.address
  const someone = stranger()

  t.test('an ETH transfer costs 21000 gas, priced at every tier', async (t) => {
    const out = okBody(await run({ kind: 'eth-transfer', from: me, to: someone, amount: '1.5' }))
    t.equal(out.chainId, devnet.chainId)
    t.equal(out.willRevert, false)
    t.equal(out.gasUnits, '21000')
    t.same(out.transaction, { from: me, to: someone, data: '0x', value: parseEther('1.5').toString() })
    for (const tier of ['slow', 'standard', 'fast']) {
      const fee = out.fees.tiers[tier]
      t.equal(out.cost[tier].maxWei, (21000n * BigInt(fee.maxFeePerGas.wei)).toString(), `${tier}: gas × maxFeePerGas`)
      t.equal(out.cost[tier].expectedWei, (21000n * BigInt(fee.expectedFeePerGas.wei)).toString())
      t.equal(out.cost[tier].maxEth, formatEther(21000n * BigInt(fee.maxFeePerGas.wei)))
    }
    t.equal(out.l1DataFee, null, 'anvil is not an OP Stack chain')
    t.same(out.totalCost, out.cost)
    t.match(out.notes.join(' '), /no GasPriceOracle/)
  })

  t.test('a call that does work: the estimate grows with the work', async (t) => {
    const small = okBody(
      await run({
        to: reverter,
        from: me,
        data: encodeFunctionData({ abi: compiled.Reverter!.abi, functionName: 'store', args: [1n] }),
      }),
    )
    const big = okBody(
      await run({
        to: reverter,
        from: me,
        data: encodeFunctionData({ abi: compiled.Reverter!.abi, functionName: 'store', args: [10n] }),
      }),
    )
    t.equal(small.willRevert, false)
    // nine more fresh storage slots at 22,100 gas each (EIP-2929 SSTORE from zero, cold)
    const diff = BigInt(big.gasUnits) - BigInt(small.gasUnits)
    t.ok(diff >= 9n * 22_100n && diff < 9n * 30_000n, `difference ${diff}`)
    const direct = await c.pub.estimateGas({
      account: me,
      to: reverter,
      data: encodeFunctionData({ abi: compiled.Reverter!.abi, functionName: 'store', args: [10n] }),
    })
    t.equal(big.gasUnits, direct.toString(), 'same as eth_estimateGas')
  })

  t.test('reverts are answers with the decoded reason', async (t) => {
    const abi = compiled.Reverter!.abi
    const s = okBody(await run({ to: reverter, data: encodeFunctionData({ abi, functionName: 'failString' }) }))
    t.match(s, {
      willRevert: true,
      gasUnits: null,
      cost: null,
      revert: { kind: 'error-string', reason: 'nope: not allowed' },
    })
    t.ok(s.fees.tiers, 'the fees are still given')
    t.match(s.notes.join(' '), /zero address/)
    const p = okBody(await run({ to: reverter, data: encodeFunctionData({ abi, functionName: 'divide', args: [0n] }) }))
    t.match(p.revert, { kind: 'panic', reason: /0x12.*division/ })
    const x = okBody(await run({ to: reverter, data: encodeFunctionData({ abi, functionName: 'failCustom' }) }))
    const selector = encodeFunctionData({ abi, functionName: 'failCustom' }) // not the error selector
    t.match(x.revert, { kind: 'custom-error', reason: /selector 0x/ })
    t.not(x.revert.data.slice(0, 10), selector)
    t.equal(x.revert.data.length, 2 + 8 + 64, 'Custom(uint256) data')
  })

  t.test('an ERC-20 transfer builds the calldata from the token decimals', async (t) => {
    const out = okBody(await run({ kind: 'erc20-transfer', from: me, token, to: someone, amount: '2.25' }))
    t.equal(out.willRevert, false)
    t.equal(out.transaction.to, token)
    t.equal(
      out.transaction.data,
      encodeFunctionData({
        abi: compiled.PlainToken!.abi,
        functionName: 'transfer',
        args: [someone, parseUnits('2.25', 18)],
      }),
    )
    t.ok(Number(out.gasUnits) > 21_000 && Number(out.gasUnits) < 100_000, out.gasUnits)
    t.match(out.notes.join(' '), /2250000000000000000 base units, 18 decimals/)
    const broke = okBody(await run({ kind: 'erc20-transfer', from: someone, token, to: me, amount: '1' }))
    t.match(broke, { willRevert: true, revert: { reason: 'ERC20: transfer amount exceeds balance' } })
    t.match(
      await run({ kind: 'erc20-transfer', from: me, token: someone, to: me, amount: '1' }),
      { ok: false, status: 422, field: 'token' },
      'no contract there',
    )
    t.match(await run({ kind: 'erc20-transfer', from: me, token, to: me, amount: '1.0000000000000000001' }), {
      ok: false,
      status: 400,
      field: 'amount',
    })
  })

  t.test('an ETH transfer the sender cannot afford', async (t) => {
    const out = okBody(await run({ kind: 'eth-transfer', from: someone, to: me, amount: '1' }))
    t.equal(out.willRevert, true)
    t.match(out.revert, { kind: 'insufficient-funds', reason: /holds 0 ETH, less than the 1 ETH/ })
    t.match(out.sender, { balanceWei: '0' })
    const poor = okBody(await run({ kind: 'eth-transfer', from: me, to: someone, amount: '1' }))
    t.equal(poor.sender.balanceWei, (await c.pub.getBalance({ address: me })).toString())
    t.same(poor.sender.affordable, { slow: true, standard: true, fast: true })
  })

  t.test('on an OP Stack chain the L1 data fee is added', async (t) => {
    await c.test.setCode({
      address: '0x420000000000000000000000000000000000000F',
      bytecode: compiled.GasPriceOracleStandIn!.deployedBytecode,
    })
    t.teardown(() => c.test.setCode({ address: '0x420000000000000000000000000000000000000F', bytecode: '0x' }))
    const out = okBody(await run({ kind: 'eth-transfer', from: me, to: someone, amount: '1' }))
    const nonce = await c.pub.getTransactionCount({ address: me })
    const std = out.fees.tiers.standard
    const unsigned = serializeTransaction({
      chainId: devnet.chainId,
      type: 'eip1559',
      nonce,
      gas: 21000n,
      to: someone as Address,
      value: parseEther('1'),
      maxFeePerGas: BigInt(std.maxFeePerGas.wei),
      maxPriorityFeePerGas: BigInt(std.maxPriorityFeePerGas.wei),
    })
    const l1 = BigInt((unsigned.length - 2) / 2) * 1000n
    t.equal(out.l1DataFee.wei, l1.toString(), 'the stand-in charged 1000 wei per byte of the unsigned transaction')
    t.equal(out.totalCost.fast.maxWei, (BigInt(out.cost.fast.maxWei) + l1).toString())
  })

  t.test('bad input: 400 naming the field', async (t) => {
    t.match(await run({ to: '0x12' }), { ok: false, status: 400, field: 'to' })
    t.match(await run({ kind: 'eth-transfer', to: someone, amount: '1' }), { ok: false, status: 400, field: 'from' })
    t.match(await run({ kind: 'eth-transfer', from: me, to: someone }), { ok: false, status: 400, field: 'amount' })
    t.match(await run({ kind: 'erc20-transfer', from: me, to: someone, amount: '1' }), {
      ok: false,
      status: 400,
      field: 'token',
    })
    t.match(await run({ kind: 'call', to: someone, amount: '1' }), { ok: false, status: 400, field: 'amount' })
    t.match(await run({ kind: 'eth-transfer', from: me, to: someone, amount: '1', data: '0x00' }), {
      ok: false,
      status: 400,
      field: 'data',
    })
    // 19 decimals: parseEther would round it to 0 wei and estimate a different transaction
    t.match(await run({ kind: 'eth-transfer', from: me, to: someone, amount: '0.0000000000000000001' }), {
      ok: false,
      status: 400,
      field: 'amount',
    })
    t.match(await run({ kind: 'eth-transfer', from: me, to: someone, amount: '1.0000000000000000005' }), {
      ok: false,
      status: 400,
      field: 'amount',
    })
    t.match(await run({ to: someone, data: '0x0' }), { ok: false, status: 400, field: 'data' })
    t.match(await run({ to: someone, data: '0x' + '00'.repeat(70_000) }), { ok: false, status: 400, field: 'data' })
    t.match(await run({ to: someone, value: '-1' }), { ok: false, status: 400, field: 'value' })
    t.match(await run({ to: someone, value: (2n ** 256n).toString() }), { ok: false, status: 400, field: 'value' })
    t.match(await run({ kind: 'swap', to: someone }), { ok: false, status: 400, field: 'kind' })
    const mixed =
      '0x' +
      someone
        .slice(2)
        .toLowerCase()
        .replace(/[a-f]/, (ch) => ch.toUpperCase())
    if (mixed !== someone) t.match(await run({ to: mixed }), { ok: false, status: 400, field: 'to' }, 'bad checksum')
  })
})

t.test('provider problems', async (t) => {
  const input = { to: stranger() }
  await t.rejects(runInline(handler, input, { providers: {} }), { code: 'upstream_not_configured' })
  const down = runInline(handler, input, { providers: { CHAIN_DATA_RPC_URL: 'http://127.0.0.1:1/secret-key' } })
  await t.rejects(down, { code: 'upstream_failed' })
  // a node that fails eth_estimateGas with a non-execution error is a 502, not a revert
  const node = await rpcStandIn((method) => {
    if (method === 'eth_chainId') return '0x1'
    if (method === 'eth_gasPrice') return '0x1'
    if (method === 'eth_getBlockByNumber')
      return {
        number: '0x10',
        hash: '0x' + '11'.repeat(32),
        timestamp: '0x6553f100',
        transactions: [],
        gasUsed: '0x0',
        gasLimit: '0x1c9c380',
        baseFeePerGas: null,
      }
    return { raw: JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'method not found' } }) }
  })
  t.teardown(node.close)
  await t.rejects(runInline(handler, input, { providers: { CHAIN_DATA_RPC_URL: node.url } }), {
    code: 'upstream_failed',
    message: /eth_estimateGas/,
  })
})
