import {
  addressSchema,
  chainClient,
  CHAIN_DATA_RPC_URL,
  parseAddress,
  upstreamError,
  type ChainClient,
} from '../_shared/evm-client.js'
import { answeredWithoutValue } from '../_shared/evm-erc20.js'
import { callProvider, fetchPublicUrl, joinUrl, optionalSetting } from '../_shared/outbound.js'
import {
  defineHandler,
  HandlerInputError,
  HandlerUpstreamError,
  type HandlerContext,
} from '../../src/pool/handler-contract.js'

interface Input {
  contract: string
  tokenId: string
  standard?: 'auto' | 'erc721' | 'erc1155'
  fetchMetadata?: boolean
}

const MAX_METADATA_BYTES = 1024 * 1024
const METADATA_TIMEOUT_MS = 8_000

const nftAbi = [
  {
    type: 'function',
    name: 'supportsInterface',
    stateMutability: 'view',
    inputs: [{ name: 'id', type: 'bytes4' }],
    outputs: [{ type: 'bool' }],
  },
  {
    type: 'function',
    name: 'tokenURI',
    stateMutability: 'view',
    inputs: [{ name: 'id', type: 'uint256' }],
    outputs: [{ type: 'string' }],
  },
  {
    type: 'function',
    name: 'ownerOf',
    stateMutability: 'view',
    inputs: [{ name: 'id', type: 'uint256' }],
    outputs: [{ type: 'address' }],
  },
  {
    type: 'function',
    name: 'uri',
    stateMutability: 'view',
    inputs: [{ name: 'id', type: 'uint256' }],
    outputs: [{ type: 'string' }],
  },
  { type: 'function', name: 'name', stateMutability: 'view', inputs: [], outputs: [{ type: 'string' }] },
  { type: 'function', name: 'symbol', stateMutability: 'view', inputs: [], outputs: [{ type: 'string' }] },
  { type: 'function', name: 'decimals', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint8' }] },
] as const

/** ERC-165 interface ids (EIP-721, EIP-1155) */
const ERC721_ID = '0x80ac58cd'
const ERC1155_ID = '0xd9b67a26'

/**
 * NFT metadata of one token on the configured chain (Base in production): tokenURI (ERC-721) or
 * uri with {id} substituted (ERC-1155), owner, name, symbol, and the metadata JSON itself:
 * data: URIs decoded here, ipfs:// through the IPFS_GATEWAY_URL gateway, http(s) fetched with
 * internal addresses refused.
 */
export default defineHandler<Input>({
  slug: 'nft-token-metadata',
  description:
    'Metadata of one NFT: the token URI (ERC-721 tokenURI or ERC-1155 uri with {id} filled in), owner, collection name and symbol, and the metadata JSON fetched from data:, ipfs:// or http(s) URIs.',
  providers: [CHAIN_DATA_RPC_URL],
  timeoutMs: 25_000,
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['contract', 'tokenId'],
    properties: {
      contract: addressSchema('The NFT collection contract: a 0x-prefixed 20-byte hex address.'),
      tokenId: {
        type: 'string',
        pattern: '^[0-9]{1,78}$',
        description: 'The token id as a decimal integer string (uint256).',
      },
      standard: {
        type: 'string',
        enum: ['auto', 'erc721', 'erc1155'],
        default: 'auto',
        description:
          "'auto' (default) asks the contract through ERC-165 supportsInterface; 'erc721' or 'erc1155' forces the reading.",
      },
      fetchMetadata: {
        type: 'boolean',
        default: true,
        description: 'Fetch and parse the metadata JSON behind the URI (default true).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ chainId, blockNumber, contract, tokenId, standard (erc721 | erc1155), found, name, symbol, owner (ERC-721 ownerOf; null for ERC-1155, which has no single owner), tokenUri (as the contract returns it), ' +
      'metadataUrl (the URL fetched: the ipfs:// gateway form, the http(s) URL, or "data:" for inline), metadata (the JSON object) | null, metadataError | null, image, imageUrl (ipfs:// image through the gateway) }. ' +
      'found is false when the contract says the token does not exist (ownerOf and tokenURI revert). ' +
      "With standard 'auto', a contract that declares neither interface through ERC-165 and answers no NFT function for the token (an ERC-20, say) is refused: 422 on contract, nothing charged. " +
      'metadata is null with metadataError saying why when it could not be fetched or parsed (internal addresses are refused; ipfs:// needs IPFS_GATEWAY_URL).',
    schema: {
      type: 'object',
      properties: {
        chainId: { type: 'integer' },
        contract: { type: 'string' },
        tokenId: { type: 'string' },
        standard: { type: 'string' },
        found: { type: 'boolean' },
        owner: { type: ['string', 'null'] },
        tokenUri: { type: ['string', 'null'] },
        metadata: { type: ['object', 'null'] },
        metadataError: { type: ['string', 'null'] },
      },
    },
    example: {
      chainId: 84532,
      blockNumber: '10',
      contract: '0xFBDFBB11b5e930b38d906715E5A5716C50532c6e',
      tokenId: '7',
      standard: 'erc721',
      found: true,
      name: 'Test Apes',
      symbol: 'TAPE',
      owner: '0xAFB79494D031F0fd850b2D19f42C15836cc887c7',
      tokenUri: 'https://www.example.com/meta/7.json',
      metadataUrl: 'https://www.example.com/meta/7.json',
      metadata: { name: 'Ape #7', image: 'ipfs://QmImage/7.png', attributes: [{ trait_type: 'Fur', value: 'Gold' }] },
      metadataError: null,
      image: 'ipfs://QmImage/7.png',
      imageUrl: 'https://www.example.com/ipfs/QmImage/7.png',
    },
  },
  // BasePaint on Base (ERC-1155), day 1
  example: { contract: '0xBa5e05cb26b78eDa3A2f8e3b3814726305dcAc83', tokenId: '1' },
  async run(input, ctx) {
    const c = await chainClient(ctx, { what: 'nft-token-metadata' })
    const { viem, client, read } = c
    const address = parseAddress(viem, input.contract, 'contract')
    const id = BigInt(input.tokenId)
    if (id >= 2n ** 256n) throw new HandlerInputError('tokenId', 'tokenId does not fit in uint256')
    const head = await read('the latest block', () => client.getBlockNumber())
    const [chainId, code] = await Promise.all([
      read('the chain id', () => client.getChainId()),
      read('the contract code', () => client.getCode({ address, blockNumber: head })),
    ])
    if (!code || code === '0x')
      throw new HandlerInputError('contract', `${address} has no contract code on this chain (id ${chainId})`, 422)

    const call = <T>(
      functionName: 'supportsInterface' | 'tokenURI' | 'ownerOf' | 'uri' | 'name' | 'symbol' | 'decimals',
      args: readonly unknown[] = [],
    ) =>
      optionalRead<T>(
        c,
        () =>
          client.readContract({
            address,
            abi: nftAbi,
            functionName,
            args: args as never,
            blockNumber: head,
          }) as Promise<T>,
        `${functionName}()`,
      )
    let standard: 'erc721' | 'erc1155'
    if ((input.standard ?? 'auto') === 'auto') {
      const [is721, is1155] = await Promise.all([
        call<boolean>('supportsInterface', [ERC721_ID]),
        call<boolean>('supportsInterface', [ERC1155_ID]),
      ])
      if (is721) standard = 'erc721'
      else if (is1155) standard = 'erc1155'
      // no ERC-165 (which both standards require): whichever NFT function answers
      else if ((await call<string>('tokenURI', [id])) !== null || (await call<string>('ownerOf', [id])) !== null)
        standard = 'erc721'
      else if ((await call<string>('uri', [id])) !== null) standard = 'erc1155'
      else throw await notAnNft(address, call)
    } else standard = input.standard as 'erc721' | 'erc1155'

    const [name, symbol] = await Promise.all([call<string>('name'), call<string>('symbol')])
    let owner: string | null = null
    let tokenUri: string | null
    if (standard === 'erc721') {
      ;[owner, tokenUri] = await Promise.all([call<string>('ownerOf', [id]), call<string>('tokenURI', [id])])
    } else {
      const template = await call<string>('uri', [id])
      // EIP-1155: {id} is the lower-case hex id, 64 characters, no 0x
      tokenUri = template === null ? null : template.replaceAll('{id}', id.toString(16).padStart(64, '0'))
    }
    const found = standard === 'erc721' ? owner !== null || tokenUri !== null : tokenUri !== null
    const base = {
      chainId,
      blockNumber: head.toString(),
      contract: address,
      tokenId: id.toString(),
      standard,
      found,
      name,
      symbol,
      owner,
      tokenUri: tokenUri ?? null,
    }
    if (!tokenUri || input.fetchMetadata === false) {
      const why = !found
        ? 'the contract says this token does not exist'
        : !tokenUri
          ? `${standard === 'erc721' ? 'tokenURI' : 'uri'}() gave no answer`
          : 'not fetched (fetchMetadata is false)'
      return { body: { ...base, metadataUrl: null, metadata: null, metadataError: why, image: null, imageUrl: null } }
    }
    const m = await loadMetadata(tokenUri, ctx)
    const image =
      m.metadata && typeof m.metadata.image === 'string'
        ? m.metadata.image
        : m.metadata && typeof m.metadata.image_url === 'string'
          ? m.metadata.image_url
          : null
    return {
      body: {
        ...base,
        metadataUrl: m.url,
        metadata: m.metadata,
        metadataError: m.error,
        image,
        imageUrl: image ? httpForm(image, ctx) : null,
      },
    }
  },
})

/**
 * The refusal for a contract that answers as no NFT contract: it declares neither interface
 * through ERC-165 and none of tokenURI, ownerOf, uri answers; an ERC-20 (it answers decimals())
 * is named as one, the usual mistake.
 */
async function notAnNft(
  address: string,
  call: <T>(fn: 'decimals', args?: readonly unknown[]) => Promise<T | null>,
): Promise<HandlerInputError> {
  const decimals = await call<number>('decimals')
  const what =
    decimals !== null
      ? `it looks like an ERC-20 token (it answers decimals() = ${decimals})`
      : 'it declares neither ERC-721 nor ERC-1155 through ERC-165 and answers none of tokenURI, ownerOf, uri'
  return new HandlerInputError(
    'contract',
    `${address} is not an NFT contract: ${what}; give the address of an ERC-721 or ERC-1155 collection`,
    422,
  )
}

/** A view call whose failure by the contract (revert, no such function) is null; node failures are 502. */
async function optionalRead<T>(c: ChainClient, fn: () => Promise<T>, what: string): Promise<T | null> {
  try {
    return await fn()
  } catch (err) {
    if (answeredWithoutValue(c, err)) return null
    throw upstreamError(c.viem, err, what)
  }
}

/** ipfs://CID/path (or ipfs://ipfs/CID/path) → the configured gateway URL; http(s) as is; else null. */
function httpForm(uri: string, ctx: HandlerContext): string | null {
  if (/^https?:\/\//i.test(uri)) return uri
  const m = /^ipfs:\/\/(?:ipfs\/)?(.+)$/i.exec(uri)
  const gateway = optionalSetting(ctx, 'IPFS_GATEWAY_URL')
  return m && gateway ? joinUrl(gateway, m[1]!) : null
}

async function loadMetadata(
  uri: string,
  ctx: HandlerContext,
): Promise<{ url: string | null; metadata: Record<string, unknown> | null; error: string | null }> {
  const parse = (text: string, url: string | null) => {
    try {
      const v: unknown = JSON.parse(text)
      if (v && typeof v === 'object' && !Array.isArray(v))
        return { url, metadata: v as Record<string, unknown>, error: null }
      return { url, metadata: null, error: 'the metadata is JSON but not an object' }
    } catch {
      return { url, metadata: null, error: 'the metadata is not valid JSON' }
    }
  }
  const data = /^data:([^,]*?),(.*)$/is.exec(uri)
  if (data) {
    const isBase64 = /;base64$/i.test(data[1]!)
    let text: string
    if (isBase64) text = Buffer.from(data[2]!, 'base64').toString('utf8')
    else {
      // many contracts put raw JSON after "data:application/json;utf8," without percent-encoding it:
      // a lone "%" (as in "50% of") is then text, not an escape
      try {
        text = decodeURIComponent(data[2]!)
      } catch {
        text = data[2]!
      }
    }
    return parse(text, 'data:')
  }
  const ipfs = /^ipfs:\/\/(?:ipfs\/)?(.+)$/i.exec(uri)
  if (ipfs) {
    const gateway = optionalSetting(ctx, 'IPFS_GATEWAY_URL')
    if (!gateway)
      return {
        url: null,
        metadata: null,
        error: 'the metadata is on IPFS and this deployment has no IPFS_GATEWAY_URL configured',
      }
    const url = joinUrl(gateway, ipfs[1]!)
    try {
      const r = await callProvider('the IPFS gateway', url, {
        timeoutMs: METADATA_TIMEOUT_MS,
        maxBytes: MAX_METADATA_BYTES,
        headers: { accept: 'application/json, */*' },
        acceptStatus: [404],
      })
      if (r.status === 404)
        return { url, metadata: null, error: 'the IPFS gateway answered 404: the content was not found' }
      return parse(r.text, url)
    } catch (err) {
      if (err instanceof HandlerUpstreamError) return { url, metadata: null, error: err.message }
      throw err
    }
  }
  if (/^https?:\/\//i.test(uri)) {
    try {
      const r = await fetchPublicUrl(uri, ctx, {
        field: 'tokenUri',
        timeoutMs: METADATA_TIMEOUT_MS,
        maxBytes: MAX_METADATA_BYTES,
        headers: { accept: 'application/json, */*' },
      })
      if (r.status >= 400)
        return { url: r.finalUrl, metadata: null, error: `the metadata server answered HTTP ${r.status}` }
      if (r.truncated)
        return { url: r.finalUrl, metadata: null, error: `the metadata is larger than ${MAX_METADATA_BYTES} bytes` }
      return parse(r.body.toString('utf8'), r.finalUrl)
    } catch (err) {
      // the URI comes from the contract, not the buyer: a refused or failing host is part of the answer
      if (err instanceof HandlerInputError || err instanceof HandlerUpstreamError)
        return { url: uri, metadata: null, error: err.message }
      throw err
    }
  }
  return {
    url: null,
    metadata: null,
    error: `unsupported URI scheme (${uri.split(':')[0]?.slice(0, 20)}:); data:, ipfs:// and http(s) are read`,
  }
}
