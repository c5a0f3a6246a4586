import t from 'tap'
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts'
import { HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import { deployAavePoolStandIn } from '../../test/helpers/aave-pool-stand-in.js'
import { withDevnet } from '../../test/helpers/devnet.js'
import { compileSolidity, deploy, evmClients } from '../../test/helpers/evm-chain.js'
import { TOKENS_SOL } from '../../test/helpers/evm-contracts.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const wallet = () => privateKeyToAccount(generatePrivateKey()).address

// contracts that are not an Aave v3 Pool: an ERC-20 (reverts getUserAccountData: no such function),
// one that swallows every call (answers nothing) and one that answers a single word to anything
const NOT_POOLS_SOL = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
contract Sink { fallback() external {} }
contract OneWord { fallback(bytes calldata) external returns (bytes memory) { return abi.encode(uint256(7)); } }
`

t.test('against a real anvil with a stand-in Aave v3 Pool', async (t) => {
  const devnet = await withDevnet(t)
  const pool = await deployAavePoolStandIn(devnet)
  const providers = { WALLET_SCORE_RPC_URL: devnet.rpcUrl, WALLET_SCORE_AAVE_POOL: pool.address }
  const score = (address: string, extra: Record<string, string> = {}) =>
    runInline(handler, { address }, { from: 'query', providers: { ...providers, ...extra } })

  const healthy = wallet()
  const risky = wallet()
  const bystander = wallet()
  await pool.setAccount(healthy, { collateralUsd: 50_000, debtUsd: 5_000, availableUsd: 32_500, healthFactor: 8.25 })
  await pool.setAccount(risky, {
    collateralUsd: 5_000,
    debtUsd: 4_300,
    availableUsd: 0,
    healthFactor: 1.05,
    liquidationThresholdBps: 8600,
    ltvBps: 8000,
  })
  const first = await pool.liquidate(risky)
  const second = await pool.liquidate(risky, { debtToCover: 2_500_000n })
  await pool.liquidate(bystander)
  await pool.advanceDays(10)

  t.test('a healthy wallet scores low risk', async (t) => {
    const out = okBody(await score(healthy.toLowerCase()))
    t.equal(out.address, healthy, 'checksummed')
    t.equal(out.chainId, devnet.chainId)
    t.equal(out.pool, pool.address)
    // utilisation 5000 / 37500 × 25 = 3.33, a never-used wallet 5: 8.33
    t.equal(out.score, 8)
    t.equal(out.classification, 'low')
    t.match(out.account, {
      totalCollateralUsd: 50_000,
      totalDebtUsd: 5_000,
      availableBorrowsUsd: 32_500,
      healthFactor: 8.25,
      liquidationThresholdPercent: 82.5,
      ltvPercent: 80,
    })
    t.equal(out.account.raw.totalCollateralBase, '5000000000000')
    t.match(out.liquidations, { count: 0, events: [], daysSinceLast: null })
    t.match(out.profile, {
      position: 'borrower',
      leverage: 'conservative',
      liquidationHistory: 'none',
      activity: 'new',
    })
    t.match(out.activity, { transactionCount: 0, ethBalanceWei: '0' })
    t.equal(out.components.length, 5)
    for (const c of out.components) t.ok(c.explanation && typeof c.weight === 'number', `${c.name} is explained`)
  })

  t.test('health factor near 1 and past liquidations: high risk', async (t) => {
    const out = okBody(await score(risky))
    // HF (3 − 1.05) / 2 × 35 = 34.13, utilisation 25, 2 liquidations 13.33, 10 days ago 14.17, new wallet 5
    t.equal(out.score, 92)
    t.equal(out.classification, 'critical')
    t.equal(out.account.healthFactor, 1.05)
    t.equal(out.liquidations.count, 2)
    t.ok(Math.abs(out.liquidations.daysSinceLast - 10) < 0.01, `about 10 days: ${out.liquidations.daysSinceLast}`)
    t.same(
      out.liquidations.events.map((e: any) => e.transactionHash),
      [second, first],
      'newest first, the bystander not included',
    )
    t.match(out.liquidations.events[0], {
      debtToCover: '2500000',
      collateralAsset: devnet.usdcAddress,
      receiveAToken: false,
    })
    t.match(out.liquidations.events[0].timestamp, /^\d{4}-\d\d-\d\dT/)
    t.match(out.profile, {
      position: 'borrower',
      leverage: 'aggressive',
      liquidationHistory: 'repeated',
      liquidatableNow: false,
    })
    const c = Object.fromEntries(out.components.map((x: any) => [x.name, x]))
    t.equal(c.liquidationCount.value, 2)
    t.equal(c.healthFactor.risk, 0.975)
  })

  t.test('the log scan is bounded and chunked', async (t) => {
    const chunked = okBody(await score(risky, { WALLET_SCORE_LOG_CHUNK_BLOCKS: '1' }))
    t.equal(chunked.liquidations.count, 2, 'one-block chunks find the same events')
    const recent = okBody(await score(risky, { WALLET_SCORE_LOG_BLOCKS: '1' }))
    t.equal(recent.liquidations.count, 0, 'the liquidations are older than the one block scanned')
    t.equal(recent.liquidations.fromBlock, recent.liquidations.toBlock)
    t.ok(recent.score < 92)
  })

  t.test('a wallet with no position', async (t) => {
    const out = okBody(await score(wallet()))
    t.match(out, {
      score: 5,
      classification: 'low',
      account: { healthFactor: null, totalDebtUsd: 0 },
      profile: { position: 'none' },
    })
  })

  t.test('bad address: 400 naming the field', async (t) => {
    t.match(await score('0x123'), { ok: false, status: 400, field: 'address' })
    t.match(await score('vitalik.eth'), { ok: false, status: 400, field: 'address' })
    const bad = healthy.slice(0, -1) + (healthy.endsWith('a') ? 'B' : 'a')
    const mixed =
      '0x' +
      healthy
        .slice(2)
        .split('')
        .map((ch, i) => (i % 2 ? ch.toUpperCase() : ch.toLowerCase()))
        .join('')
    const wrongChecksum = mixed === healthy ? bad : mixed
    t.match(
      await score(wrongChecksum),
      { ok: false, status: 400, field: 'address' },
      'mixed case with a wrong checksum',
    )
    t.match(await runInline(handler, {}, { from: 'query', providers }), { ok: false, status: 400, field: 'address' })
  })

  t.test('provider problems: 503 unconfigured, 502 failed, no URL in the message', async (t) => {
    await t.rejects(runInline(handler, { address: healthy }, { from: 'query', providers: {} }), {
      name: 'HandlerUpstreamError',
      code: 'upstream_not_configured',
    })
    await t.rejects(
      runInline(handler, { address: healthy }, { from: 'query', providers: { WALLET_SCORE_RPC_URL: devnet.rpcUrl } }),
      { code: 'upstream_not_configured' },
    )
    const down = runInline(
      handler,
      { address: healthy },
      { from: 'query', providers: { ...providers, WALLET_SCORE_RPC_URL: 'http://127.0.0.1:1/secret-api-key' } },
    )
    await t.rejects(down, { code: 'upstream_failed' })
    const err = await down.catch((e: unknown) => e)
    t.ok(err instanceof HandlerUpstreamError)
    t.notMatch((err as Error).message, /secret-api-key|127\.0\.0\.1/, 'the RPC URL stays out of the message')
    await t.rejects(
      score(healthy, { WALLET_SCORE_AAVE_POOL: wallet() }),
      { code: 'upstream_failed', message: /does not answer as an Aave v3 Pool.*returned no data/ },
      'a pool address without a contract',
    )
  })

  // Issue #22: a pool setting aimed at another contract was answered "the chain RPC failed"
  t.test('a pool setting aimed at a contract that is no Aave v3 Pool says so', async (t) => {
    const c = await evmClients(devnet)
    const compiled = compileSolidity({ 'Tokens.sol': TOKENS_SOL, 'NotPools.sol': NOT_POOLS_SOL })
    const erc20 = await deploy(c, compiled.PlainToken!, ['Plain', 'PLN', 18, 10n ** 24n])
    const sink = await deploy(c, compiled.Sink!)
    const oneWord = await deploy(c, compiled.OneWord!)
    for (const [what, address, why] of [
      ['an ERC-20', erc20, /reverted getUserAccountData/],
      ['a contract answering nothing', sink, /returned no data/],
      ['a contract answering one word', oneWord, /not an Aave v3 account/],
    ] as const) {
      const err = await score(healthy, { WALLET_SCORE_AAVE_POOL: address }).catch((e: unknown) => e)
      t.match(
        err,
        {
          code: 'upstream_failed',
          message: /^WALLET_SCORE_AAVE_POOL \(0x[0-9a-fA-F]{40}\) does not answer as an Aave v3 Pool/,
        },
        what,
      )
      t.match((err as Error).message, why, what)
      t.notMatch((err as Error).message, /RPC failed/, what)
    }
  })
})
