import t from 'tap'
import { getAddress, isAddress, parseEther, parseUnits } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { TOKEN_LISTS } from '../_shared/evm-token-list.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { withDevnet } from '../../test/helpers/devnet.js'
import { compileSolidity, deploy, evmClients, write } from '../../test/helpers/evm-chain.js'
import { TOKENS_SOL } from '../../test/helpers/evm-contracts.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const compiled = compileSolidity({ 'Tokens.sol': TOKENS_SOL })
const stranger = () => privateKeyToAccount(generatePrivateKey()).address

t.test('the example validates; the built-in lists hold checksummed addresses', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
  for (const [id, list] of Object.entries(TOKEN_LISTS)) {
    for (const tk of list.tokens) t.ok(isAddress(tk.address, { strict: true }), `${id} ${tk.label} ${tk.address}`)
  }
})

t.test('against a real anvil (chain 84532: the Base Sepolia list)', async (t) => {
  const devnet = await withDevnet(t)
  const c = await evmClients(devnet)
  const providers = { CHAIN_DATA_RPC_URL: devnet.rpcUrl }
  const run = (input: Record<string, unknown>, from: 'body' | 'query' = 'body') =>
    runInline(handler, input, { providers, from })
  const payer = devnet.accounts.demoPayer.address
  const token = getAddress(await deploy(c, compiled.PlainToken!, ['Eight', 'EGT', 8, parseUnits('1000', 8)]))
  await write(c, token, compiled.PlainToken!.abi, 'transfer', [payer, parseUnits('12.5', 8)])

  t.test('built-in list: USDC held, WETH has no contract on this chain', async (t) => {
    const out = okBody(await run({ address: payer }))
    t.equal(out.address, payer)
    t.equal(out.chainId, 84532)
    t.equal(out.native.symbol, 'ETH')
    t.equal(out.native.balanceWei, (await c.pub.getBalance({ address: payer })).toString())
    t.same(out.tokens, [
      {
        address: devnet.usdcAddress,
        name: 'USDC',
        symbol: 'USDC',
        decimals: 6,
        balance: '1000',
        balanceBaseUnits: '1000000000',
        source: 'built-in',
      },
    ])
    t.match(out.unreadable, [
      { address: '0x4200000000000000000000000000000000000006', source: 'built-in', reason: /no ERC-20/ },
    ])
    t.match(out.builtInList, { chain: 'Base Sepolia', count: 2 })
    t.equal(out.prices, null)
    t.match(out.pricesNote, /not included/)
  })

  t.test('named tokens, with and without the built-in list', async (t) => {
    const nobody = stranger()
    const out = okBody(await run({ address: payer, tokens: [token, nobody] }))
    t.same(out.tokens, [
      {
        address: token,
        name: 'Eight',
        symbol: 'EGT',
        decimals: 8,
        balance: '12.5',
        balanceBaseUnits: '1250000000',
        source: 'input',
      },
    ])
    t.match(out.unreadable, [{ address: nobody, source: 'input' }])
    t.equal(out.builtInList, null)
    const both = okBody(await run({ address: payer, tokens: [token], includeBuiltInTokens: true }))
    t.same(
      both.tokens.map((x: any) => x.symbol),
      ['EGT', 'USDC'],
    )
    const viaQuery = okBody(await run({ address: payer, tokens: JSON.stringify([token]) }, 'query'))
    t.equal(viaQuery.tokens[0].balance, '12.5')
  })

  t.test('zero balances: hidden for the built-in list unless asked, always shown for named tokens', async (t) => {
    const empty = stranger()
    await c.test.setBalance({ address: empty, value: parseEther('0.25') })
    const out = okBody(await run({ address: empty }))
    t.same(out.tokens, [])
    t.equal(out.native.balance, '0.25')
    const shown = okBody(await run({ address: empty, hideZero: false }))
    t.match(shown.tokens, [{ symbol: 'USDC', balance: '0' }])
    const named = okBody(await run({ address: empty, tokens: [token] }))
    t.match(named.tokens, [{ symbol: 'EGT', balance: '0', source: 'input' }])
  })

  t.test('bad input: 400 naming the field', async (t) => {
    t.match(await run({ address: 'me' }), { ok: false, status: 400, field: 'address' })
    t.match(await run({ address: payer, tokens: ['0x1'] }), { ok: false, status: 400, field: /tokens/ })
    t.match(await run({ address: payer, tokens: Array.from({ length: 51 }, stranger) }), {
      ok: false,
      status: 400,
      field: 'tokens',
    })
    t.match(await run({ address: payer, tokens: [token, token] }), { ok: false, status: 400, field: 'tokens' })
  })

  t.test('provider problems', async (t) => {
    await t.rejects(runInline(handler, { address: payer }, { providers: {} }), { code: 'upstream_not_configured' })
    await t.rejects(
      runInline(handler, { address: payer }, { providers: { CHAIN_DATA_RPC_URL: 'http://127.0.0.1:1/k' } }),
      { code: 'upstream_failed' },
    )
  })
})

t.test('a chain without a built-in list', async (t) => {
  const devnet = await withDevnet(t, { chainId: 31337 })
  const providers = { CHAIN_DATA_RPC_URL: devnet.rpcUrl }
  const payer = devnet.accounts.demoPayer.address
  t.match(await runInline(handler, { address: payer }, { providers }), { ok: false, status: 422, field: 'tokens' })
  const out = okBody(await runInline(handler, { address: payer, tokens: [devnet.usdcAddress] }, { providers }))
  t.equal(out.native.symbol, null, '31337 is not known to use ether')
  t.match(out.tokens, [{ balance: '1000', source: 'input' }])
})
