/**
 * The hot path's hand-written voucher digest against viem's `hashTypedData` on random vouchers
 * (every field filled at random, including values past 64 bits) and on the spec's signed vectors.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import t from 'tap'
import { bytesToHex, hashTypedData, type Address, type Hex } from 'viem'
import { decodeDeferredPayload } from '../../../../src/schemes/deferred/decode-payload.js'
import { voucherTypedData, type DeferredVoucher } from '../../../../src/schemes/deferred/typed-data.js'
import { voucherDigest, voucherDomainSeparator } from '../../../../src/schemes/deferred/voucher-digest.js'

const hex = (n: number) => `0x${randomBytes(n).toString('hex')}`
const big = (bytes: number) => BigInt(hex(1 + (randomBytes(1)[0]! % bytes)))

t.test('equals hashTypedData on 500 random vouchers', async (t) => {
  let same = 0
  for (let i = 0; i < 500; i++) {
    const v: DeferredVoucher = {
      id: hex(32) as Hex,
      buyer: hex(20) as Address,
      seller: hex(20) as Address,
      valueAggregate: big(32),
      asset: hex(20) as Address,
      timestamp: big(8),
      nonce: big(32),
      escrow: hex(20) as Address,
      chainId: big(8),
    }
    const ds = voucherDomainSeparator(v.chainId, v.escrow)
    if (bytesToHex(voucherDigest(ds, v)) === hashTypedData(voucherTypedData(v))) same++
  }
  t.equal(same, 500)
})

t.test('equals hashTypedData on the spec vectors', async (t) => {
  const signed = JSON.parse(
    readFileSync(new URL('../../../fixtures/deferred/signed-vectors.json', import.meta.url), 'utf8'),
  ) as Record<string, unknown>
  const wires: unknown[] = []
  JSON.stringify(signed, (k, val) => {
    if (k === 'voucher' && val && typeof val === 'object') wires.push(val)
    return val
  })
  t.ok(wires.length > 0, 'the fixture has vouchers')
  for (const w of wires) {
    const d = decodeDeferredPayload({ voucher: w, signature: '0x00' })
    if (!d.ok) continue
    const v = d.payload.voucher
    t.equal(
      bytesToHex(voucherDigest(voucherDomainSeparator(v.chainId, v.escrow), v)),
      hashTypedData(voucherTypedData(v)),
    )
  }
})

t.test('a wrong domain separator gives another digest', async (t) => {
  const v: DeferredVoucher = {
    id: hex(32) as Hex,
    buyer: hex(20) as Address,
    seller: hex(20) as Address,
    valueAggregate: 1000n,
    asset: hex(20) as Address,
    timestamp: 1_700_000_000n,
    nonce: 0n,
    escrow: hex(20) as Address,
    chainId: 84532n,
  }
  t.not(bytesToHex(voucherDigest(voucherDomainSeparator(1n, v.escrow), v)), hashTypedData(voucherTypedData(v)))
})
