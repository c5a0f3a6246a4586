/**
 * The deferred scheme's EIP-712 typed data against test vectors: the spec's examples signed by a
 * public dev key (digests re-derived here by hand), and signatures made by the reference client
 * (edgeandnode/x402), which our deposit-authorization and permit types must recover.
 */
import { readFileSync } from 'node:fs'
import t from 'tap'
import {
  concat,
  encodeAbiParameters,
  hashTypedData,
  keccak256,
  recoverTypedDataAddress,
  toHex,
  type Address,
  type Hex,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { decodeDeferredPayload } from '../../../../src/schemes/deferred/decode-payload.js'
import {
  depositAuthorizationTypedData,
  permitTypedData,
  voucherTypedData,
  voucherTypes,
  type DeferredVoucher,
} from '../../../../src/schemes/deferred/typed-data.js'

const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`../../../fixtures/deferred/${name}`, import.meta.url), 'utf8'))
const signed = fixture('signed-vectors.json')
const reference = fixture('reference-signatures.json')

function voucherOf(wire: unknown): DeferredVoucher {
  const d = decodeDeferredPayload({ voucher: wire, signature: '0x00' })
  if (!d.ok) throw new Error(d.message)
  return d.payload.voucher
}

/** EIP-712 written out: keccak(0x1901 ‖ domainSeparator ‖ keccak(typeHash ‖ fields)), independent of viem's hashTypedData */
function voucherDigestByHand(v: DeferredVoucher): Hex {
  const word = (type: string, value: unknown) => encodeAbiParameters([{ type }], [value])
  const domainSeparator = keccak256(
    concat([
      keccak256(toHex('EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)')),
      keccak256(toHex('DeferredPaymentEscrow')),
      keccak256(toHex('1')),
      word('uint256', v.chainId),
      word('address', v.escrow),
    ]),
  )
  const typeHash = keccak256(
    toHex(
      'Voucher(bytes32 id,address buyer,address seller,uint256 valueAggregate,address asset,uint64 timestamp,uint256 nonce,address escrow,uint256 chainId)',
    ),
  )
  const structHash = keccak256(
    concat([
      typeHash,
      word('bytes32', v.id),
      word('address', v.buyer),
      word('address', v.seller),
      word('uint256', v.valueAggregate),
      word('address', v.asset),
      word('uint64', v.timestamp),
      word('uint256', v.nonce),
      word('address', v.escrow),
      word('uint256', v.chainId),
    ]),
  )
  return keccak256(concat(['0x1901', domainSeparator, structHash]))
}

t.test('the Voucher type is the nine fields of the coinbase/x402 text, in order, without expiry', async (t) => {
  t.same(
    voucherTypes.Voucher.map((f) => `${f.type} ${f.name}`),
    [
      'bytes32 id',
      'address buyer',
      'address seller',
      'uint256 valueAggregate',
      'address asset',
      'uint64 timestamp',
      'uint256 nonce',
      'address escrow',
      'uint256 chainId',
    ],
  )
})

t.test(
  "the spec's vouchers, signed by a dev key: digests match the hand-written encoding, signatures recover the buyer",
  async (t) => {
    const signer = privateKeyToAccount(signed.privateKey)
    t.equal(signer.address, signed.address)
    for (const vec of signed.vouchers) {
      const v = voucherOf(vec.voucher)
      t.equal(v.buyer, (signed.address as string).toLowerCase(), `${vec.name}: the buyer is the signer`)
      t.equal(hashTypedData(voucherTypedData(v)), vec.digest, `${vec.name}: digest`)
      t.equal(voucherDigestByHand(v), vec.digest, `${vec.name}: the same digest by hand`)
      t.equal(
        await recoverTypedDataAddress({ ...voucherTypedData(v), signature: vec.signature }),
        signed.address,
        `${vec.name}: recovers the buyer`,
      )
      t.equal(
        await signer.signTypedData(voucherTypedData(v)),
        vec.signature,
        `${vec.name}: signing is deterministic (RFC 6979)`,
      )
      const raised = { ...v, valueAggregate: v.valueAggregate + 1n }
      t.not(
        await recoverTypedDataAddress({ ...voucherTypedData(raised), signature: vec.signature }),
        signed.address,
        `${vec.name}: a changed value recovers someone else`,
      )
    }
  },
)

t.test("the spec's deposit authorization and permit, signed by a dev key, recover it", async (t) => {
  // the spec writes two of its addresses in mixed case that is not their EIP-55 checksum
  const lower = (x: string) => x.toLowerCase() as Address
  const a = signed.depositAuthorization
  const auth = {
    buyer: lower(a.message.buyer),
    seller: lower(a.message.seller),
    asset: lower(a.message.asset),
    amount: BigInt(a.message.amount),
    nonce: a.message.nonce as Hex,
    expiry: BigInt(a.message.expiry),
  }
  const atd = depositAuthorizationTypedData(auth, a.chainId, lower(a.escrow))
  t.equal(hashTypedData(atd), a.digest)
  t.equal(await recoverTypedDataAddress({ ...atd, signature: a.signature }), signed.address)
  const p = signed.permit
  const ptd = permitTypedData(
    {
      owner: lower(p.message.owner),
      spender: lower(p.message.spender),
      value: BigInt(p.message.value),
      nonce: BigInt(p.message.nonce),
      deadline: BigInt(p.message.deadline),
    },
    { name: p.message.domain.name, version: p.message.domain.version, chainId: p.chainId, address: lower(p.asset) },
  )
  t.equal(hashTypedData(ptd), p.digest)
  t.equal(await recoverTypedDataAddress({ ...ptd, signature: p.signature }), signed.address)
})

t.test(
  "the reference client's signatures: deposit authorization and permit recover its key; its voucher with expiry does not",
  async (t) => {
    const r = reference
    t.equal(privateKeyToAccount(r.privateKey).address, r.address)
    const m = r.depositAuthorization.message
    const auth = {
      buyer: m.buyer,
      seller: m.seller,
      asset: m.asset,
      amount: BigInt(m.amount),
      nonce: m.nonce,
      expiry: BigInt(m.expiry),
    }
    t.equal(
      await recoverTypedDataAddress({
        ...depositAuthorizationTypedData(auth, r.chainId, r.escrow),
        signature: r.depositAuthorization.signature,
      }),
      r.address,
    )
    const pm = r.permit.message
    const permit = {
      owner: pm.owner,
      spender: pm.spender,
      value: BigInt(pm.value),
      nonce: BigInt(pm.nonce),
      deadline: BigInt(pm.deadline),
    }
    t.equal(
      await recoverTypedDataAddress({
        ...permitTypedData(permit, { ...r.permit.domain, chainId: r.chainId, address: r.asset }),
        signature: r.permit.signature,
      }),
      r.address,
    )

    const { expiry, ...nine } = r.voucherWithExpiry.message
    const v = voucherOf(nine)
    t.not(
      await recoverTypedDataAddress({ ...voucherTypedData(v), signature: r.voucherWithExpiry.signature }),
      r.address,
      'a draft voucher with expiry is not a valid voucher here',
    )
    const withExpiry = {
      ...voucherTypedData(v),
      types: { Voucher: [...voucherTypes.Voucher, { name: 'expiry', type: 'uint64' }] },
      message: { ...v, expiry: BigInt(expiry) },
    } as const
    t.equal(
      await recoverTypedDataAddress({ ...withExpiry, signature: r.voucherWithExpiry.signature }),
      r.address,
      'and expiry is the only difference',
    )
  },
)

t.test("the spec's own example signatures are illustrative: they do not recover the stated buyer", async (t) => {
  const { payload } = fixture('spec-payload-voucher.json')
  const v = voucherOf(payload.voucher)
  const recovered = await recoverTypedDataAddress({ ...voucherTypedData(v), signature: payload.signature }).catch(
    () => 'not a signature',
  )
  t.not(recovered, payload.voucher.buyer)
})
