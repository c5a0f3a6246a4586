import t from 'tap'
import { recoverTypedDataAddress, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { parseChallenge } from '../../../src/client/challenge.js'
import { deferredTerms, signDeferred, voucherWire } from '../../../src/client/sign-deferred.js'
import {
  depositAuthorizationTypedData,
  voucherTypedData,
  type DeferredVoucher,
} from '../../../src/schemes/deferred/typed-data.js'

const me = privateKeyToAccount(generatePrivateKey())
const escrow = '0xdEfE55ed00000000000000000000000000000402'
const seller = '0x00000000000000000000000000000000000000a1'
const asset = '0x00000000000000000000000000000000000000b2'
const requirement = (extra: Record<string, unknown>) =>
  parseChallenge({
    x402Version: 2,
    resource: { url: 'https://seller.example/x' },
    accepts: [
      {
        scheme: 'deferred',
        network: 'eip155:84532',
        amount: '1000',
        asset,
        payTo: seller,
        maxTimeoutSeconds: 60,
        extra: { escrow, name: 'USDC', version: '2', voucherStorage: 'server', ...extra },
      },
    ],
  }).accepts[0]!
const earlier: DeferredVoucher = {
  id: `0x${'ab'.repeat(32)}`,
  buyer: me.address,
  seller: seller as Hex,
  valueAggregate: 5000n,
  asset: asset as Hex,
  timestamp: 4102444800n,
  nonce: 4n,
  escrow,
  chainId: 84532n,
}

t.test('aggregates onto the latest voucher the seller shows when it is ours', async (t) => {
  const signature = await me.signTypedData(voucherTypedData(earlier))
  const terms = await deferredTerms(
    requirement({
      voucher: voucherWire(earlier),
      signature,
      account: { balance: '9000', assetAllowance: '0', assetPermitNonce: '3' },
    }),
    me.address,
  )
  t.equal(terms.latest?.nonce, 4n)
  const s = await signDeferred(me, terms, { deposit: 20_000n, nowSeconds: 1_700_000_000 })
  t.match(
    s.voucher,
    { id: earlier.id, nonce: 5n, valueAggregate: 6000n, timestamp: earlier.timestamp + 1n },
    'nonce + 1, aggregate + price, a later timestamp',
  )
  t.equal(
    await recoverTypedDataAddress({ ...voucherTypedData(s.voucher), signature: s.payload.signature as Hex }),
    me.address,
  )
  const deposit = s.payload.deposit as { authorization: Record<string, unknown>; permit: Record<string, unknown> }
  t.match(deposit.authorization, { amount: '20000', buyer: me.address })
  t.match(
    deposit.permit,
    { value: '20000', nonce: '3', spender: escrow, domain: { name: 'USDC', version: '2' } },
    'a permit: the allowance is short',
  )
  const a = deposit.authorization
  const auth = {
    buyer: me.address,
    seller: seller as Hex,
    asset: asset as Hex,
    amount: 20_000n,
    nonce: a.nonce as Hex,
    expiry: BigInt(a.expiry as number),
  }
  t.equal(
    await recoverTypedDataAddress({
      ...depositAuthorizationTypedData(auth, 84532, escrow),
      signature: a.signature as Hex,
    }),
    me.address,
  )
})

t.test('a voucher the seller shows that we did not sign, or not for this seller: a new voucher id', async (t) => {
  const forged = { ...earlier, valueAggregate: 900_000n }
  const other = privateKeyToAccount(generatePrivateKey())
  for (const [what, v, signer] of [
    ['signed by another key', forged, other],
    ['for another seller', { ...earlier, seller: '0x00000000000000000000000000000000000000c3' as Hex }, me],
  ] as const) {
    const terms = await deferredTerms(
      requirement({ voucher: voucherWire(v), signature: await signer.signTypedData(voucherTypedData(v)) }),
      me.address,
    )
    t.equal(terms.latest, undefined, what)
    const s = await signDeferred(me, terms)
    t.match(s.voucher, { nonce: 0n, valueAggregate: 1000n }, what)
    t.not(s.voucher.id, earlier.id)
    t.equal(s.payload.deposit, undefined, 'no deposit unless asked')
  }
})
