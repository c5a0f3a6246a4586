import type { CHash } from '@noble/hashes/utils.js'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

const ALGORITHMS = [
  'md5',
  'sha1',
  'sha224',
  'sha256',
  'sha384',
  'sha512',
  'sha3-256',
  'sha3-512',
  'keccak256',
  'ripemd160',
] as const
type Algorithm = (typeof ALGORITHMS)[number]

/** Characters of `text`; base64/hex input decodes to at most this many bytes too. */
const MAX_TEXT = 1_000_000
const MAX_KEY = 1024

interface Input {
  text: string
  inputEncoding: 'utf8' | 'hex' | 'base64'
  algorithms: Algorithm[]
  hmacKey?: string
  outputEncoding: 'hex' | 'base64'
}

export default defineHandler<Input>({
  slug: 'hash-generator',
  description:
    'Hash text or bytes with MD5, SHA-1, SHA-2, SHA-3, Keccak-256 (Ethereum) or RIPEMD-160, optionally as an HMAC with a key; digests in hex or base64.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['text'],
    properties: {
      text: {
        type: 'string',
        maxLength: MAX_TEXT,
        description: `Data to hash (at most ${MAX_TEXT} characters), read per inputEncoding. May be empty.`,
      },
      inputEncoding: {
        type: 'string',
        enum: ['utf8', 'hex', 'base64'],
        default: 'utf8',
        description: 'How to turn text into bytes: UTF-8 text, hex, or base64 (standard or URL-safe).',
      },
      algorithms: {
        type: 'array',
        items: { type: 'string', enum: [...ALGORITHMS] },
        minItems: 1,
        maxItems: ALGORITHMS.length,
        uniqueItems: true,
        default: ['md5', 'sha1', 'sha256', 'sha512'],
        description:
          'Digests to compute. keccak256 is the original Keccak padding used by Ethereum (differs from sha3-256).',
      },
      hmacKey: {
        type: 'string',
        maxLength: MAX_KEY,
        description: `When given, compute HMAC-<algorithm> with this UTF-8 key (at most ${MAX_KEY} characters) instead of a plain digest.`,
      },
      outputEncoding: {
        type: 'string',
        enum: ['hex', 'base64'],
        default: 'hex',
        description: 'Encoding of the digests: lower-case hex or standard base64.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description: '{ digests: { <algorithm>: string }, hmac: boolean, encoding, inputBytes }',
    schema: {
      type: 'object',
      properties: {
        digests: {
          type: 'object',
          description: 'one digest per requested algorithm, keyed by its name',
          additionalProperties: { type: 'string' },
        },
        hmac: { type: 'boolean' },
        encoding: { type: 'string' },
        inputBytes: { type: 'number' },
      },
      required: ['digests', 'hmac', 'encoding', 'inputBytes'],
    },
    example: {
      digests: {
        sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
        keccak256: '4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45',
      },
      hmac: false,
      encoding: 'hex',
      inputBytes: 3,
    },
  },
  example: { text: 'abc', inputEncoding: 'utf8', algorithms: ['sha256', 'keccak256'], outputEncoding: 'hex' },
  async run(input) {
    const bytes = decodeInput(input.text, input.inputEncoding)
    const hashes = await loadHashes()
    const key = input.hmacKey === undefined ? undefined : new TextEncoder().encode(input.hmacKey)
    const { hmac } = key ? await import('@noble/hashes/hmac.js') : { hmac: undefined }
    const digests: Record<string, string> = {}
    for (const name of input.algorithms) {
      const hash = hashes[name]
      const raw = key && hmac ? hmac(hash, key, bytes) : hash(bytes)
      digests[name] = Buffer.from(raw).toString(input.outputEncoding)
    }
    return { body: { digests, hmac: key !== undefined, encoding: input.outputEncoding, inputBytes: bytes.length } }
  },
})

function decodeInput(text: string, encoding: Input['inputEncoding']): Uint8Array {
  if (encoding === 'utf8') return new TextEncoder().encode(text)
  if (encoding === 'hex') {
    const hex = text.replace(/^0x/i, '')
    if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex))
      throw new HandlerInputError('text', 'text is not valid hex (even number of 0-9a-f digits, optional 0x)')
    return Buffer.from(hex, 'hex')
  }
  const b64 = text.replace(/\s+/g, '')
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(b64) || b64.replace(/=+$/, '').length % 4 === 1)
    throw new HandlerInputError('text', 'text is not valid base64')
  return Buffer.from(b64, 'base64')
}

// noble-hashes is pure JS and covers keccak256, which node:crypto lacks; loaded only when run.
async function loadHashes(): Promise<Record<Algorithm, CHash>> {
  const [sha2, sha3, legacy] = await Promise.all([
    import('@noble/hashes/sha2.js'),
    import('@noble/hashes/sha3.js'),
    import('@noble/hashes/legacy.js'),
  ])
  return {
    md5: legacy.md5,
    sha1: legacy.sha1,
    ripemd160: legacy.ripemd160,
    sha224: sha2.sha224,
    sha256: sha2.sha256,
    sha384: sha2.sha384,
    sha512: sha2.sha512,
    'sha3-256': sha3.sha3_256,
    'sha3-512': sha3.sha3_512,
    keccak256: sha3.keccak_256,
  }
}
