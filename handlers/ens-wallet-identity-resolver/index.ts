import { chainClient, upstreamError, type ChainClient } from '../_shared/evm-client.js'
import { fetchPublicUrl, joinUrl, optionalSetting } from '../_shared/outbound.js'
import {
  defineHandler,
  HandlerInputError,
  HandlerUpstreamError,
  type HandlerContext,
} from '../../src/pool/handler-contract.js'

interface Input {
  query: string
  records?: string[]
}

const ENS_RPC_URL = 'ENS_RPC_URL'
/** ENSIP-5 global keys and the common service keys, read when the buyer names none */
const DEFAULT_RECORDS = [
  'avatar',
  'description',
  'display',
  'url',
  'email',
  'location',
  'header',
  'com.twitter',
  'com.github',
  'com.discord',
  'org.telegram',
]
const CCIP_MAX_BYTES = 256 * 1024
const CCIP_TIMEOUT_MS = 6_000

/**
 * ENS identity on Ethereum mainnet through ENS_RPC_URL: a name's address and text records, or an
 * address's primary name checked by forward resolution. viem's ENS actions go through the ENS
 * Universal Resolver; offchain names (ERC-3668 CCIP-Read, e.g. Basenames) are followed through
 * fetchPublicUrl, so a gateway on an internal address is refused.
 */
export default defineHandler<Input>({
  slug: 'ens-wallet-identity-resolver',
  description:
    'ENS identity: resolve a name (vitalik.eth) to its address and profile records (avatar, description, url, twitter, github, ...), or an address to its primary ENS name, verified by resolving that name forward again.',
  providers: [ENS_RPC_URL],
  timeoutMs: 25_000,
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['query'],
    properties: {
      query: {
        type: 'string',
        minLength: 3,
        maxLength: 255,
        description:
          "An ENS name (e.g. 'vitalik.eth', normalized per ENSIP-15) or a 0x address whose primary name is looked up.",
      },
      records: {
        type: 'array',
        maxItems: 20,
        uniqueItems: true,
        items: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._-]+$' },
        description: `Text record keys to read (at most 20). Default: ${DEFAULT_RECORDS.join(', ')}.`,
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ query, kind (name | address), chainId, blockNumber, name, address, found, primaryName, primaryNameVerified, records { key: value | null }, avatar { record, kind (url | ipfs | data | nft | other), url, nft { chainId, standard, contract, tokenId } } | null, notes[] }. ' +
      "For a name: address is its ETH address (null when unset or the name does not resolve: found false), primaryName is that address's own primary name. " +
      'For an address: primaryName is its reverse record, primaryNameVerified true only when that name resolves back to the same address; name and records are given only when verified. ' +
      'The avatar is not fetched: an ipfs:// avatar is given as a gateway URL (IPFS_GATEWAY_URL), an NFT avatar as its contract and token id.',
    schema: {
      type: 'object',
      properties: {
        query: { type: 'string' },
        kind: { type: 'string', enum: ['name', 'address'] },
        chainId: { type: 'integer' },
        name: { type: ['string', 'null'] },
        address: { type: ['string', 'null'] },
        found: { type: 'boolean' },
        primaryName: { type: ['string', 'null'] },
        primaryNameVerified: { type: ['boolean', 'null'] },
        records: { type: 'object' },
        avatar: { type: ['object', 'null'] },
        notes: { type: 'array' },
      },
    },
    example: {
      query: 'Alice.eth',
      chainId: 1,
      blockNumber: '11',
      kind: 'name',
      name: 'alice.eth',
      address: '0x36296360CEe20246a30AC330E6aDa99C616Cc9FE',
      found: true,
      primaryName: 'alice.eth',
      primaryNameVerified: true,
      records: {
        avatar: 'ipfs://QmAvatar',
        description: null,
        display: null,
        url: 'https://alice.example',
        email: null,
        location: null,
        header: null,
        'com.twitter': null,
        'com.github': 'alice-gh',
        'com.discord': null,
        'org.telegram': null,
      },
      avatar: { record: 'ipfs://QmAvatar', kind: 'ipfs', url: 'https://gw.example/ipfs/QmAvatar', nft: null },
      notes: ['normalized Alice.eth to alice.eth'],
    },
  },
  example: { query: 'vitalik.eth' },
  async run(input, ctx) {
    const notes: string[] = []
    const c = await chainClient(ctx, {
      setting: ENS_RPC_URL,
      what: 'ens-wallet-identity-resolver',
      ccipRequest: guardedCcipRequest(ctx, notes),
    })
    const { viem, client, read } = c
    const q = input.query.trim()
    const keys = input.records ?? DEFAULT_RECORDS
    const { mainnet } = await import('viem/chains')
    const { normalize } = await import('viem/ens')
    const universalResolverAddress = mainnet.contracts.ensUniversalResolver.address
    const head = await read('the latest block', () => client.getBlockNumber())
    const chainId = await read('the chain id', () => client.getChainId())
    if (chainId !== 1)
      throw new HandlerUpstreamError(
        'upstream_failed',
        `${ENS_RPC_URL} must be an Ethereum mainnet RPC (it answered chain id ${chainId})`,
      )
    const at = { blockNumber: head, universalResolverAddress }

    const resolve = (name: string) =>
      ens(c, `the address of ${name}`, () => client.getEnsAddress({ name, ...at }), notes)
    const texts = async (name: string) => {
      const values = await Promise.all(
        keys.map((key) => ens(c, `the ${key} record`, () => client.getEnsText({ name, key, ...at }), notes)),
      )
      return Object.fromEntries(keys.map((k, i) => [k, values[i] ?? null])) as Record<string, string | null>
    }
    const primaryOf = (address: `0x${string}`) =>
      ens(c, 'the primary name', () => client.getEnsName({ address, ...at }), notes)
    const base = { query: q, chainId, blockNumber: head.toString() }

    if (/^0x[0-9a-fA-F]{40}$/.test(q)) {
      const hex = q.slice(2)
      if (/[a-f]/.test(hex) && /[A-F]/.test(hex) && !viem.isAddress(q, { strict: true }))
        throw new HandlerInputError('query', 'query has mixed case but is not a valid EIP-55 checksum')
      const address = viem.getAddress(q)
      const primary = await primaryOf(address)
      let verified: boolean | null = null
      let records: Record<string, string | null> = {}
      if (primary) {
        const normalized = safeNormalize(normalize, primary)
        const back = normalized ? await resolve(normalized) : null
        verified = !!back && viem.isAddressEqual(back, address)
        if (verified) records = await texts(normalized!)
        else
          notes.push(
            `the reverse record names ${primary}, but that name resolves to ${back ?? 'nothing'}, not to this address: it is not a verified primary name`,
          )
      } else notes.push('this address has no primary ENS name (no reverse record)')
      return {
        body: {
          ...base,
          kind: 'address',
          name: verified ? primary : null,
          address,
          found: !!verified,
          primaryName: primary,
          primaryNameVerified: verified,
          records,
          avatar: avatarOf(records.avatar ?? null, ctx),
          notes,
        },
      }
    }

    if (!/\./.test(q))
      throw new HandlerInputError('query', 'query must be an ENS name with a dot (vitalik.eth) or a 0x address')
    const name = safeNormalize(normalize, q)
    if (!name) throw new HandlerInputError('query', 'query is not a valid ENS name (ENSIP-15 normalization failed)')
    if (name !== q) notes.push(`normalized ${q} to ${name}`)
    const address = await resolve(name)
    const records = await texts(name)
    const anyRecord = Object.values(records).some((v) => v !== null)
    let primary: string | null = null
    if (address) {
      primary = await primaryOf(address)
      if (primary !== name)
        notes.push(
          primary ? `the address's primary name is ${primary}, not ${name}` : 'the address has no primary name set',
        )
    } else
      notes.push(
        anyRecord
          ? 'the name has records but no ETH address set'
          : 'the name does not resolve (no resolver, or no address and no records)',
      )
    return {
      body: {
        ...base,
        kind: 'name',
        name,
        address,
        found: address !== null || anyRecord,
        primaryName: primary,
        primaryNameVerified: primary === null ? null : primary === name,
        records,
        avatar: avatarOf(records.avatar ?? null, ctx),
        notes,
      },
    }
  },
})

function safeNormalize(normalize: (name: string) => string, name: string): string | null {
  try {
    return normalize(name)
  } catch {
    return null
  }
}

/** One ENS read: the node's failures are 502; "no resolver", "no record" are null (viem already maps those). */
async function ens<T>(c: ChainClient, what: string, fn: () => Promise<T>, notes: string[]): Promise<T | null> {
  try {
    return await fn()
  } catch (err) {
    const { viem } = c
    if (err instanceof viem.BaseError && !err.walk((e) => e instanceof HandlerUpstreamError)) {
      if (err.walk((e) => e instanceof viem.ContractFunctionZeroDataError))
        throw new HandlerUpstreamError(
          'upstream_failed',
          'the ENS Universal Resolver is not deployed on the chain behind ENS_RPC_URL',
        )
      // an offchain lookup whose gateway failed or was refused (the note says why), or a resolver
      // reverting with an error viem does not map (wildcard resolvers): no answer
      if (
        err.walk((e) => (e as Error).name === 'OffchainLookupError' || e instanceof viem.ContractFunctionRevertedError)
      )
        return null
      // the node answered, but the resolver's answer could not be decoded
      if (!err.walk((e) => e instanceof viem.RpcRequestError)) {
        notes.push(`${what}: the resolver's answer could not be decoded`)
        return null
      }
    }
    throw upstreamError(c.viem, err, what)
  }
}

/** ERC-3668 gateway requests through fetchPublicUrl (internal addresses refused), at most 3 URLs, bounded in time and size. */
function guardedCcipRequest(ctx: HandlerContext, notes: string[]) {
  return async ({
    data,
    sender,
    urls,
  }: {
    data: `0x${string}`
    sender: `0x${string}`
    urls: readonly string[]
  }): Promise<`0x${string}`> => {
    let last = 'no gateway URL given'
    for (const url of urls.slice(0, 3)) {
      const target = url.replace('{sender}', sender.toLowerCase()).replace('{data}', data)
      const post = !url.includes('{data}')
      try {
        const r = await fetchPublicUrl(target, ctx, {
          field: 'query',
          method: post ? 'POST' : 'GET',
          headers: post ? { 'content-type': 'application/json' } : {},
          body: post ? JSON.stringify({ data, sender }) : undefined,
          timeoutMs: CCIP_TIMEOUT_MS,
          maxBytes: CCIP_MAX_BYTES,
          maxRedirects: 3,
        })
        const text = r.body.toString('utf8')
        let result: unknown = text.trim()
        if (String(r.headers['content-type'] ?? '').startsWith('application/json'))
          result = (JSON.parse(text) as { data?: unknown }).data
        if (r.status >= 400) last = `HTTP ${r.status}`
        else if (typeof result === 'string' && /^0x([0-9a-fA-F]{2})*$/.test(result)) return result as `0x${string}`
        else last = 'a malformed answer'
      } catch (err) {
        last = (err as Error).message
      }
    }
    notes.push(`an offchain (CCIP-Read) gateway gave no answer: ${last}`)
    throw new Error(`CCIP-Read gateway failed: ${last}`)
  }
}

/** Classifies an avatar record (ENSIP-12) without fetching it. */
function avatarOf(record: string | null, ctx: HandlerContext) {
  if (!record) return null
  const nft = /^eip155:(\d+)\/(erc721|erc1155):(0x[0-9a-fA-F]{40})\/(\d+)$/i.exec(record)
  if (nft)
    return {
      record,
      kind: 'nft',
      url: null,
      nft: { chainId: Number(nft[1]), standard: nft[2]!.toLowerCase(), contract: nft[3], tokenId: nft[4] },
    }
  if (/^https?:\/\//i.test(record)) return { record, kind: 'url', url: record, nft: null }
  const ipfs = /^ipfs:\/\/(?:ipfs\/)?(.+)$/i.exec(record)
  if (ipfs) {
    const gateway = optionalSetting(ctx, 'IPFS_GATEWAY_URL')
    return { record, kind: 'ipfs', url: gateway ? joinUrl(gateway, ipfs[1]!) : null, nft: null }
  }
  if (/^data:/i.test(record))
    return { record: record.length > 200 ? `${record.slice(0, 200)}…` : record, kind: 'data', url: null, nft: null }
  return { record, kind: 'other', url: null, nft: null }
}
