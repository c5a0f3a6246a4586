import { createServer } from 'node:http'
import t from 'tap'
import { getAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { withDevnet } from '../../test/helpers/devnet.js'
import { compileSolidity, deploy, evmClients, write } from '../../test/helpers/evm-chain.js'
import { NFTS_SOL, TOKENS_SOL } from '../../test/helpers/evm-contracts.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const compiled = compileSolidity({ 'Nfts.sol': NFTS_SOL, 'Tokens.sol': TOKENS_SOL })
const stranger = () => privateKeyToAccount(generatePrivateKey()).address

t.test('the example validates', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('against a real anvil, a metadata server and an IPFS gateway stand-in', async (t) => {
  const devnet = await withDevnet(t)
  const c = await evmClients(devnet)
  const requests: string[] = []
  const server = createServer((req, res) => {
    requests.push(req.url!)
    const send = (status: number, text: string) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(text)
    }
    if (req.url === '/meta/7.json')
      return send(
        200,
        JSON.stringify({
          name: 'Ape #7',
          image: 'ipfs://QmImage/7.png',
          attributes: [{ trait_type: 'Fur', value: 'Gold' }],
        }),
      )
    if (req.url === '/ipfs/QmMeta/9')
      return send(200, JSON.stringify({ name: 'Ape #9', image: 'https://img.example/9.png' }))
    if (req.url === `/erc1155/${(42).toString(16).padStart(64, '0')}.json`)
      return send(200, JSON.stringify({ name: 'Potion', decimals: 0 }))
    if (req.url === '/broken.json') return send(200, '{not json')
    if (req.url === '/redirect') {
      res.writeHead(302, { location: '/meta/7.json' })
      return res.end()
    }
    send(404, '{"error":"not found"}')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  const providers = { CHAIN_DATA_RPC_URL: devnet.rpcUrl, IPFS_GATEWAY_URL: `${origin}/ipfs/` }
  const run = (
    input: Record<string, unknown>,
    opts: { providers?: Record<string, string>; allowPrivateNetwork?: boolean } = {},
  ) =>
    runInline(handler, input, {
      providers: opts.providers ?? providers,
      allowPrivateNetwork: opts.allowPrivateNetwork ?? true,
    })

  const nft = getAddress(await deploy(c, compiled.TestNFT721!))
  const holder = stranger()
  const abi = compiled.TestNFT721!.abi
  await write(c, nft, abi, 'mint', [holder, 7n, `${origin}/meta/7.json`])
  await write(c, nft, abi, 'mint', [holder, 9n, 'ipfs://QmMeta/9'])
  const inline = { name: 'Inline #3', image: 'data:image/svg+xml;base64,PHN2Zy8+' }
  await write(c, nft, abi, 'mint', [
    holder,
    3n,
    `data:application/json;base64,${Buffer.from(JSON.stringify(inline)).toString('base64')}`,
  ])
  await write(c, nft, abi, 'mint', [holder, 4n, `${origin}/broken.json`])
  await write(c, nft, abi, 'mint', [holder, 5n, `${origin}/redirect`])
  await write(c, nft, abi, 'mint', [holder, 6n, 'ar://abc'])
  // raw JSON after ";utf8," as many contracts write it, with a "%" that is not an escape
  await write(c, nft, abi, 'mint', [
    holder,
    8n,
    'data:application/json;utf8,{"name":"Half #8","description":"50% of sales go to charity"}',
  ])

  t.test('ERC-721 over http(s): owner, names, metadata and the ipfs image through the gateway', async (t) => {
    const out = okBody(await run({ contract: nft, tokenId: '7' }))
    t.match(out, {
      chainId: devnet.chainId,
      contract: nft,
      tokenId: '7',
      standard: 'erc721',
      found: true,
      name: 'Test Apes',
      symbol: 'TAPE',
      owner: holder,
      tokenUri: `${origin}/meta/7.json`,
      metadataUrl: `${origin}/meta/7.json`,
      metadataError: null,
    })
    t.same(out.metadata.attributes, [{ trait_type: 'Fur', value: 'Gold' }])
    t.equal(out.image, 'ipfs://QmImage/7.png')
    t.equal(out.imageUrl, `${origin}/ipfs/QmImage/7.png`)
  })

  t.test('ipfs:// through the configured gateway; unset gateway says so', async (t) => {
    const out = okBody(await run({ contract: nft, tokenId: '9' }))
    t.equal(out.metadataUrl, `${origin}/ipfs/QmMeta/9`)
    t.equal(out.metadata.name, 'Ape #9')
    t.ok(requests.includes('/ipfs/QmMeta/9'), 'the gateway got the CID path')
    const none = okBody(
      await run({ contract: nft, tokenId: '9' }, { providers: { CHAIN_DATA_RPC_URL: devnet.rpcUrl } }),
    )
    t.match(none, { metadata: null, metadataError: /IPFS_GATEWAY_URL/ })
  })

  t.test('data: URIs are decoded inline', async (t) => {
    const out = okBody(await run({ contract: nft, tokenId: '3' }))
    t.same(out.metadata, inline)
    t.equal(out.metadataUrl, 'data:')
    t.equal(out.imageUrl, null, 'a data: image has no http form')
    const raw = okBody(await run({ contract: nft, tokenId: '8' }))
    t.same(
      raw.metadata,
      { name: 'Half #8', description: '50% of sales go to charity' },
      'unencoded JSON with a bare % is read as it is',
    )
    t.equal(raw.metadataError, null)
  })

  t.test('bad metadata, redirects, unsupported schemes, and skipping the fetch', async (t) => {
    t.match(okBody(await run({ contract: nft, tokenId: '4' })), { metadata: null, metadataError: /not valid JSON/ })
    t.match(okBody(await run({ contract: nft, tokenId: '5' })), {
      metadata: { name: 'Ape #7' },
      metadataUrl: `${origin}/meta/7.json`,
    })
    t.match(okBody(await run({ contract: nft, tokenId: '6' })), {
      metadata: null,
      metadataError: /unsupported URI scheme \(ar:\)/,
    })
    const n = requests.length
    t.match(okBody(await run({ contract: nft, tokenId: '7', fetchMetadata: false })), {
      metadata: null,
      metadataError: /not fetched/,
      tokenUri: `${origin}/meta/7.json`,
    })
    t.equal(requests.length, n, 'nothing fetched')
  })

  t.test('internal metadata hosts are refused unless the test switch is on', async (t) => {
    const n = requests.length
    const out = okBody(await run({ contract: nft, tokenId: '7' }, { allowPrivateNetwork: false }))
    t.match(out, { found: true, owner: holder, metadata: null, metadataError: /private, loopback or link-local/ })
    t.equal(requests.length, n, 'the server was not reached')
  })

  t.test('a token that does not exist: found false', async (t) => {
    t.match(okBody(await run({ contract: nft, tokenId: '1000' })), {
      found: false,
      owner: null,
      tokenUri: null,
      metadata: null,
      metadataError: /does not exist/,
    })
  })

  t.test('ERC-1155: {id} becomes 64 hex characters', async (t) => {
    const multi = getAddress(await deploy(c, compiled.TestNFT1155!, [`${origin}/erc1155/{id}.json`]))
    const out = okBody(await run({ contract: multi, tokenId: '42' }))
    t.match(out, {
      standard: 'erc1155',
      owner: null,
      name: null,
      symbol: null,
      tokenUri: `${origin}/erc1155/${'0'.repeat(62)}2a.json`,
      metadata: { name: 'Potion' },
    })
  })

  t.test('no ERC-165: read by whichever function answers', async (t) => {
    const bare = getAddress(await deploy(c, compiled.BareNFT!))
    const out = okBody(await run({ contract: bare, tokenId: '1' }))
    t.match(out, {
      standard: 'erc721',
      owner: '0x000000000000000000000000000000000000bEEF',
      metadata: { name: 'bare' },
    })
  })

  // Issue #22: an ERC-20 in auto mode was read as ERC-721 and answered "this token does not exist"
  t.test('a contract that is no NFT contract is 422 on contract, saying so', async (t) => {
    const erc20 = getAddress(await deploy(c, compiled.PlainToken!, ['Plain', 'PLN', 18, 10n ** 24n]))
    t.match(await run({ contract: erc20, tokenId: '1' }), {
      ok: false,
      status: 422,
      field: 'contract',
      message: /is not an NFT contract.*ERC-20/,
    })
    t.match(await run({ contract: erc20, tokenId: '1', standard: 'auto' }), {
      ok: false,
      status: 422,
      field: 'contract',
    })
    const other = getAddress(await deploy(c, compiled.Reverter!))
    t.match(await run({ contract: other, tokenId: '1' }), {
      ok: false,
      status: 422,
      field: 'contract',
      message: /is not an NFT contract: it declares neither ERC-721 nor ERC-1155/,
    })
    // a real ERC-721's missing token is still an answer, not a refusal
    t.match(okBody(await run({ contract: nft, tokenId: '1000' })), { standard: 'erc721', found: false })
  })

  t.test('bad input', async (t) => {
    t.match(await run({ contract: stranger(), tokenId: '1' }), { ok: false, status: 422, field: 'contract' })
    t.match(await run({ contract: nft, tokenId: '-1' }), { ok: false, status: 400, field: 'tokenId' })
    t.match(await run({ contract: nft, tokenId: '1'.repeat(79) }), { ok: false, status: 400, field: 'tokenId' })
    t.match(await run({ contract: nft, tokenId: (2n ** 256n).toString() }), {
      ok: false,
      status: 400,
      field: 'tokenId',
    })
    t.match(await run({ contract: nft }), { ok: false, status: 400, field: 'tokenId' })
    t.match(await run({ contract: nft, tokenId: '1', standard: 'erc20' }), {
      ok: false,
      status: 400,
      field: 'standard',
    })
  })

  t.test('provider problems', async (t) => {
    await t.rejects(runInline(handler, { contract: nft, tokenId: '7' }, { providers: {} }), {
      code: 'upstream_not_configured',
    })
    await t.rejects(
      runInline(
        handler,
        { contract: nft, tokenId: '7' },
        { providers: { CHAIN_DATA_RPC_URL: 'http://127.0.0.1:1/k' } },
      ),
      { code: 'upstream_failed' },
    )
    const out = okBody(
      await run(
        { contract: nft, tokenId: '9' },
        { providers: { CHAIN_DATA_RPC_URL: devnet.rpcUrl, IPFS_GATEWAY_URL: 'http://127.0.0.1:1/ipfs/' } },
      ),
    )
    t.match(
      out,
      { metadata: null, metadataError: /IPFS gateway could not be reached/ },
      'a gateway failure is reported, the chain data still given',
    )
  })
})
