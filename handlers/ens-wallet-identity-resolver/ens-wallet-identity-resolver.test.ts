import { createServer } from 'node:http'
import t from 'tap'
import { encodeAbiParameters, getAddress, namehash } from 'viem'
import { mainnet } from 'viem/chains'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { withDevnet } from '../../test/helpers/devnet.js'
import { compileSolidity, evmClients, write } from '../../test/helpers/evm-chain.js'
import { ENS_SOL } from '../../test/helpers/evm-contracts.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const compiled = compileSolidity({ 'Ens.sol': ENS_SOL })
const stranger = () => privateKeyToAccount(generatePrivateKey()).address
const UR = getAddress(mainnet.contracts.ensUniversalResolver.address)

t.test('the example validates', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('against anvil as chain 1 with a Universal Resolver stand-in at the address viem uses', async (t) => {
  const devnet = await withDevnet(t, { chainId: 1 })
  const c = await evmClients(devnet)
  await c.test.setCode({ address: UR, bytecode: compiled.UniversalResolverStandIn!.deployedBytecode })
  const abi = compiled.UniversalResolverStandIn!.abi
  const alice = stranger()
  const bob = stranger()
  const carol = stranger()
  await write(c, UR, abi, 'setAddr', [namehash('alice.eth'), alice])
  await write(c, UR, abi, 'setText', [namehash('alice.eth'), 'avatar', 'ipfs://QmAvatar'])
  await write(c, UR, abi, 'setText', [namehash('alice.eth'), 'com.github', 'alice-gh'])
  await write(c, UR, abi, 'setText', [namehash('alice.eth'), 'url', 'https://alice.example'])
  await write(c, UR, abi, 'setPrimary', [alice, 'alice.eth'])
  // bob claims alice.eth as primary name: not verified
  await write(c, UR, abi, 'setPrimary', [bob, 'alice.eth'])
  await write(c, UR, abi, 'setAddr', [namehash('nft.eth'), carol])
  await write(c, UR, abi, 'setText', [
    namehash('nft.eth'),
    'avatar',
    'eip155:1/erc721:0xBC4CA0EdA7647A8aB7C2061c2E118A18a936f13D/1234',
  ])

  // an offchain name: a CCIP-Read gateway answers with carol's address
  const gatewayCalls: string[] = []
  const gateway = createServer((req, res) => {
    let data = ''
    req.on('data', (x) => (data += x))
    req.on('end', () => {
      gatewayCalls.push(`${req.method} ${req.url} ${data}`)
      res.writeHead(200, { 'content-type': 'application/json' })
      // text(bytes32,string) gets a string, addr(bytes32) carol's address
      const asked = (JSON.parse(data) as { data: string }).data
      res.end(
        JSON.stringify({
          data: asked.startsWith('0x59d1d43c')
            ? encodeAbiParameters([{ type: 'string' }], ['https://carol.example'])
            : encodeAbiParameters([{ type: 'address' }], [carol]),
        }),
      )
    })
  })
  await new Promise<void>((r) => gateway.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => gateway.close(() => r())))
  await write(c, UR, abi, 'setOffchain', [
    namehash('carol.base.eth'),
    `http://127.0.0.1:${(gateway.address() as { port: number }).port}/ccip`,
  ])

  const providers = { ENS_RPC_URL: devnet.rpcUrl, IPFS_GATEWAY_URL: 'https://gw.example/ipfs/' }
  const run = (
    input: Record<string, unknown>,
    opts: { allowPrivateNetwork?: boolean; providers?: Record<string, string> } = {},
  ) =>
    runInline(handler, input, {
      providers: opts.providers ?? providers,
      allowPrivateNetwork: opts.allowPrivateNetwork ?? true,
    })

  t.test('name → address, records, avatar, and the primary name check', async (t) => {
    const out = okBody(await run({ query: 'Alice.eth' }))
    t.match(out, {
      kind: 'name',
      chainId: 1,
      name: 'alice.eth',
      address: alice,
      found: true,
      primaryName: 'alice.eth',
      primaryNameVerified: true,
    })
    t.equal(out.records['com.github'], 'alice-gh')
    t.equal(out.records.url, 'https://alice.example')
    t.equal(out.records.description, null)
    t.same(out.avatar, { record: 'ipfs://QmAvatar', kind: 'ipfs', url: 'https://gw.example/ipfs/QmAvatar', nft: null })
    t.match(out.notes.join(' '), /normalized Alice\.eth to alice\.eth/)
    const picked = okBody(await run({ query: 'alice.eth', records: ['url'] }))
    t.same(picked.records, { url: 'https://alice.example' })
  })

  t.test('address → verified primary name with its records', async (t) => {
    const out = okBody(await run({ query: alice.toLowerCase() }))
    t.match(out, {
      kind: 'address',
      address: alice,
      name: 'alice.eth',
      primaryName: 'alice.eth',
      primaryNameVerified: true,
      found: true,
    })
    t.equal(out.records['com.github'], 'alice-gh')
  })

  t.test('a reverse record that does not resolve back is not verified', async (t) => {
    const out = okBody(await run({ query: bob }))
    t.match(out, {
      kind: 'address',
      address: bob,
      name: null,
      primaryName: 'alice.eth',
      primaryNameVerified: false,
      found: false,
      records: {},
    })
    t.match(out.notes.join(' '), /resolves to 0x.*not to this address/)
    const none = okBody(await run({ query: stranger() }))
    t.match(none, { primaryName: null, primaryNameVerified: null, found: false })
  })

  t.test("unknown names, NFT avatars, and the primary name of a name's address", async (t) => {
    t.match(okBody(await run({ query: 'nobody.eth' })), { found: false, address: null, primaryName: null })
    const out = okBody(await run({ query: 'nft.eth' }))
    t.match(out, { address: carol, primaryName: null, primaryNameVerified: null })
    t.same(out.avatar.nft, {
      chainId: 1,
      standard: 'erc721',
      contract: '0xBC4CA0EdA7647A8aB7C2061c2E118A18a936f13D',
      tokenId: '1234',
    })
  })

  t.test('offchain names are followed through the guarded fetch', async (t) => {
    const out = okBody(await run({ query: 'carol.base.eth', records: ['url'] }))
    t.equal(out.address, carol)
    t.same(out.records, { url: 'https://carol.example' })
    t.ok(
      gatewayCalls.some((x) => x.startsWith('POST /ccip')),
      'the gateway got a POST',
    )
    const n = gatewayCalls.length
    const refused = okBody(await run({ query: 'carol.base.eth', records: ['url'] }, { allowPrivateNetwork: false }))
    t.equal(refused.address, null)
    t.match(refused.notes.join(' '), /gateway gave no answer: .*private, loopback or link-local/)
    t.equal(gatewayCalls.length, n, 'the internal gateway was not reached')
  })

  t.test('bad input: 400 naming the field', async (t) => {
    t.match(await run({ query: 'noname' }), { ok: false, status: 400, field: 'query' })
    t.match(await run({ query: 'bad..eth' }), { ok: false, status: 400, field: 'query' })
    t.match(await run({ query: 'a'.repeat(256) }), { ok: false, status: 400, field: 'query' })
    t.match(await run({ query: 'alice.eth', records: Array.from({ length: 21 }, (_, i) => `k${i}`) }), {
      ok: false,
      status: 400,
      field: 'records',
    })
    t.match(await run({ query: 'alice.eth', records: ['bad key'] }), { ok: false, status: 400, field: /records/ })
    t.match(await run({}), { ok: false, status: 400, field: 'query' })
  })

  t.test('provider problems', async (t) => {
    await t.rejects(runInline(handler, { query: 'alice.eth' }, { providers: {} }), {
      code: 'upstream_not_configured',
      message: /ENS_RPC_URL/,
    })
    await t.rejects(
      runInline(handler, { query: 'alice.eth' }, { providers: { ENS_RPC_URL: 'http://127.0.0.1:1/key' } }),
      { code: 'upstream_failed' },
    )
  })
})

t.test('a node that is not Ethereum mainnet is refused', async (t) => {
  const devnet = await withDevnet(t)
  await t.rejects(runInline(handler, { query: 'alice.eth' }, { providers: { ENS_RPC_URL: devnet.rpcUrl } }), {
    code: 'upstream_failed',
    message: /chain id 84532/,
  })
})
