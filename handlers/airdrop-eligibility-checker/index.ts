import { addressSchema, chainClient, CHAIN_DATA_RPC_URL, parseAddress, upstreamError } from '../_shared/evm-client.js'
import { answeredWithoutValue, readTokenInfo } from '../_shared/evm-erc20.js'
import { fetchPublicUrl } from '../_shared/outbound.js'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

interface Input {
  distributor: string
  account: string
  claim?: { index: number | string; amount: string; proof: string[] }
  claimsUrl?: string
}

const MAX_LIST_BYTES = 16 * 1024 * 1024
const LIST_TIMEOUT_MS = 15_000

// Uniswap MerkleDistributor interface (github.com/Uniswap/merkle-distributor, contracts/interfaces/IMerkleDistributor.sol)
const distributorAbi = [
  { type: 'function', name: 'token', stateMutability: 'view', inputs: [], outputs: [{ type: 'address' }] },
  { type: 'function', name: 'merkleRoot', stateMutability: 'view', inputs: [], outputs: [{ type: 'bytes32' }] },
  {
    type: 'function',
    name: 'isClaimed',
    stateMutability: 'view',
    inputs: [{ name: 'index', type: 'uint256' }],
    outputs: [{ type: 'bool' }],
  },
] as const

/**
 * Airdrop eligibility against a Merkle distributor in Uniswap's MerkleDistributor style on the
 * configured chain (Base in production): the wallet's claim (given, or found in a claims list in
 * Uniswap's JSON format) is checked against the on-chain merkleRoot, and isClaimed says whether
 * it was already claimed.
 */
export default defineHandler<Input>({
  slug: 'airdrop-eligibility-checker',
  description:
    "Checks a wallet's airdrop claim against a Merkle distributor contract (Uniswap MerkleDistributor interface): verifies the proof against the on-chain merkle root and reports eligible, already claimed and the amount. Give the claim, or the URL of the claims list (Uniswap's JSON format).",
  providers: [CHAIN_DATA_RPC_URL],
  timeoutMs: 30_000,
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['distributor', 'account'],
    properties: {
      distributor: addressSchema('The Merkle distributor contract (merkleRoot(), isClaimed(uint256), token()).'),
      account: addressSchema('The wallet whose eligibility is checked.'),
      claim: {
        type: 'object',
        additionalProperties: false,
        required: ['index', 'amount', 'proof'],
        description: "The wallet's claim from the airdrop's published list: index, amount and proof.",
        properties: {
          index: {
            type: ['integer', 'string'],
            minimum: 0,
            pattern: '^(0x[0-9a-fA-F]{1,64}|[0-9]{1,78})$',
            description: 'Leaf index (a number, or a decimal or 0x hex string).',
          },
          amount: {
            type: 'string',
            pattern: '^(0x[0-9a-fA-F]{1,64}|[0-9]{1,78})$',
            description: "Amount in the token's base units, decimal or 0x hex (the claims list uses hex).",
          },
          proof: {
            type: 'array',
            maxItems: 64,
            items: { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$' },
            description: 'Merkle proof: up to 64 bytes32 hex values.',
          },
        },
      },
      claimsUrl: {
        type: 'string',
        format: 'uri',
        maxLength: 2048,
        description:
          "URL of the airdrop's claims list in Uniswap's format ({ merkleRoot, tokenTotal, claims: { address: { index, amount, proof } } }), at most 16 MB. Used when claim is not given.",
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ chainId, blockNumber, distributor, account, token { address, name, symbol, decimals }, merkleRoot (on chain), claim { index, amount, amountFormatted, proof, source (input | claims-list) } | null, ' +
      "proofValid, eligible (the proof proves this account's leaf against the on-chain root), claimed (isClaimed(index)), claimable (eligible and not claimed), " +
      'list { url, merkleRoot, matchesOnChainRoot, claims } | null, notes[] }. Leaf: keccak256(abi.encodePacked(uint256 index, address account, uint256 amount)); proof pairs hashed in sorted order, as MerkleDistributor does.',
    schema: {
      type: 'object',
      properties: {
        chainId: { type: 'integer' },
        distributor: { type: 'string' },
        account: { type: 'string' },
        merkleRoot: { type: 'string' },
        claim: { type: ['object', 'null'] },
        proofValid: { type: ['boolean', 'null'] },
        eligible: { type: 'boolean' },
        claimed: { type: ['boolean', 'null'] },
        claimable: { type: 'boolean' },
        list: { type: ['object', 'null'] },
        notes: { type: 'array' },
      },
    },
    example: {
      chainId: 84532,
      blockNumber: '18723456',
      distributor: '0x10A63C80FBa1b6FFA185238E05Cf98f215Dcc9a0',
      account: '0x46FcA6E8AE000854b043127046B7235EC18Ad4BD',
      token: { address: '0x6e4061C30Ca37701f990e12985f8B5445BA5d89d', name: 'Drop', symbol: 'DRP', decimals: 18 },
      merkleRoot: '0xaec60cebbf639030ed42fac77cd003763d5f2529c75764bf2df3ec007ad7415d',
      claim: {
        index: '3',
        amount: '400000000000000000000',
        amountFormatted: '400',
        proof: [
          '0xa716854c1e1bfe2e779754c9168c3c3675cd7fa7a91c6f7600237dea3deb3de8',
          '0x71c8ffb4d4273639bc4bed8e58759094f8108e24e0f87904941d65e0dc00308d',
          '0xfab7be1eb9a3fc9a062b85e52ed953471b9a380a19610b4ca3047ad1d4cf0ea2',
        ],
        source: 'input',
      },
      proofValid: true,
      eligible: true,
      claimed: false,
      claimable: true,
      list: null,
      notes: [],
    },
  },
  // the shape of a call; this distributor is Uniswap's UNI airdrop on Ethereum mainnet (on Base, name one deployed there)
  example: {
    distributor: '0x090D4613473dEE047c3f2706764f49E0821D256e',
    account: '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045',
    claim: { index: 0, amount: '0x1', proof: ['0x0000000000000000000000000000000000000000000000000000000000000000'] },
  },
  async run(input, ctx) {
    if (!input.claim && !input.claimsUrl)
      throw new HandlerInputError('claim', 'give claim (index, amount, proof) or claimsUrl')
    if (input.claim && input.claimsUrl) throw new HandlerInputError('claimsUrl', 'give claim or claimsUrl, not both')
    const c = await chainClient(ctx, { what: 'airdrop-eligibility-checker' })
    const { viem, client, read } = c
    const distributor = parseAddress(viem, input.distributor, 'distributor')
    const account = parseAddress(viem, input.account, 'account')
    const notes: string[] = []
    const head = await read('the latest block', () => client.getBlockNumber())
    const [chainId, code] = await Promise.all([
      read('the chain id', () => client.getChainId()),
      read('the distributor code', () => client.getCode({ address: distributor, blockNumber: head })),
    ])
    if (!code || code === '0x')
      throw new HandlerInputError(
        'distributor',
        `${distributor} has no contract code on this chain (id ${chainId})`,
        422,
      )
    const view = async <T>(
      functionName: 'token' | 'merkleRoot' | 'isClaimed',
      args: readonly unknown[] = [],
    ): Promise<T | null> => {
      try {
        return (await client.readContract({
          address: distributor,
          abi: distributorAbi,
          functionName,
          args: args as never,
          blockNumber: head,
        })) as T
      } catch (err) {
        if (answeredWithoutValue(c, err)) return null
        throw upstreamError(viem, err, `${functionName}()`)
      }
    }
    const [root, tokenAddress] = await Promise.all([view<`0x${string}`>('merkleRoot'), view<`0x${string}`>('token')])
    if (!root)
      throw new HandlerInputError(
        'distributor',
        `${distributor} does not answer merkleRoot(): not a MerkleDistributor-style contract`,
        422,
      )
    const info = tokenAddress ? await readTokenInfo(c, tokenAddress, head) : null
    const token = tokenAddress
      ? { address: tokenAddress, name: info!.name, symbol: info!.symbol, decimals: info!.decimals }
      : null
    if (!tokenAddress) notes.push('the distributor does not answer token(): amounts are in base units only')

    let claim: { index: bigint; amount: bigint; proof: `0x${string}`[]; source: 'input' | 'claims-list' } | null = null
    let list: Record<string, unknown> | null = null
    if (input.claim) {
      const index = toBig(input.claim.index, 'claim.index')
      claim = {
        index,
        amount: toBig(input.claim.amount, 'claim.amount'),
        proof: input.claim.proof as `0x${string}`[],
        source: 'input',
      }
    } else {
      const r = await fetchPublicUrl(input.claimsUrl!, ctx, {
        field: 'claimsUrl',
        timeoutMs: LIST_TIMEOUT_MS,
        maxBytes: MAX_LIST_BYTES,
        headers: { accept: 'application/json' },
      })
      if (r.status >= 400) throw new HandlerInputError('claimsUrl', `the claims list answered HTTP ${r.status}`, 422)
      if (r.truncated)
        throw new HandlerInputError(
          'claimsUrl',
          `the claims list is larger than ${MAX_LIST_BYTES / 1024 / 1024} MB; give this wallet's claim instead`,
          422,
        )
      let parsed: {
        merkleRoot?: unknown
        claims?: Record<string, { index?: unknown; amount?: unknown; proof?: unknown }>
      }
      try {
        parsed = JSON.parse(r.body.toString('utf8'))
      } catch {
        throw new HandlerInputError('claimsUrl', 'the claims list is not JSON', 422)
      }
      if (!parsed || typeof parsed !== 'object' || !parsed.claims || typeof parsed.claims !== 'object')
        throw new HandlerInputError('claimsUrl', "the claims list is not in Uniswap's format (no claims object)", 422)
      const entries = Object.entries(parsed.claims)
      const mine = entries.find(([k]) => k.toLowerCase() === account.toLowerCase())?.[1]
      const listRoot = typeof parsed.merkleRoot === 'string' ? parsed.merkleRoot : null
      list = {
        url: r.finalUrl,
        merkleRoot: listRoot,
        matchesOnChainRoot: listRoot ? listRoot.toLowerCase() === root.toLowerCase() : null,
        claims: entries.length,
      }
      if (listRoot && listRoot.toLowerCase() !== root.toLowerCase())
        notes.push(
          "the claims list was made for a different merkle root than the distributor holds: it is not this airdrop's list (or not its current one)",
        )
      if (mine) {
        const proof =
          Array.isArray(mine.proof) && mine.proof.every((p) => typeof p === 'string' && /^0x[0-9a-fA-F]{64}$/.test(p))
            ? (mine.proof as `0x${string}`[])
            : null
        const index = typeof mine.index === 'number' || typeof mine.index === 'string' ? safeBig(mine.index) : null
        const amount = typeof mine.amount === 'string' || typeof mine.amount === 'number' ? safeBig(mine.amount) : null
        if (proof === null || index === null || amount === null || proof.length > 64)
          throw new HandlerInputError(
            'claimsUrl',
            "this account's entry in the claims list is malformed (index, amount, proof)",
            422,
          )
        claim = { index, amount, proof, source: 'claims-list' }
      } else notes.push('the account is not in the claims list')
    }

    let proofValid: boolean | null = null
    let claimed: boolean | null = null
    if (claim) {
      const leaf = viem.keccak256(
        viem.encodePacked(['uint256', 'address', 'uint256'], [claim.index, account, claim.amount]),
      )
      let h: `0x${string}` = leaf
      for (const p of claim.proof)
        h = viem.keccak256(BigInt(h) <= BigInt(p) ? viem.concat([h, p]) : viem.concat([p, h]))
      proofValid = h.toLowerCase() === root.toLowerCase()
      if (!proofValid)
        notes.push('the proof does not lead to the on-chain merkle root for this account, index and amount')
      claimed = await view<boolean>('isClaimed', [claim.index])
      if (claimed === null) notes.push('isClaimed(index) gave no answer')
    }
    const eligible = proofValid === true
    const decimals = token?.decimals ?? null
    return {
      body: {
        chainId,
        blockNumber: head.toString(),
        distributor,
        account,
        token,
        merkleRoot: root,
        claim: claim
          ? {
              index: claim.index.toString(),
              amount: claim.amount.toString(),
              amountFormatted: decimals === null ? null : viem.formatUnits(claim.amount, decimals),
              proof: claim.proof,
              source: claim.source,
            }
          : null,
        proofValid,
        eligible,
        claimed,
        claimable: eligible && claimed === false,
        list,
        notes,
      },
    }
  },
})

function safeBig(v: string | number): bigint | null {
  // BigInt('') and BigInt('  ') are 0n: an empty amount or index is malformed, not zero
  if (typeof v === 'string' && !/^(0x[0-9a-fA-F]+|[0-9]+)$/.test(v.trim())) return null
  try {
    const b = BigInt(v)
    return b >= 0n && b < 2n ** 256n ? b : null
  } catch {
    return null
  }
}

function toBig(v: string | number, field: string): bigint {
  const b = safeBig(v)
  if (b === null) throw new HandlerInputError(field, `${field} must be a non-negative integer below 2^256`)
  return b
}
