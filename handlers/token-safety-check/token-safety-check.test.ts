import t from 'tap'
import { getAddress, keccak256, parseUnits, toFunctionSelector } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { minimalProxyTarget, pushedSelectors } from '../_shared/evm-bytecode.js'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { withDevnet } from '../../test/helpers/devnet.js'
import { compileSolidity, deploy, evmClients, write } from '../../test/helpers/evm-chain.js'
import { TOKENS_SOL } from '../../test/helpers/evm-contracts.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const compiled = compileSolidity({ 'Tokens.sol': TOKENS_SOL })
const stranger = () => privateKeyToAccount(generatePrivateKey()).address
const finding = (out: Record<string, any>, id: string) => out.findings.find((f: any) => f.id === id)

t.test('the example validates', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('selector scan reads opcodes, not data', async (t) => {
  const sel = toFunctionSelector('mint(address,uint256)').slice(2)
  t.ok(pushedSelectors(`0x63${sel}14`).has(`0x${sel}`), 'PUSH4 selector EQ')
  t.notOk(pushedSelectors(`0x7f${sel}${'00'.repeat(28)}`).has(`0x${sel}`), 'inside PUSH32 data')
  t.notOk(pushedSelectors(`0x60${sel}`).has(`0x${sel}`), 'a PUSH1 followed by bytes')
  t.equal(
    minimalProxyTarget('0x363d3d373d3d3d363d73bebebebebebebebebebebebebebebebebebebebe5af43d82803e903d91602b57fd5bf3'),
    '0xbebebebebebebebebebebebebebebebebebebebe',
  )
  t.equal(minimalProxyTarget('0x6080'), null)
})

t.test('against a real anvil', async (t) => {
  const devnet = await withDevnet(t)
  const c = await evmClients(devnet)
  const providers = { CHAIN_DATA_RPC_URL: devnet.rpcUrl }
  const check = (token: string) => runInline(handler, { token }, { from: 'query', providers })
  const plain = getAddress(await deploy(c, compiled.PlainToken!, ['Plain', 'PLN', 6, parseUnits('1000000', 6)]))
  const managed = getAddress(await deploy(c, compiled.ManagedToken!, ['Managed', 'MGD', 18, parseUnits('500', 18)]))

  t.test('a token without admin functions: low', async (t) => {
    const out = okBody(await check(plain))
    t.equal(out.token, plain)
    t.equal(out.chainId, devnet.chainId)
    t.match(out.contract, { exists: true })
    t.equal(out.contract.codeHash, keccak256((await c.pub.getCode({ address: plain }))!))
    t.same(out.erc20, {
      name: 'Plain',
      symbol: 'PLN',
      decimals: 6,
      totalSupply: '1000000000000',
      totalSupplyFormatted: '1000000',
      isErc20: true,
    })
    t.match(out.proxy, { isProxy: false, standard: null, implementation: null })
    t.equal(out.owner, null)
    t.same(out.functions, [])
    t.equal(out.riskLevel, 'low')
    t.match(out.honeypotCheck, /not performed/)
  })

  t.test('an owned token with mint, pause, blacklist and fee: high, with evidence', async (t) => {
    const out = okBody(await check(managed))
    t.same(out.owner, { function: 'owner()', address: c.account.address, renounced: false, isContract: false })
    const sigs = out.functions.map((f: any) => f.signature)
    for (const s of [
      'mint(address,uint256)',
      'pause()',
      'unpause()',
      'blacklist(address)',
      'setFee(uint256)',
      'owner()',
      'renounceOwnership()',
    ])
      t.ok(sigs.includes(s), `${s} found`)
    t.notOk(sigs.includes('upgradeTo(address)'))
    t.equal(out.functions.find((f: any) => f.signature === 'mint(address,uint256)').selector, '0x40c10f19')
    t.match(finding(out, 'can-mint'), {
      severity: 'high',
      evidence: /mint\(address,uint256\) \(0x40c10f19\) in the token bytecode; the owner 0x/,
    })
    t.match(finding(out, 'can-blacklist'), { severity: 'high' })
    t.match(finding(out, 'can-fee'), { severity: 'high' })
    t.match(finding(out, 'can-pause'), { severity: 'medium' })
    t.match(finding(out, 'owner-live'), { severity: 'low', evidence: new RegExp(c.account.address) })
    t.equal(out.riskLevel, 'high')
    t.equal(out.findings[0].severity, 'high', 'most severe first')
  })

  t.test('behind an EIP-1967 proxy: high, implementation and admin from the slots', async (t) => {
    const admin = stranger()
    const proxy = getAddress(await deploy(c, compiled.TestProxy!, [managed, admin]))
    const out = okBody(await check(proxy))
    t.match(out.proxy, { isProxy: true, standard: 'eip1967', implementation: managed, admin })
    t.ok(out.proxy.implementationCodeSize > 0)
    t.match(finding(out, 'upgradeable-proxy'), {
      severity: 'high',
      evidence: new RegExp(
        `0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc holds the implementation ${managed}`,
      ),
    })
    t.match(
      out.functions.find((f: any) => f.signature === 'upgradeTo(address)'),
      { foundIn: 'token' },
    )
    t.match(
      out.functions.find((f: any) => f.signature === 'mint(address,uint256)'),
      { foundIn: 'implementation' },
    )
    t.same(
      out.owner,
      {
        function: 'owner()',
        address: '0x0000000000000000000000000000000000000000',
        renounced: true,
        isContract: false,
      },
      'the proxy storage has no owner set',
    )
    t.equal(out.riskLevel, 'high')
  })

  t.test('renounced ownership lowers the admin findings', async (t) => {
    const other = getAddress(await deploy(c, compiled.ManagedToken!, ['Gone', 'GONE', 18, 1n]))
    await write(c, other, compiled.ManagedToken!.abi, 'renounceOwnership')
    const out = okBody(await check(other))
    t.match(out.owner, { renounced: true, address: '0x0000000000000000000000000000000000000000' })
    t.match(finding(out, 'can-mint'), { severity: 'medium', evidence: /renounced/ })
    t.match(finding(out, 'can-pause'), { severity: 'low' })
    t.ok(finding(out, 'owner-renounced'))
    t.equal(out.riskLevel, 'medium')
  })

  t.test('an EIP-1167 clone and a contract that is not a token', async (t) => {
    const clone = stranger()
    await c.test.setCode({
      address: clone,
      bytecode: `0x363d3d373d3d3d363d73${plain.slice(2).toLowerCase()}5af43d82803e903d91602b57fd5bf3`,
    })
    const out = okBody(await check(clone))
    t.match(out.proxy, { isProxy: true, standard: 'eip1167', implementation: plain.toLowerCase() })
    t.match(finding(out, 'minimal-proxy'), { severity: 'info' })
    const reverter = await deploy(c, compiled.Reverter!)
    const r = okBody(await check(reverter))
    t.match(r.erc20, { name: null, symbol: null, decimals: null, totalSupply: null, isErc20: false })
    t.match(finding(r, 'not-erc20'), { severity: 'medium' })
  })

  t.test('no contract: exists false, riskLevel null', async (t) => {
    const out = okBody(await check(stranger()))
    t.match(out, { contract: { exists: false, codeSize: 0 }, riskLevel: null, erc20: null, functions: [] })
  })

  t.test('bad input: 400 naming the field', async (t) => {
    t.match(await check('0x1234'), { ok: false, status: 400, field: 'token' })
    t.match(await runInline(handler, {}, { providers }), { ok: false, status: 400, field: 'token' })
    const mixed =
      '0x' +
      plain
        .slice(2)
        .split('')
        .map((ch) => (/[a-f]/.test(ch) ? ch.toUpperCase() : ch.toLowerCase()))
        .join('')
    if (mixed !== plain && /[a-f]/i.test(plain.slice(2)))
      t.match(await check(mixed), { ok: false, status: 400, field: 'token' })
  })

  t.test('provider problems', async (t) => {
    await t.rejects(runInline(handler, { token: plain }, { providers: {} }), { code: 'upstream_not_configured' })
    const down = runInline(
      handler,
      { token: plain },
      { providers: { CHAIN_DATA_RPC_URL: 'http://127.0.0.1:1/secret-key' } },
    )
    await t.rejects(down, { code: 'upstream_failed' })
    t.notMatch(String(await down.catch((e: Error) => e.message)), /secret-key/)
  })
})
