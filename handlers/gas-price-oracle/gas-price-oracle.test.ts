import t from 'tap'
import { createWalletClient, http, parseGwei, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { withDevnet } from '../../test/helpers/devnet.js'
import { evmClients, rpcStandIn } from '../../test/helpers/evm-chain.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

t.test('the example validates', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('fees from a real anvil with known tips', async (t) => {
  const devnet = await withDevnet(t)
  const c = await evmClients(devnet)
  const providers = { CHAIN_DATA_RPC_URL: devnet.rpcUrl }
  const senders = [
    devnet.accounts.relayers[1]!,
    devnet.accounts.relayers[2]!,
    devnet.accounts.demoPayer,
    devnet.accounts.receiver,
  ]
  const send = async (i: number, tipGwei: string) => {
    const w = createWalletClient({
      account: privateKeyToAccount(senders[i]!.privateKey),
      chain: devnet.chain,
      transport: http(devnet.rpcUrl),
    })
    return w.sendTransaction({
      to: c.account.address as Address,
      value: 1n,
      gas: 21_000n,
      maxFeePerGas: parseGwei('100'),
      maxPriorityFeePerGas: parseGwei(tipGwei),
    })
  }
  // one block with three equal-gas transfers tipping 1, 2 and 3 gwei, then one tipping 5 gwei
  // empty blocks first, so the window holds no setup transactions
  await c.test.mine({ blocks: 20 })
  await c.test.setAutomine(false)
  const hashes = [await send(0, '1'), await send(1, '2'), await send(2, '3')]
  await c.test.mine({ blocks: 1 })
  await send(3, '5')
  await c.test.mine({ blocks: 1 })
  await c.test.setAutomine(true)
  for (const hash of hashes) t.equal((await c.pub.getTransactionReceipt({ hash })).status, 'success')
  // two empty blocks: they count in the window but not in the tip medians
  await c.test.mine({ blocks: 2 })

  t.test('tiers are medians of the per-block percentiles', async (t) => {
    const out = okBody(await runInline(handler, { blocks: 10 }, { from: 'query', providers }))
    const head = await c.pub.getBlock({ blockTag: 'latest' })
    t.equal(out.chainId, devnet.chainId)
    t.equal(out.blockNumber, head.number.toString())
    t.equal(out.blockTime, new Date(Number(head.timestamp) * 1000).toISOString())
    t.equal(out.eip1559, true)
    t.equal(out.baseFeePerGas.wei, head.baseFeePerGas!.toString())
    t.equal(out.window.blocks, 10)
    t.equal(out.window.newestBlock, head.number.toString())
    t.equal(out.window.oldestBlock, (head.number - 9n).toString())
    t.equal(out.window.blocksWithTransactions, 2)
    // block A tips 1/2/3 (gas-weighted 10th/50th/90th), block B 5/5/5: medians (1+5)/2, (2+5)/2, (3+5)/2
    t.equal(out.tiers.slow.maxPriorityFeePerGas.gwei, '3')
    t.equal(out.tiers.standard.maxPriorityFeePerGas.gwei, '3.5')
    t.equal(out.tiers.fast.maxPriorityFeePerGas.gwei, '4')
    t.equal(out.tiers.fast.maxPriorityFeePerGas.wei, '4000000000')
    const next = BigInt(out.nextBaseFeePerGas.wei)
    t.equal(out.tiers.standard.maxFeePerGas.wei, (2n * next + parseGwei('3.5')).toString(), '2 × next base fee + tip')
    t.equal(out.tiers.standard.expectedFeePerGas.wei, (next + parseGwei('3.5')).toString())
    t.equal(out.gasPrice.wei, (await c.pub.getGasPrice()).toString())
    t.match(out.method, /eth_feeHistory/)

    // the predicted next base fee is what the next block really has
    await c.test.mine({ blocks: 1 })
    const mined = await c.pub.getBlock({ blockTag: 'latest' })
    t.equal(mined.baseFeePerGas!.toString(), out.nextBaseFeePerGas.wei, 'next base fee predicted right')
  })

  t.test('a window of only empty blocks gives a zero tip', async (t) => {
    const out = okBody(await runInline(handler, { blocks: 2 }, { from: 'query', providers }))
    t.equal(out.window.blocks, 2)
    t.equal(out.window.blocksWithTransactions, 0)
    t.equal(out.tiers.fast.maxPriorityFeePerGas.wei, '0')
    t.equal(out.tiers.fast.maxFeePerGas.wei, (2n * BigInt(out.nextBaseFeePerGas.wei)).toString())
  })

  t.test('bad input: 400 naming the field', async (t) => {
    t.match(await runInline(handler, { blocks: 0 }, { providers }), { ok: false, status: 400, field: 'blocks' })
    t.match(await runInline(handler, { blocks: 101 }, { providers }), { ok: false, status: 400, field: 'blocks' })
    t.match(await runInline(handler, { blocks: 'many' }, { from: 'query', providers }), {
      ok: false,
      status: 400,
      field: 'blocks',
    })
    t.match(await runInline(handler, { blocks: 5, extra: 1 }, { providers }), {
      ok: false,
      status: 400,
      field: 'extra',
    })
  })
})

t.test('a chain without EIP-1559: only eth_gasPrice', async (t) => {
  const node = await rpcStandIn((method) => {
    if (method === 'eth_chainId') return '0x38'
    if (method === 'eth_gasPrice') return '0x12a05f200'
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
    return { raw: 'no', status: 500 }
  })
  t.teardown(node.close)
  const out = okBody(await runInline(handler, {}, { providers: { CHAIN_DATA_RPC_URL: node.url } }))
  t.match(out, {
    chainId: 56,
    blockNumber: '16',
    eip1559: false,
    baseFeePerGas: null,
    tiers: null,
    gasPrice: { wei: '5000000000', gwei: '5' },
  })
  t.notOk(
    node.calls.some((c) => c.method === 'eth_feeHistory'),
    'no fee history asked',
  )
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, {}, { providers: {} }), {
    name: 'HandlerUpstreamError',
    code: 'upstream_not_configured',
    message: /CHAIN_DATA_RPC_URL/,
  })
  const down = runInline(handler, {}, { providers: { CHAIN_DATA_RPC_URL: 'http://127.0.0.1:1/secret-key' } })
  await t.rejects(down, { code: 'upstream_failed' })
  t.notMatch(String(await down.catch((e: Error) => e.message)), /secret-key|127\.0\.0\.1/)
  const garbage = await rpcStandIn(() => ({ raw: '<html>bad gateway</html>', status: 200 }))
  t.teardown(garbage.close)
  await t.rejects(runInline(handler, {}, { providers: { CHAIN_DATA_RPC_URL: garbage.url } }), {
    code: 'upstream_failed',
    message: /not JSON-RPC/,
  })
  const failing = await rpcStandIn(() => ({ raw: 'overloaded', status: 503 }))
  t.teardown(failing.close)
  const e = await runInline(handler, {}, { providers: { CHAIN_DATA_RPC_URL: failing.url } }).catch((e: Error) => e)
  t.match(e, { code: 'upstream_failed', message: /HTTP 503/ })
  t.notMatch((e as Error).message, /rpc-key-secret/)
})
