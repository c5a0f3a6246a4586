import t from 'tap'
import { createRequire } from 'node:module'
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { makeDomainSeparator, transferAuthDigest } from '../../../src/chain/transfer-auth-digest.js'
import {
  SMART_WALLET_SIGNATURE,
  assertNativeSecp256k1,
  isNativeSecp256k1,
  recoverAuthorizer,
} from '../../../src/chain/recover-signer.js'
import { TEST_SEED, seededRandom } from './prng.js'

const require = createRequire(import.meta.url)
const secp = require('secp256k1') as {
  ecdsaSign(msg: Uint8Array, key: Uint8Array): { signature: Uint8Array; recid: number }
  privateKeyVerify(key: Uint8Array): boolean
}

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n

const CASES = Number(process.env.X402_RECOVER_CASES ?? 5000)
const NAMES = ['USDC', 'USD Coin', '', 'Tøken ✓', 'x'.repeat(80)]

const hex32 = (v: bigint) => v.toString(16).padStart(64, '0')
const toHex = (b: Uint8Array) => Buffer.from(b).toString('hex')

type Mutation =
  | 'high_s'
  | 'bad_v'
  | 'v_swap'
  | 'v_parity'
  | 'len64'
  | 'len66'
  | 'long'
  | 'odd_hex'
  | 'zero_r'
  | 'zero_s'
  | 'r_ge_n'
  | 's_ge_n'
  | 'random_r'
  | 'bit_flip'
  | 'upper_case'
const MUTATIONS: readonly Mutation[] = [
  'high_s',
  'bad_v',
  'v_swap',
  'v_parity',
  'len64',
  'len66',
  'long',
  'odd_hex',
  'zero_r',
  'zero_s',
  'r_ge_n',
  's_ge_n',
  'random_r',
  'bit_flip',
  'upper_case',
]
/** s in (n/2, n): refused by the fast path (EIP-2), still recovered by viem */
function isHighS(sig: string): boolean {
  const s = BigInt(`0x${sig.slice(66, 130)}`)
  return s > N / 2n && s < N
}

t.test('the native secp256k1 addon is loaded', async (t) => {
  t.ok(isNativeSecp256k1())
  t.doesNotThrow(() => assertNativeSecp256k1())
})

/** mutations viem fully recovers (slow); the others it refuses before any curve math */
const VIEM_SLOW: ReadonlySet<Mutation> = new Set([
  'high_s',
  'v_swap',
  'v_parity',
  'random_r',
  'bit_flip',
  'upper_case',
  'odd_hex',
])

interface Case {
  domain: { name: string; version: string; chainId: number; verifyingContract: Hex }
  message: { from: Hex; to: Hex; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex }
  signer: string
  kind: Mutation
  ours: Uint8Array
  valid: string
  bad: string
  sigs: { sig: string; mode: 'typed' | 'hash' }[]
}

function mutate(kind: Mutation, sig: string, recid: number, rng: ReturnType<typeof seededRandom>): string {
  const r = sig.slice(2, 66)
  const s = sig.slice(66, 130)
  switch (kind) {
    case 'high_s':
      return `0x${r}${hex32(N - BigInt(`0x${s}`))}${(27 + (1 - recid)).toString(16)}`
    case 'bad_v':
      return `0x${r}${s}${rng.pick([2, 3, 26, 29, 35, 36, 37, 255]).toString(16).padStart(2, '0')}`
    case 'v_swap':
      return `0x${r}${s}${(28 - recid).toString(16)}`
    case 'v_parity':
      return `0x${r}${s}0${1 - recid}`
    case 'len64':
      return `0x${r}${s}`
    case 'len66':
      return `${sig}00`
    case 'long':
      return `${sig}${toHex(rng.bytes(1 + rng.int(200)))}`
    case 'odd_hex':
      return rng.int(2) === 0 ? sig.slice(0, 131) : `${sig}0`
    case 'zero_r':
      return `0x${'0'.repeat(64)}${s}1b`
    case 'zero_s':
      return `0x${r}${'0'.repeat(64)}1b`
    case 'r_ge_n':
      return `0x${hex32(N + BigInt(rng.int(1000)))}${s}1b`
    case 's_ge_n':
      return `0x${r}${hex32(N + BigInt(rng.int(1000)))}1c`
    case 'random_r':
      return `0x${toHex(rng.bytes(32))}${s}1b`
    case 'bit_flip': {
      const b = Buffer.from(sig.slice(2), 'hex')
      b[rng.int(64)] ^= 1 << rng.int(8)
      return `0x${b.toString('hex')}`
    }
    case 'upper_case':
      return `0x${sig.slice(2).toUpperCase()}`
  }
}

/** Run the viem reference for `cases` over worker threads (one per core, at most 4). */
async function viemReference(cases: Case[]): Promise<{ hash: string; recovered: string[] }[]> {
  const workers = Math.max(1, Math.min(4, availableParallelism()))
  const size = Math.ceil(cases.length / workers)
  const url = new URL('./viem-reference-worker.mjs', import.meta.url)
  const parts = await Promise.all(
    Array.from({ length: workers }, (_, w) => {
      const slice = cases
        .slice(w * size, (w + 1) * size)
        .map((c) => ({ domain: c.domain, message: c.message, sigs: c.sigs }))
      return new Promise<{ hash: string; recovered: string[] }[]>((resolve, reject) => {
        const worker = new Worker(url, { workerData: { cases: slice }, execArgv: [] })
        worker.once('message', (m) => {
          resolve(m)
          void worker.terminate()
        })
        worker.once('error', reject)
      })
    }),
  )
  return parts.flat()
}

t.test(`digest and recovery agree with viem on ${CASES} random cases (seed ${TEST_SEED})`, async (t) => {
  const rng = seededRandom(TEST_SEED)
  // random keys; a pool keeps viem's (slow) key-to-address derivation off the per-case cost
  const keys = Array.from({ length: 64 }, () => {
    let key = rng.bytes(32)
    while (!secp.privateKeyVerify(key)) key = rng.bytes(32)
    return { key, address: privateKeyToAddress(`0x${toHex(key)}`).toLowerCase() }
  })

  const cases: Case[] = []
  for (let i = 0; i < CASES; i++) {
    const { key, address } = rng.pick(keys)
    const domain = {
      name: rng.pick(NAMES),
      version: rng.pick(['2', '1', '', 'v2.0.1']),
      chainId: rng.pick([1, 8453, 84532, 2 ** 53 - 1, Number(rng.uint(40))]),
      verifyingContract: rng.hex(20),
    }
    const message = {
      from: i % 3 === 0 ? (address as Hex) : rng.hex(20),
      to: rng.hex(20),
      value: rng.uint(256),
      validAfter: rng.uint(i % 2 === 0 ? 64 : 256),
      validBefore: rng.uint(i % 2 === 0 ? 64 : 256),
      nonce: rng.hex(32),
    }
    // our input casing differs from viem's: upper-case hex must hash the same
    const ours = transferAuthDigest(makeDomainSeparator(domain), {
      ...message,
      to: i % 2 === 0 ? `0x${message.to.slice(2).toUpperCase()}` : message.to,
    })
    const { signature, recid } = secp.ecdsaSign(ours, key)
    const v = i % 4 === 0 ? recid : 27 + recid
    const valid = `0x${toHex(signature)}${v.toString(16).padStart(2, '0')}`
    // one malformed or altered variant per case, cycling through every kind; every case gets
    // exactly one full viem recovery: of the valid signature, or of a variant viem recovers
    const kind = MUTATIONS[i % MUTATIONS.length]
    const bad = mutate(kind, valid, recid, rng)
    const sigs: Case['sigs'] = VIEM_SLOW.has(kind)
      ? [{ sig: bad, mode: 'hash' }]
      : [
          { sig: valid, mode: 'typed' },
          { sig: bad, mode: 'hash' },
        ]
    cases.push({ domain, message, signer: address, kind, ours, valid, bad, sigs })
  }

  const reference = await viemReference(cases)

  let digestMismatch = 0
  let validMismatch = 0
  let viemValidChecks = 0
  const failures: string[] = []
  const seen = new Map<Mutation, number>()
  for (let i = 0; i < cases.length; i++) {
    const c = cases[i]
    const ref = reference[i]
    if (`0x${toHex(c.ours)}` !== ref.hash) digestMismatch++

    const fastValid = recoverAuthorizer(c.ours, c.valid)
    if (fastValid !== c.signer) validMismatch++
    if (c.sigs[0].mode === 'typed') {
      viemValidChecks++
      if (ref.recovered[0] !== fastValid) validMismatch++
    }

    seen.set(c.kind, (seen.get(c.kind) ?? 0) + 1)
    const f = recoverAuthorizer(c.ours, c.bad)
    const viem = ref.recovered[ref.recovered.length - 1]
    const sigBytes = (c.bad.length - 2) / 2
    const highS = sigBytes === 65 && isHighS(c.bad)
    let ok: boolean
    if (sigBytes > 65 && Number.isInteger(sigBytes)) ok = f === SMART_WALLET_SIGNATURE && viem === 'throws'
    else if (highS)
      ok = f === null // EIP-2: refused even where viem recovers
    else if (f === null) ok = viem === 'throws' || !Number.isInteger(sigBytes)
    else ok = f === viem
    if (c.kind === 'high_s') ok &&= viem === c.signer
    if (!ok && failures.length < 10) failures.push(`#${i} ${c.kind}: fast=${String(f)} viem=${viem} sig=${c.bad}`)
  }

  t.equal(digestMismatch, 0, `digest equals hashTypedData (${cases.length} cases)`)
  t.equal(
    validMismatch,
    0,
    `valid signatures recover the signer (${viemValidChecks} also through recoverTypedDataAddress)`,
  )
  t.same(failures, [], 'altered signatures: refused when viem refuses, the same address otherwise')
  t.equal(seen.size, MUTATIONS.length, 'every mutation kind ran')
})

t.test('recoverAuthorizer never throws on junk', async (t) => {
  const digest = new Uint8Array(32).fill(7)
  const junk: unknown[] = [
    '',
    '0x',
    '0X',
    'zz',
    `0x${'g'.repeat(130)}`,
    `0x${'1'.repeat(131)}`,
    42,
    null,
    undefined,
    {},
    `0x${'f'.repeat(130)}`,
    `0x${'g'.repeat(200)}`,
  ]
  for (const j of junk) {
    t.doesNotThrow(() => recoverAuthorizer(digest, j as string))
  }
  t.equal(recoverAuthorizer(digest, `0x${'g'.repeat(200)}`), null, 'long non-hex is not a smart-wallet signature')
  t.equal(recoverAuthorizer(new Uint8Array(31), `0x${'1'.repeat(130)}`), null, 'digest must be 32 bytes')
})

t.test('digest rejects malformed fields loudly (programming errors)', async (t) => {
  const ds = makeDomainSeparator({
    name: 'USDC',
    version: '2',
    chainId: 84532,
    verifyingContract: `0x${'11'.repeat(20)}`,
  })
  const ok = {
    from: `0x${'22'.repeat(20)}`,
    to: `0x${'33'.repeat(20)}`,
    value: 1n,
    validAfter: 0n,
    validBefore: 1n,
    nonce: `0x${'44'.repeat(32)}`,
  }
  t.doesNotThrow(() => transferAuthDigest(ds, ok))
  t.throws(() => transferAuthDigest(ds, { ...ok, from: `0x${'zz'.repeat(20)}` }))
  t.throws(() => transferAuthDigest(ds, { ...ok, to: '0x1234' }))
  t.throws(() => transferAuthDigest(ds, { ...ok, nonce: `0x${'44'.repeat(31)}` }))
  t.throws(() => transferAuthDigest(ds, { ...ok, value: -1n }))
  t.throws(() => transferAuthDigest(ds, { ...ok, validBefore: 1n << 256n }))
})
