/**
 * 10,000 malformed or tampered `batch-settlement` payloads through the proxy (in-process inject),
 * from a seeded PRNG (FUZZ_SEED): the envelope, the channel config, the voucher and its signature,
 * deposits and refunds, in type, length, hex and range, missing and extra, correctly signed
 * vouchers for the wrong cumulative amount, and a correctly signed refund voucher with its amount
 * (too large, malformed), signature or config tampered. None is accepted, none gets a 5xx; the channel's charge
 * is unchanged and the next valid voucher is still served afterwards.
 */
import { signVoucher } from '@x402/evm/batch-settlement/client'
import { toClientEvmSigner } from '@x402/evm'
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { batchBuyer, receiptOf } from '../../helpers/batch-buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { prng } from '../../helpers/prng.js'
import { newPayer, paidPath } from '../../helpers/settlement.js'

const N = 10_000
const seed = Number(process.env.FUZZ_SEED ?? 34)
type Json = Record<string, unknown>

t.test(`${N} tampered batch-settlement payloads: 0 accepted, 0 5xx, nothing charged`, async (t) => {
  const platform = await startTestPlatform(t, { env: { TOLLGATE_MASTER_KEY: '34'.repeat(32) } })
  const { deps, proxy, proxyUrl } = platform
  const payer = await newPayer(platform, 1_000_000n)
  const buyer = batchBuyer(platform, payer.key)
  const first = await buyer.pay(`${proxyUrl}${paidPath}`)
  t.equal(first.status, 200, 'a channel with a deposit')
  const channelId = String(receiptOf(first).extra!.channelState!.channelId) as `0x${string}`
  const deposit = JSON.parse(Buffer.from(buyer.sent.at(-1)!, 'base64').toString()) as Json
  const signer = toClientEvmSigner(privateKeyToAccount(payer.key))
  const network = (deposit.accepted as Json).network as string
  const voucherFor = (max: bigint) => signVoucher(signer, channelId, max.toString(), network)
  const valid = await voucherFor(2000n)
  const base: Json = {
    ...deposit,
    payload: { type: 'voucher', channelConfig: (deposit.payload as Json).channelConfig, voucher: valid },
  }
  const rand = prng(seed)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!
  const hexFlip = (s: string) => {
    const i = 2 + Math.floor(rand() * (s.length - 2))
    // a different digit, not only another case (an address in another case is the same address)
    return s.slice(0, i) + (s[i]!.toLowerCase() === 'a' ? 'b' : 'a') + s.slice(i + 1)
  }
  const junk = () =>
    pick<unknown>([
      null,
      0,
      -1,
      1.5,
      '',
      'x',
      '0x',
      '0xzz',
      [],
      {},
      true,
      '1e3',
      ' 1',
      `0x${'f'.repeat(64)}`,
      '9'.repeat(80),
    ])
  // the zero-charge voucher of a real refund (charged 1000): only ever sent tampered below
  const refundVoucher = await voucherFor(1000n)
  const signedWrong = await Promise.all(
    [0n, 1000n, 1999n, 2001n, 3000n, 10n ** 30n, (1n << 128n) - 1n].map((m) => voucherFor(m)),
  )

  const mutate = (): Json => {
    const e = structuredClone(base)
    const p = e.payload as Json
    const c = p.channelConfig as Json
    const v = p.voucher as Json
    const a = e.accepted as Json
    switch (Math.floor(rand() * 13)) {
      case 0:
        c[pick(Object.keys(c))] = rand() < 0.5 ? junk() : hexFlip(String(c[pick(Object.keys(c))] ?? '0x00'))
        break
      case 1:
        c.withdrawDelay = pick([899, 901, 3600, 0, -900, 2 ** 40, 900.5, '900', null])
        break
      case 2:
        v.signature = rand() < 0.6 ? hexFlip(String(v.signature)) : junk()
        break
      case 3:
        v.maxClaimableAmount = pick<unknown>(['1999', '2001', '0', '-2000', '2000.0', 2000, '0x7d0', ''])
        break
      case 4:
        v.channelId = rand() < 0.5 ? hexFlip(String(v.channelId)) : junk()
        break
      case 5:
        p.type = pick<unknown>(['claim', 'settle', 'DEPOSIT', '', null, 1, 'refund'])
        break
      case 6:
        p.voucher = pick(signedWrong.filter((w) => w.maxClaimableAmount !== '2000'))
        break
      case 7:
        p.type = 'deposit'
        p.deposit = pick<unknown>([
          junk(),
          { amount: '5000', authorization: {} },
          {
            amount: '5000',
            authorization: {
              erc3009Authorization: { validAfter: '0', validBefore: '1', salt: '0x01', signature: v.signature },
            },
          },
          {
            amount: '5000',
            authorization: {
              erc3009Authorization: {
                validAfter: '0',
                validBefore: '99999999999',
                salt: '0x01',
                signature: v.signature,
              },
            },
          },
          { amount: '0', authorization: { permit2Authorization: {} } },
        ])
        break
      case 8:
        a[pick(['amount', 'payTo', 'asset', 'network', 'scheme', 'extra'])] = junk()
        break
      case 9:
        e[pick(['x402Version', 'payload', 'accepted'])] = junk()
        break
      case 10: {
        const o = rand() < 0.5 ? c : v
        delete o[pick(Object.keys(o))]
        break
      }
      case 11: {
        // a correctly signed refund voucher, tampered: the amount, the signature or the config
        p.type = 'refund'
        p.voucher = { ...refundVoucher }
        const r = rand()
        if (r < 0.5)
          p.amount = pick<unknown>(['0', '-1', 'all', '29001', '1e3', 1000, '0x10', (1n << 128n).toString(), null])
        else if (r < 0.75) (p.voucher as Json).signature = hexFlip(refundVoucher.signature)
        else {
          const k = pick(['payer', 'payerAuthorizer', 'receiver', 'receiverAuthorizer', 'token', 'salt'])
          c[k] = hexFlip(String(c[k]))
        }
        break
      }
      default:
        p.type = 'refund'
        p.amount = pick<unknown>(['0', '-1', 'all', '1000', undefined])
        v.maxClaimableAmount = pick(['1000', '999'])
    }
    return e
  }

  const counts = new Map<string, number>()
  let accepted = 0
  let fiveHundreds = 0
  for (let i = 0; i < N; i++) {
    const raw =
      rand() < 0.02 ? pick(['%%%', 'eyJ', '', 'e30=']) : Buffer.from(JSON.stringify(mutate())).toString('base64')
    const res = await proxy.inject({ url: paidPath, headers: raw === '' ? {} : { 'payment-signature': raw } })
    if (res.statusCode < 300 && ++accepted < 3) t.fail(`accepted: ${Buffer.from(raw, 'base64').toString()}`)
    if (res.statusCode >= 500) {
      fiveHundreds++
      if (fiveHundreds < 5) t.fail(`5xx: ${res.body.slice(0, 300)}`)
    }
    const h = res.headers['payment-required']
    const reason = typeof h === 'string' ? (decodeRequired(h).error ?? String(res.statusCode)) : String(res.statusCode)
    counts.set(reason, (counts.get(reason) ?? 0) + 1)
  }
  t.equal(accepted, 0, 'none accepted')
  t.equal(fiveHundreds, 0, 'no 5xx')
  t.ok(
    counts.size >= 10,
    `refused for ${counts.size} reasons: ${JSON.stringify([...counts].sort((x, y) => y[1] - x[1]))}`,
  )

  const ch = await deps.db.selectFrom('batch_channels').select('charged').executeTakeFirstOrThrow()
  t.equal(ch.charged, '1000', 'the channel charge did not move')
  const res = await proxy.inject({
    url: paidPath,
    headers: { 'payment-signature': Buffer.from(JSON.stringify(base)).toString('base64') },
  })
  t.equal(res.statusCode, 200, 'the next valid voucher is served')
})
