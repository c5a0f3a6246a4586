import { createServer } from 'node:http'
import t from 'tap'
import { concat, encodePacked, getAddress, keccak256, numberToHex, parseUnits, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { withDevnet } from '../../test/helpers/devnet.js'
import { compileSolidity, deploy, evmClients, write } from '../../test/helpers/evm-chain.js'
import { AIRDROP_SOL, TOKENS_SOL } from '../../test/helpers/evm-contracts.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const compiled = compileSolidity({ 'Tokens.sol': TOKENS_SOL, 'Airdrop.sol': AIRDROP_SOL })
const stranger = () => privateKeyToAccount(generatePrivateKey()).address

/** A Merkle tree as Uniswap's BalanceTree builds it: sorted-pair hashing, odd nodes carried up. */
function buildTree(entries: Array<{ account: string; amount: bigint }>) {
  const leaves = entries.map((e, index) =>
    keccak256(encodePacked(['uint256', 'address', 'uint256'], [BigInt(index), e.account as Hex, e.amount])),
  )
  const layers: Hex[][] = [leaves]
  while (layers[layers.length - 1]!.length > 1) {
    const prev = layers[layers.length - 1]!
    const next: Hex[] = []
    for (let i = 0; i < prev.length; i += 2) {
      const a = prev[i]!
      const b = prev[i + 1]
      next.push(b === undefined ? a : keccak256(BigInt(a) <= BigInt(b) ? concat([a, b]) : concat([b, a])))
    }
    layers.push(next)
  }
  const proof = (index: number) => {
    const out: Hex[] = []
    let i = index
    for (const layer of layers.slice(0, -1)) {
      const sibling = layer[i ^ 1]
      if (sibling !== undefined) out.push(sibling)
      i = Math.floor(i / 2)
    }
    return out
  }
  return { root: layers[layers.length - 1]![0]!, proof }
}

t.test('the example validates', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('against a real anvil with a MerkleDistributor', async (t) => {
  const devnet = await withDevnet(t)
  const c = await evmClients(devnet)
  const accounts = [stranger(), stranger(), stranger(), stranger(), stranger()]
  const entries = accounts.map((account, i) => ({ account, amount: parseUnits(String(100 * (i + 1)), 18) }))
  const tree = buildTree(entries)
  const token = getAddress(await deploy(c, compiled.PlainToken!, ['Drop', 'DRP', 18, parseUnits('1500', 18)]))
  const distributor = getAddress(await deploy(c, compiled.MerkleDistributorStandIn!, [token, tree.root]))
  await write(c, token, compiled.PlainToken!.abi, 'transfer', [distributor, parseUnits('1500', 18)])
  // account 1 claims
  await write(c, distributor, compiled.MerkleDistributorStandIn!.abi, 'claim', [
    1n,
    accounts[1],
    entries[1]!.amount,
    tree.proof(1),
  ])

  const list = {
    merkleRoot: tree.root,
    tokenTotal: numberToHex(parseUnits('1500', 18)),
    claims: Object.fromEntries(
      entries.map((e, i) => [e.account, { index: i, amount: numberToHex(e.amount), proof: tree.proof(i) }]),
    ),
  }
  const served: string[] = []
  const server = createServer((req, res) => {
    served.push(req.url!)
    if (req.url === '/claims.json') {
      res.writeHead(200, { 'content-type': 'application/json' })
      return res.end(JSON.stringify(list))
    }
    if (req.url === '/other.json') {
      res.writeHead(200, { 'content-type': 'application/json' })
      return res.end(JSON.stringify({ ...list, merkleRoot: '0x' + '11'.repeat(32) }))
    }
    if (req.url === '/blank-amount.json') {
      res.writeHead(200, { 'content-type': 'application/json' })
      return res.end(
        JSON.stringify({
          ...list,
          claims: { ...list.claims, [accounts[0]!]: { index: 0, amount: '', proof: tree.proof(0) } },
        }),
      )
    }
    if (req.url === '/garbage') {
      res.writeHead(200)
      return res.end('<html>')
    }
    res.writeHead(404)
    res.end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  const providers = { CHAIN_DATA_RPC_URL: devnet.rpcUrl }
  const run = (input: Record<string, unknown>, allowPrivateNetwork = true) =>
    runInline(handler, input, { providers, allowPrivateNetwork })

  t.test('a valid unclaimed claim given directly: claimable', async (t) => {
    const out = okBody(
      await run({
        distributor,
        account: accounts[3],
        claim: { index: 3, amount: entries[3]!.amount.toString(), proof: tree.proof(3) },
      }),
    )
    t.match(out, {
      chainId: devnet.chainId,
      distributor,
      account: accounts[3],
      merkleRoot: tree.root,
      proofValid: true,
      eligible: true,
      claimed: false,
      claimable: true,
    })
    t.match(out.token, { address: token, symbol: 'DRP', decimals: 18 })
    t.match(out.claim, { index: '3', amount: entries[3]!.amount.toString(), amountFormatted: '400', source: 'input' })
  })

  t.test('already claimed', async (t) => {
    const out = okBody(
      await run({
        distributor,
        account: accounts[1],
        claim: { index: '1', amount: numberToHex(entries[1]!.amount), proof: tree.proof(1) },
      }),
    )
    t.match(out, { eligible: true, claimed: true, claimable: false })
  })

  t.test('a proof for someone else, or a changed amount, is not valid', async (t) => {
    const other = okBody(
      await run({
        distributor,
        account: accounts[2],
        claim: { index: 3, amount: entries[3]!.amount.toString(), proof: tree.proof(3) },
      }),
    )
    t.match(other, { proofValid: false, eligible: false, claimable: false })
    t.match(other.notes.join(' '), /does not lead to the on-chain merkle root/)
    const more = okBody(
      await run({
        distributor,
        account: accounts[3],
        claim: { index: 3, amount: (entries[3]!.amount + 1n).toString(), proof: tree.proof(3) },
      }),
    )
    t.equal(more.eligible, false)
  })

  t.test('from the claims list', async (t) => {
    const out = okBody(
      await run({ distributor, account: accounts[4].toLowerCase(), claimsUrl: `${origin}/claims.json` }),
    )
    t.match(out, {
      account: accounts[4],
      eligible: true,
      claimed: false,
      claimable: true,
      claim: { index: '4', amountFormatted: '500', source: 'claims-list' },
    })
    t.match(out.list, { url: `${origin}/claims.json`, merkleRoot: tree.root, matchesOnChainRoot: true, claims: 5 })
    const absent = okBody(await run({ distributor, account: stranger(), claimsUrl: `${origin}/claims.json` }))
    t.match(absent, { claim: null, eligible: false, claimed: null, claimable: false })
    t.match(absent.notes.join(' '), /not in the claims list/)
    const wrong = okBody(await run({ distributor, account: accounts[0], claimsUrl: `${origin}/other.json` }))
    t.match(wrong, { list: { matchesOnChainRoot: false }, eligible: true })
    t.match(wrong.notes.join(' '), /different merkle root/)
  })

  t.test('claims list problems', async (t) => {
    t.match(await run({ distributor, account: accounts[0], claimsUrl: `${origin}/garbage` }), {
      ok: false,
      status: 422,
      field: 'claimsUrl',
    })
    t.match(await run({ distributor, account: accounts[0], claimsUrl: `${origin}/missing.json` }), {
      ok: false,
      status: 422,
      field: 'claimsUrl',
      message: /HTTP 404/,
    })
    // an empty amount is malformed, not an amount of 0
    t.match(await run({ distributor, account: accounts[0], claimsUrl: `${origin}/blank-amount.json` }), {
      ok: false,
      status: 422,
      field: 'claimsUrl',
      message: /malformed/,
    })
    const n = served.length
    t.match(await run({ distributor, account: accounts[0], claimsUrl: `${origin}/claims.json` }, false), {
      ok: false,
      status: 400,
      field: 'claimsUrl',
    })
    t.match(await run({ distributor, account: accounts[0], claimsUrl: 'http://localhost/claims.json' }, false), {
      ok: false,
      status: 400,
      field: 'claimsUrl',
    })
    t.equal(served.length, n, 'internal hosts not reached')
  })

  t.test('bad input', async (t) => {
    const claim = { index: 0, amount: '1', proof: [] }
    t.match(await run({ distributor, account: accounts[0] }), { ok: false, status: 400, field: 'claim' })
    t.match(await run({ distributor, account: accounts[0], claim, claimsUrl: `${origin}/claims.json` }), {
      ok: false,
      status: 400,
      field: 'claimsUrl',
    })
    t.match(await run({ distributor: stranger(), account: accounts[0], claim }), {
      ok: false,
      status: 422,
      field: 'distributor',
    })
    t.match(await run({ distributor: token, account: accounts[0], claim }), {
      ok: false,
      status: 422,
      field: 'distributor',
      message: /merkleRoot/,
    })
    t.match(await run({ distributor, account: accounts[0], claim: { ...claim, proof: ['0x12'] } }), {
      ok: false,
      status: 400,
      field: /claim\.proof/,
    })
    t.match(
      await run({
        distributor,
        account: accounts[0],
        claim: { ...claim, proof: Array(65).fill('0x' + '00'.repeat(32)) },
      }),
      { ok: false, status: 400, field: /claim\.proof/ },
    )
    t.match(await run({ distributor, account: accounts[0], claim: { ...claim, amount: '-1' } }), {
      ok: false,
      status: 400,
      field: /claim\.amount/,
    })
    t.match(await run({ distributor, account: accounts[0], claim: { ...claim, amount: '0x' + 'f'.repeat(65) } }), {
      ok: false,
      status: 400,
      field: /claim\.amount/,
    })
    t.match(await run({ distributor, account: 'x', claim }), { ok: false, status: 400, field: 'account' })
  })

  t.test('provider problems', async (t) => {
    const input = { distributor, account: accounts[0], claim: { index: 0, amount: '1', proof: [] } }
    await t.rejects(runInline(handler, input, { providers: {} }), { code: 'upstream_not_configured' })
    await t.rejects(runInline(handler, input, { providers: { CHAIN_DATA_RPC_URL: 'http://127.0.0.1:1/k' } }), {
      code: 'upstream_failed',
    })
  })
})
