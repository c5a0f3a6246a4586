import t from 'tap'
import { encodeFunctionData, getAddress, parseEther, parseUnits, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { withDevnet } from '../../test/helpers/devnet.js'
import { compileSolidity, deploy, evmClients, write } from '../../test/helpers/evm-chain.js'
import { TOKENS_SOL } from '../../test/helpers/evm-contracts.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const compiled = compileSolidity({ 'Tokens.sol': TOKENS_SOL })
const stranger = () => privateKeyToAccount(generatePrivateKey()).address
const u = (x: string) => parseUnits(x, 6)

t.test('the example validates', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('against a real anvil', async (t) => {
  const devnet = await withDevnet(t)
  const c = await evmClients(devnet)
  const providers = { CHAIN_DATA_RPC_URL: devnet.rpcUrl }
  const run = (input: Record<string, unknown>, extra: Record<string, string> = {}) =>
    runInline(handler, input, { providers: { ...providers, ...extra } })
  const abi = compiled.PlainToken!.abi
  const token = getAddress(await deploy(c, compiled.PlainToken!, ['Whale', 'WHL', 6, u('10000000')]))
  const [a, b, d] = [stranger(), stranger(), stranger()]
  const big1 = (await write(c, token, abi, 'transfer', [a, u('500000')])).transactionHash
  await write(c, token, abi, 'transfer', [b, u('99999.999999')])
  await c.test.mine({ blocks: 10 })
  const r = await write(c, token, abi, 'spray', [
    [d, a, b],
    [u('100000'), u('5'), u('2000000')],
  ])
  // uncached: viem keeps a block number up to 4 s, and the deploy above polled for one
  const head = await c.pub.getBlockNumber({ cacheTime: 0 })
  const headBlock = await c.pub.getBlock({ blockNumber: head })

  t.test('token transfers at or above the threshold, newest first', async (t) => {
    const out = okBody(await run({ token, minAmount: '100000', blocks: 100 }))
    t.equal(out.chainId, devnet.chainId)
    t.match(out.asset, { type: 'erc20', address: token, symbol: 'WHL', decimals: 6 })
    t.same(out.threshold, { amount: '100000', baseUnits: '100000000000' })
    t.equal(out.count, 4)
    t.same(
      out.transfers.map((x: any) => [x.to, x.amount, x.kind]),
      [
        [b, '2000000', 'transfer'],
        [d, '100000', 'transfer'],
        [a, '500000', 'transfer'],
        [c.account.address, '10000000', 'mint'],
      ],
    )
    t.match(out.transfers[0], {
      transactionHash: r.transactionHash,
      blockNumber: head.toString(),
      from: c.account.address,
      amountBaseUnits: '2000000000000',
      time: new Date(Number(headBlock.timestamp) * 1000).toISOString(),
    })
    t.ok(out.transfers[0].logIndex > out.transfers[1].logIndex, 'same transaction: later log first')
    t.equal(out.transfers[2].transactionHash, big1)
    t.match(out.scan, { toBlock: head.toString(), complete: true, stoppedBecause: null })
    t.equal(BigInt(out.scan.fromBlock), head >= 99n ? head - 99n : 0n)
    t.match(out.method, /eth_getLogs/)
  })

  t.test('a fractional threshold counts base units exactly', async (t) => {
    const out = okBody(await run({ token, minAmount: '99999.999999', blocks: 100 }))
    t.equal(out.count, 5)
    t.match(await run({ token, minAmount: '1.0000001' }), { ok: false, status: 400, field: 'minAmount' })
  })

  t.test('limit stops the scan once the newest blocks hold enough', async (t) => {
    const out = okBody(
      await run({ token, minAmount: '100000', blocks: 100, limit: 2 }, { CHAIN_DATA_LOG_CHUNK_BLOCKS: '1' }),
    )
    t.same(
      out.transfers.map((x: any) => x.amount),
      ['2000000', '100000'],
    )
    t.match(out.scan, { complete: false, stoppedBecause: 'result-limit', fromBlock: head.toString(), requests: 1 })
    t.match(out.scan.description, /older blocks .* were not scanned/)
  })

  t.test('a range too recent to hold them', async (t) => {
    const out = okBody(await run({ token, minAmount: '400000', blocks: 5 }))
    t.same(
      out.transfers.map((x: any) => x.amount),
      ['2000000'],
      'the 500000 transfer is older than the range',
    )
    t.equal(out.scan.fromBlock, (head - 4n).toString())
  })

  t.test('native ETH transfers', async (t) => {
    const whale = await c.wallet.sendTransaction({ to: a, value: parseEther('250') })
    await c.pub.waitForTransactionReceipt({ hash: whale })
    const small = await c.wallet.sendTransaction({ to: b, value: parseEther('1') })
    await c.pub.waitForTransactionReceipt({ hash: small })
    const call = await c.wallet.sendTransaction({
      to: token,
      value: 0n,
      data: encodeFunctionData({ abi, functionName: 'transfer', args: [d, 1n] }) as Hex,
    })
    await c.pub.waitForTransactionReceipt({ hash: call })
    const out = okBody(await run({ minAmount: '100', blocks: 5 }))
    t.match(out.asset, { type: 'native', symbol: 'ETH', decimals: 18 })
    t.equal(out.count, 1)
    t.match(out.transfers[0], {
      transactionHash: whale,
      from: c.account.address,
      to: a,
      amount: '250',
      logIndex: null,
      contractCall: false,
    })
    const all = okBody(await run({ minAmount: '0.5', blocks: 5 }))
    t.same(
      all.transfers.map((x: any) => x.amount),
      ['1', '250'],
      'newest first; the zero-value call is not a transfer',
    )
    t.match(all.scan, { complete: true, requests: 5 })
    t.match(await run({ minAmount: '1', blocks: 51 }), { ok: false, status: 400, field: 'blocks' })
  })

  t.test('bad input and a token that is not there', async (t) => {
    t.match(await run({ token: stranger(), minAmount: '1' }), { ok: false, status: 422, field: 'token' })
    t.match(await run({ token }), { ok: false, status: 400, field: 'minAmount' })
    t.match(await run({ token, minAmount: '-5' }), { ok: false, status: 400, field: 'minAmount' })
    t.match(await run({ token, minAmount: '1e6' }), { ok: false, status: 400, field: 'minAmount' })
    t.match(await run({ token, minAmount: '1', limit: 0 }), { ok: false, status: 400, field: 'limit' })
    t.match(await run({ token, minAmount: '1', blocks: 50_001 }), { ok: false, status: 400, field: 'blocks' })
    t.match(await run({ token: '0xzz', minAmount: '1' }), { ok: false, status: 400, field: 'token' })
  })

  t.test('provider problems', async (t) => {
    await t.rejects(runInline(handler, { minAmount: '1' }, { providers: {} }), { code: 'upstream_not_configured' })
    await t.rejects(
      runInline(handler, { minAmount: '1' }, { providers: { CHAIN_DATA_RPC_URL: 'http://127.0.0.1:1/k' } }),
      { code: 'upstream_failed' },
    )
  })
})
