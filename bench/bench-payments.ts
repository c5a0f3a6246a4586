/**
 * What the proxy benches share: exact payments signed ahead of a run with the native secp256k1
 * binding (the bench signs faster than the proxy verifies), and the CPU of this process's children.
 */
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { makeDomainSeparator, transferAuthDigest } from '../src/chain/transfer-auth-digest.js'

const secp = createRequire(import.meta.url)('secp256k1') as {
  ecdsaSign(msg: Uint8Array, key: Uint8Array): { signature: Uint8Array; recid: number }
}

export interface ExactPayer {
  address: `0x${string}`
  privateKey: `0x${string}`
}

export interface ChainTerms {
  chainId: number
  usdc: { name: string; version: string; address: `0x${string}` }
}

/**
 * `count` v2 PaymentPayloads for the first requirement of `required` (a v2 PaymentRequired), each
 * with its own nonce, valid from a minute ago for 250 s.
 */
export function exactPayments(
  payer: ExactPayer,
  chain: ChainTerms,
  required: { resource: unknown; accepts: Array<{ payTo: string; amount: string }> },
  count: number,
): object[] {
  const key = Buffer.from(payer.privateKey.slice(2), 'hex')
  const ds = makeDomainSeparator({
    name: chain.usdc.name,
    version: chain.usdc.version,
    chainId: chain.chainId,
    verifyingContract: chain.usdc.address,
  })
  const req = required.accepts[0]!
  const now = Math.floor(Date.now() / 1000)
  const out: object[] = []
  for (let i = 0; i < count; i++) {
    const auth = {
      from: payer.address,
      to: req.payTo,
      value: BigInt(req.amount),
      validAfter: BigInt(now - 60),
      validBefore: BigInt(now + 250),
      nonce: `0x${randomBytes(32).toString('hex')}`,
    }
    const { signature, recid } = secp.ecdsaSign(transferAuthDigest(ds, auth), key)
    const payload = {
      signature: `0x${Buffer.from(signature).toString('hex')}${(27 + recid).toString(16)}`,
      authorization: {
        ...auth,
        value: String(auth.value),
        validAfter: String(auth.validAfter),
        validBefore: String(auth.validBefore),
      },
    }
    out.push({ x402Version: 2, resource: required.resource, accepted: req, payload })
  }
  return out
}

/** CPU µs used so far by this process's children (the handler processes), from /proc. */
export function childrenCpuUs(): number {
  let ticks = 0
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const f = readFileSync(`/proc/${name}/stat`, 'utf8')
      const fields = f.slice(f.lastIndexOf(')') + 2).split(' ')
      if (Number(fields[1]) === process.pid) ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      // gone meanwhile
    }
  }
  return ticks * 10_000 // 100 clock ticks a second
}

/** Busy CPU µs of the whole machine so far (/proc/stat: all but idle and iowait). */
export function machineBusyUs(): number {
  const [, ...f] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/)
  const n = f.map(Number)
  const total = n.slice(0, 8).reduce((a, b) => a + b, 0)
  return (total - n[3]! - n[4]!) * 10_000
}

/** CPU µs used so far by the processes named `comm` (postgres, redis-server), from /proc. */
export function processCpuUs(comm: string): number {
  let ticks = 0
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const f = readFileSync(`/proc/${name}/stat`, 'utf8')
      if (f.slice(f.indexOf('(') + 1, f.lastIndexOf(')')) !== comm) continue
      const fields = f.slice(f.lastIndexOf(')') + 2).split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      // gone meanwhile
    }
  }
  return ticks * 10_000
}
