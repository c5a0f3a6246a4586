import { createServer } from 'node:http'
import t from 'tap'
import { getAddress, parseUnits, type Address } from 'viem'
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
  await c.test.mine({ blocks: 100 })
  const token = getAddress(await deploy(c, compiled.PlainToken!, ['Spread', 'SPR', 6, u('1000000')]))
  const contractHolder = getAddress(await deploy(c, compiled.Reverter!))
  const [a, b, d, e] = [stranger(), stranger(), stranger(), stranger()]
  await c.test.mine({ blocks: 50 })
  await write(c, token, abi, 'spray', [
    [a, b, contractHolder, d],
    [u('400000'), u('200000'), u('100000'), u('50000')],
  ])
  // b passes 20,000 on in a later block
  await c.test.impersonateAccount({ address: b })
  await c.test.setBalance({ address: b, value: 10n ** 18n })
  const hash = await c.wallet.writeContract({
    account: b,
    chain: devnet.chain,
    address: token,
    abi,
    functionName: 'transfer',
    args: [e, u('20000')],
  })
  await c.pub.waitForTransactionReceipt({ hash })
  // uncached: viem keeps a block number up to 4 s, and the deploy above polled for one
  const head = await c.pub.getBlockNumber({ cacheTime: 0 })

  t.test('the whole history: every holder, real balances and shares', async (t) => {
    const out = okBody(await run({ token, blocks: 1000, top: 10 }))
    t.equal(out.chainId, devnet.chainId)
    t.equal(out.blockNumber, head.toString())
    t.match(out.erc20, { name: 'Spread', symbol: 'SPR', decimals: 6, totalSupply: '1000000000000' })
    t.match(out.scan, {
      fromBlock: '0',
      toBlock: head.toString(),
      complete: true,
      stoppedBecause: null,
      transfers: 6,
      requests: 1,
    })
    t.match(out.scan.description, /Transfer logs in blocks 0–/)
    t.equal(out.addressesSeen, 6)
    t.equal(out.holdersInScannedRange, 6)
    t.same(
      out.topHolders.map((h: any) => [h.address, h.balanceFormatted, h.shareOfSupplyPercent]),
      [
        [a, '400000', 40],
        [c.account.address, '250000', 25],
        [b, '180000', 18],
        [contractHolder, '100000', 10],
        [d, '50000', 5],
        [e, '20000', 2],
      ],
    )
    t.same(
      out.topHolders.map((h: any) => h.type),
      ['eoa', 'eoa', 'eoa', 'contract', 'eoa', 'eoa'],
    )
    t.equal(out.topHolders[2].netFlowInRange, u('180000').toString())
    t.equal(out.top10SharePercent, 100)
    const two = okBody(await run({ token, blocks: 1000, top: 2 }))
    t.equal(two.topHolders.length, 2)
    t.equal(two.listedSharePercent, 65)
    t.equal(two.top10SharePercent, 100, 'top-10 share does not depend on how many are listed')
  })

  t.test('a recent range sees only the addresses active in it', async (t) => {
    const out = okBody(await run({ token, blocks: 1 }))
    t.match(out.scan, { fromBlock: head.toString(), toBlock: head.toString(), complete: true, transfers: 1 })
    t.equal(out.addressesSeen, 2)
    t.same(
      out.topHolders.map((h: any) => [h.address, h.balanceFormatted]),
      [
        [b, '180000'],
        [e, '20000'],
      ],
    )
    t.equal(out.topHolders[0].netFlowInRange, (-u('20000')).toString())
    t.equal(out.top10SharePercent, 20)
  })

  t.test('small chunks give the same answer; the request budget cuts a long scan short', async (t) => {
    const chunked = okBody(await run({ token, blocks: 60 }, { CHAIN_DATA_LOG_CHUNK_BLOCKS: '7' }))
    t.equal(chunked.scan.requests, 9)
    t.equal(chunked.holdersInScannedRange, 6)
    const cut = okBody(await run({ token, blocks: 100 }, { CHAIN_DATA_LOG_CHUNK_BLOCKS: '1' }))
    t.match(cut.scan, {
      complete: false,
      stoppedBecause: 'request-limit',
      requests: 60,
      fromBlock: (head - 59n).toString(),
      requestedFromBlock: (head - 99n).toString(),
    })
    t.match(cut.scan.description, /only: the scan .* stopped at its request-limit/)
  })

  t.test('a node that refuses large ranges: chunks are halved', async (t) => {
    const seen: Array<[number, number]> = []
    const proxy = createServer((req, res) => {
      let data = ''
      req.on('data', (x) => (data += x))
      req.on('end', async () => {
        const rpc = JSON.parse(data)
        if (rpc.method === 'eth_getLogs') {
          const { fromBlock, toBlock } = rpc.params[0]
          seen.push([Number(fromBlock), Number(toBlock)])
          if (Number(toBlock) - Number(fromBlock) + 1 > 10) {
            res.writeHead(200, { 'content-type': 'application/json' })
            return res.end(
              JSON.stringify({
                jsonrpc: '2.0',
                id: rpc.id,
                error: { code: -32005, message: 'query exceeds max block range 10' },
              }),
            )
          }
        }
        const r = await fetch(devnet.rpcUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: data,
        })
        res.writeHead(r.status, { 'content-type': 'application/json' })
        res.end(await r.text())
      })
    })
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
    t.teardown(() => new Promise<void>((r) => proxy.close(() => r())))
    const url = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`
    const out = okBody(
      await runInline(
        handler,
        { token, blocks: 60 },
        { providers: { CHAIN_DATA_RPC_URL: url, CHAIN_DATA_LOG_CHUNK_BLOCKS: '40' } },
      ),
    )
    t.equal(out.scan.complete, true)
    t.equal(out.holdersInScannedRange, 6)
    t.ok(
      seen.some(([x, y]) => y - x + 1 === 40),
      'tried 40',
    )
    t.ok(
      seen.some(([x, y]) => y - x + 1 === 10),
      'settled on 10',
    )
  })

  t.test('a token without decimals(): amounts stay in base units, no token-unit form is made up', async (t) => {
    const bare = compileSolidity({
      'Bare.sol': `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
contract NoDecimals {
  uint256 public totalSupply;
  mapping(address => uint256) public balanceOf;
  event Transfer(address indexed from, address indexed to, uint256 value);
  constructor(uint256 supply) { totalSupply = supply; balanceOf[msg.sender] = supply; emit Transfer(address(0), msg.sender, supply); }
}`,
    })
    const nd = getAddress(await deploy(c, bare.NoDecimals!, [12345n]))
    const out = okBody(await run({ token: nd, blocks: 5 }))
    t.match(out.erc20, { decimals: null, totalSupply: '12345', totalSupplyFormatted: null })
    t.same(
      out.topHolders.map((h: any) => [h.address, h.balance, h.balanceFormatted, h.shareOfSupplyPercent]),
      [[c.account.address, '12345', null, 100]],
    )
  })

  t.test('not a token, no contract, bad input', async (t) => {
    t.match(await run({ token: stranger() }), { ok: false, status: 422, field: 'token' })
    t.match(await run({ token: contractHolder }), { ok: false, status: 422, field: 'token', message: /totalSupply/ })
    t.match(await run({ token, blocks: 0 }), { ok: false, status: 400, field: 'blocks' })
    t.match(await run({ token, blocks: 100_001 }), { ok: false, status: 400, field: 'blocks' })
    t.match(await run({ token, top: 101 }), { ok: false, status: 400, field: 'top' })
    t.match(await run({ token: 'abc' }), { ok: false, status: 400, field: 'token' })
  })

  t.test('provider problems', async (t) => {
    await t.rejects(runInline(handler, { token }, { providers: {} }), { code: 'upstream_not_configured' })
    await t.rejects(runInline(handler, { token }, { providers: { CHAIN_DATA_RPC_URL: 'http://127.0.0.1:1/k' } }), {
      code: 'upstream_failed',
    })
    // a chain without Multicall3: a clear 502, not a list of unknown balances
    const mc = '0xcA11bde05977b3631167028862bE2a173976CA11' as Address
    const saved = (await c.pub.getCode({ address: mc }))!
    await c.test.setCode({ address: mc, bytecode: '0x' })
    t.teardown(() => c.test.setCode({ address: mc, bytecode: saved }))
    await t.rejects(run({ token, blocks: 5 }), { code: 'upstream_failed', message: /Multicall3/ })
  })
})
