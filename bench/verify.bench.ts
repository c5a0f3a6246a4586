/**
 * Payment verification throughput: our fast path (hand-written EIP-712 digest + native
 * secp256k1 recovery) against viem (`verifyTypedData`), both after the same header decode and
 * requirement checks. Prints verifications/s and the ratio; nothing is asserted.
 *
 *   node --import tsx bench/verify.bench.ts [seconds-per-side]
 */
import { createRequire } from 'node:module'
import { verifyTypedData, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { makeDomainSeparator, transferAuthDigest } from '../src/chain/transfer-auth-digest.js'
import { assertNativeSecp256k1, recoverAuthorizer } from '../src/chain/recover-signer.js'
import { eip3009Types } from '../src/chain/usdc-abi.js'
import { buildChallenge } from '../src/x402/challenge.js'
import { decodePaymentHeader } from '../src/x402/decode-payment.js'
import { verifyRequirements } from '../src/x402/verify-requirements.js'

assertNativeSecp256k1()
const secp = createRequire(import.meta.url)('secp256k1') as {
  ecdsaSign(msg: Uint8Array, key: Uint8Array): { signature: Uint8Array; recid: number }
}

const seconds = Number(process.argv[2] ?? 2)
const now = Math.floor(Date.now() / 1000)
const usdc = { address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', name: 'USDC', version: '2' }
const challenge = buildChallenge({
  resourceUrl: 'http://127.0.0.1:4021/acme/weather/current',
  description: 'bench',
  mimeType: 'application/json',
  payTo: `0x${'20'.repeat(20)}`,
  amount: 1000n,
  maxTimeoutSeconds: 60,
  chain: { chainId: 84532, network: 'base-sepolia', caip2: 'eip155:84532', usdc },
  method: 'GET',
})
const domain = { name: usdc.name, version: usdc.version, chainId: 84532, verifyingContract: usdc.address as Hex }
const ds = makeDomainSeparator(domain)
const types = { TransferWithAuthorization: eip3009Types.TransferWithAuthorization }

// distinct signed v2 headers, so nothing is cached between iterations
const headers: string[] = []
for (let i = 0; i < 256; i++) {
  const key = Buffer.alloc(32, 0)
  key.writeUInt32BE(i + 1, 28)
  const from = privateKeyToAddress(`0x${key.toString('hex')}`)
  const authorization = {
    from,
    to: challenge.requirementsV2.payTo,
    value: '1000',
    validAfter: String(now - 600),
    validBefore: String(now + 3600),
    nonce: `0x${Buffer.alloc(32, i).toString('hex')}`,
  }
  const digest = transferAuthDigest(ds, {
    ...authorization,
    value: 1000n,
    validAfter: BigInt(now - 600),
    validBefore: BigInt(now + 3600),
  })
  const { signature, recid } = secp.ecdsaSign(digest, key)
  const payload = {
    x402Version: 2,
    resource: challenge.v2.resource,
    accepted: challenge.requirementsV2,
    payload: { signature: `0x${Buffer.from(signature).toString('hex')}${(27 + recid).toString(16)}`, authorization },
  }
  headers.push(Buffer.from(JSON.stringify(payload)).toString('base64'))
}

function checked(header: string) {
  const decoded = decodePaymentHeader({ paymentSignature: header }, 8192)
  if (!decoded.ok) throw new Error(decoded.message)
  const r = verifyRequirements(decoded, challenge, now, { maxValidForSeconds: 7200 })
  if (!r.ok) throw new Error(r.message)
  return r
}

function fast(header: string): boolean {
  const r = checked(header)
  return recoverAuthorizer(transferAuthDigest(ds, r.authorization), r.signature) === r.authorization.from
}

async function viem(header: string): Promise<boolean> {
  const r = checked(header)
  return verifyTypedData({
    address: r.authorization.from,
    domain,
    types,
    primaryType: 'TransferWithAuthorization',
    message: r.authorization,
    signature: r.signature,
  })
}

async function measure(name: string, fn: (h: string) => boolean | Promise<boolean>): Promise<number> {
  for (let i = 0; i < 64; i++)
    if (!(await fn(headers[i % headers.length]))) throw new Error(`${name}: verification failed`)
  let n = 0
  const start = process.hrtime.bigint()
  const end = start + BigInt(Math.round(seconds * 1e9))
  let t = start
  while (t < end) {
    for (let i = 0; i < 16; i++)
      if (!(await fn(headers[n++ % headers.length]))) throw new Error(`${name}: verification failed`)
    t = process.hrtime.bigint()
  }
  const perSecond = n / (Number(t - start) / 1e9)
  console.log(
    `${name.padEnd(36)} ${perSecond.toFixed(0).padStart(8)} verifications/s  (${(1e6 / perSecond).toFixed(1)} µs each, n=${n})`,
  )
  return perSecond
}

const f = await measure('fast (digest + native secp256k1)', fast)
const v = await measure('viem (verifyTypedData)', viem)
console.log(`ratio fast/viem: ${(f / v).toFixed(1)}x`)
