/**
 * 10,000 mutated `deferred` payloads through the proxy (in-process inject), from a seeded PRNG
 * (FUZZ_SEED; TOLLGATE_SOAK=1 for 100,000): every field of the voucher, its signature and a
 * deposit (authorization and permit) and of the envelope around them, in type, length, hex case and
 * range, missing and extra, and signed vouchers that break the aggregation rules (aggregate, nonce,
 * timestamp) or name another escrow, seller, asset or chain. Every answer is a 402 (a 400 where the
 * envelope cannot be read) naming the reason, never a 5xx; nothing is recorded or charged (ledger
 * rows and the voucher store unchanged) and the next valid voucher is still accepted afterwards.
 *
 * Each case carries at least one breaking mutation; cosmetic ones (hex case, unknown fields, a
 * uint as a decimal string), which leave the voucher the same voucher, are only added on top.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { getAddress, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { reasons } from '../../../src/x402/reasons.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import type { DeferredVoucher } from '../../../src/schemes/deferred/typed-data.js'
import { deferredBuyer, deferredHeader, voucherWire } from '../../helpers/deferred-buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { prng } from '../../helpers/prng.js'
import { until } from '../../helpers/until.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')
const ECHO = '/tollgate/toolbox/echo?msg=fuzz'
const N = process.env.TOLLGATE_SOAK === '1' ? 100_000 : 10_000
const seed = Number(process.env.FUZZ_SEED ?? 24)

const platform = await startTestPlatform(t, { proxy: { handlersDir: fixtures } })
const { deps, proxy, devnet } = platform
await deps.db
  .updateTable('endpoints')
  .set({ schemes: ['exact', 'deferred'] })
  .where('slug', '=', 'echo')
  .execute()
await announceRegistryChange(deps)
await until(
  'the proxy offers deferred',
  async () => decodeRequired((await proxy.inject(ECHO)).headers['payment-required'] as string).accepts.length === 2,
)

type Json = Record<string, unknown>
interface Case {
  /** what was done, for the failure message */
  what: string[]
  envelope: unknown
  /** the raw header instead of the envelope's base64 (truncated, not base64) */
  raw?: string
  /** the reason this case must be refused with, when one mutation decides it */
  expect?: string
  /** the voucher field mutated */
  field?: string
}

t.test(
  `${N} mutated deferred payloads: a named refusal each, nothing recorded or charged, a valid voucher still accepted`,
  async (t) => {
    const buyer = await deferredBuyer(devnet, 10n ** 6n)
    const seller = getAddress(devnet.accounts.receiver.address)
    await buyer.deposit(seller, 500_000n)
    const challenge = async () => {
      const r = await proxy.inject({ url: ECHO, headers: { 'payer-identifier': buyer.address } })
      const required = decodeRequired(r.headers['payment-required'] as string)
      return { required, deferred: required.accepts.find((a) => a.scheme === 'deferred')! }
    }
    const { required, deferred } = await challenge()
    const pay = async (v: DeferredVoucher, signature: Hex) =>
      proxy.inject({
        url: ECHO,
        headers: { 'payment-signature': deferredHeader(required, deferred, { voucher: voucherWire(v), signature }) },
      })
    // a stored voucher first, so that stale, value and timestamp have something to be measured against
    const v0 = buyer.voucher(deferred)
    t.equal((await pay(v0, await buyer.sign(v0))).statusCode, 200, 'the first voucher')
    const v1 = buyer.voucher(deferred, v0)
    const sig1 = await buyer.sign(v1)

    // signed vouchers that break one rule each (signing is the slow part: a pool, picked from)
    const stranger = privateKeyToAccount(generatePrivateKey())
    const other = '0x000000000000000000000000000000000000bEEF' as Address
    const signedBad: Array<[string, DeferredVoucher, Hex | undefined, string]> = [
      ['replay of v0', v0, undefined, 'invalid_deferred_evm_payload_voucher_stale'],
      [
        'nonce 0 again',
        buyer.voucher(deferred, v0, { nonce: 0n }),
        undefined,
        'invalid_deferred_evm_payload_voucher_stale',
      ],
      [
        'nonce skipped',
        buyer.voucher(deferred, v0, { nonce: 2n }),
        undefined,
        'invalid_deferred_evm_payload_voucher_stale',
      ],
      [
        'nonce far ahead',
        buyer.voucher(deferred, v0, { nonce: 2n ** 255n }),
        undefined,
        'invalid_deferred_evm_payload_voucher_stale',
      ],
      [
        'aggregate short',
        buyer.voucher(deferred, v0, { valueAggregate: v1.valueAggregate - 1n }),
        undefined,
        'invalid_deferred_evm_payload_voucher_value',
      ],
      [
        'aggregate over',
        buyer.voucher(deferred, v0, { valueAggregate: v1.valueAggregate + 1n }),
        undefined,
        'invalid_deferred_evm_payload_voucher_value',
      ],
      [
        'aggregate unchanged',
        buyer.voucher(deferred, v0, { valueAggregate: v0.valueAggregate }),
        undefined,
        'invalid_deferred_evm_payload_voucher_value',
      ],
      [
        'aggregate uint256 max',
        buyer.voucher(deferred, v0, { valueAggregate: 2n ** 256n - 1n }),
        undefined,
        'invalid_deferred_evm_payload_voucher_value',
      ],
      [
        'new id over the price',
        buyer.voucher(deferred, undefined, { valueAggregate: 2n * BigInt(deferred.amount) }),
        undefined,
        'invalid_deferred_evm_payload_voucher_value',
      ],
      [
        'new id zero',
        buyer.voucher(deferred, undefined, { valueAggregate: 0n }),
        undefined,
        'invalid_deferred_evm_payload_voucher_value',
      ],
      [
        'same timestamp',
        buyer.voucher(deferred, v0, { timestamp: v0.timestamp }),
        undefined,
        'invalid_deferred_evm_payload_voucher_timestamp',
      ],
      [
        'earlier timestamp',
        buyer.voucher(deferred, v0, { timestamp: v0.timestamp - 100n }),
        undefined,
        'invalid_deferred_evm_payload_voucher_timestamp',
      ],
      [
        'timestamp 0',
        buyer.voucher(deferred, v0, { timestamp: 0n }),
        undefined,
        'invalid_deferred_evm_payload_voucher_timestamp',
      ],
      [
        'another escrow',
        buyer.voucher(deferred, v0, { escrow: other }),
        undefined,
        'invalid_deferred_evm_payload_voucher_mismatch',
      ],
      [
        'another seller',
        buyer.voucher(deferred, v0, { seller: other }),
        undefined,
        'invalid_deferred_evm_payload_voucher_mismatch',
      ],
      [
        'another asset',
        buyer.voucher(deferred, v0, { asset: other }),
        undefined,
        'invalid_deferred_evm_payload_voucher_mismatch',
      ],
      [
        'another chain',
        buyer.voucher(deferred, v0, { chainId: 1n }),
        undefined,
        'invalid_deferred_evm_payload_voucher_mismatch',
      ],
      [
        'signed by a stranger',
        v1,
        await stranger.signTypedData(
          (await import('../../../src/schemes/deferred/typed-data.js')).voucherTypedData(v1),
        ),
        'invalid_deferred_evm_payload_signature',
      ],
      [
        'another buyer, signed by the buyer',
        { ...v1, buyer: stranger.address },
        undefined,
        'invalid_deferred_evm_payload_signature',
      ],
    ]
    const signedPool = await Promise.all(
      signedBad.map(async ([what, v, s, reason]) => ({
        what,
        voucher: { ...voucherWire(v), nonce: v.nonce.toString() },
        signature: s ?? (await buyer.sign(v)),
        reason,
      })),
    )

    const rnd = prng(seed)
    const int = (n: number) => Math.floor(rnd() * n)
    const pick = <T>(a: readonly T[]): T => a[int(a.length)]!
    const hex = (bytes: number) => `0x${Array.from({ length: bytes * 2 }, () => '0123456789abcdef'[int(16)]).join('')}`
    const junk: unknown[] = [
      null,
      true,
      false,
      0,
      -1,
      1.5,
      Infinity /* JSON null */,
      2 ** 53,
      -(2 ** 53),
      Number.MAX_SAFE_INTEGER + 2,
      '',
      ' ',
      '0x',
      '0X00',
      'null',
      '-1',
      '01',
      '1e3',
      '0x10',
      '115792089237316195423570985008687907853269984665640564039457584007913129639936' /* 2^256 */,
      '18446744073709551616' /* 2^64 */,
      '9'.repeat(80),
      [],
      [1],
      {},
      { x: 1 },
      '__proto__',
      '💸',
      '\u0000',
      'A'.repeat(3000),
      hex(19),
      hex(21),
      hex(31),
      hex(33),
      hex(65).slice(0, -1),
      `0x${'g'.repeat(40)}`,
      hex(20).slice(2),
    ]
    const voucherFields = [
      'id',
      'buyer',
      'seller',
      'valueAggregate',
      'asset',
      'timestamp',
      'nonce',
      'escrow',
      'chainId',
    ] as const
    const addressFields = new Set(['buyer', 'seller', 'asset', 'escrow'])
    const uintFields = new Set(['valueAggregate', 'timestamp', 'nonce', 'chainId'])
    // an unsigned deposit of the right shape (its signatures are not the buyer's): refused `deposit` at best
    const expiry = Math.floor(Date.now() / 1000) + 3600
    const baseDeposit = (): Json => ({
      authorization: {
        buyer: buyer.address,
        seller,
        asset: devnet.usdcAddress,
        amount: '10000',
        nonce: hex(32),
        expiry,
        signature: hex(65),
      },
      ...(rnd() < 0.5
        ? {
            permit: {
              owner: buyer.address,
              spender: getAddress(devnet.deferredEscrowAddress),
              value: '10000',
              nonce: '0',
              deadline: expiry,
              domain: { name: 'USDC', version: '2' },
              signature: hex(65),
            },
          }
        : {}),
    })

    /** a uint's wrong value for `field` (shape fine): breaks the signature or the requirement match */
    const otherUint = (field: string, v: bigint): [bigint, string] => {
      if (field === 'chainId') return [v + 1n + BigInt(int(1000)), 'invalid_deferred_evm_payload_voucher_mismatch']
      return [
        pick([v + 1n, v === 0n ? 7n : v - 1n, v * 2n + 3n, 2n ** 64n - 1n]),
        'invalid_deferred_evm_payload_signature',
      ]
    }
    const outOfRange = (field: string) =>
      field === 'timestamp'
        ? pick(['18446744073709551616', '99999999999999999999'])
        : pick(['115792089237316195423570985008687907853269984665640564039457584007913129639936', '9'.repeat(79)])

    function mutateVoucher(voucher: Json, c: Case, not?: string) {
      // a second mutation of the same field could undo the first (v + 1, then - 1)
      const field = pick(voucherFields.filter((f) => f !== not))
      c.field = field
      const kind = int(7)
      if (kind === 0) {
        delete voucher[field]
        c.what.push(`voucher.${field} missing`)
        c.expect = 'invalid_payload'
      } else if (kind === 1) {
        voucher[field] = pick(junk)
        c.what.push(`voucher.${field} = ${JSON.stringify(voucher[field])?.slice(0, 40)}`)
        // some junk is a well-formed value of the field (e.g. 0 for nonce): any reason then
        c.expect = undefined
      } else if (kind === 2 && uintFields.has(field)) {
        voucher[field] = outOfRange(field)
        c.what.push(`voucher.${field} out of range`)
        c.expect = 'invalid_payload'
      } else if (kind === 3 && uintFields.has(field)) {
        const [n, reason] = otherUint(
          field,
          BigInt(
            typeof voucher[field] === 'number' || /^[0-9]+$/.test(String(voucher[field]))
              ? (voucher[field] as string | number)
              : 0,
          ),
        )
        voucher[field] = rnd() < 0.5 ? n.toString() : n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString()
        c.what.push(`voucher.${field} = ${n}`)
        c.expect = reason
      } else if (kind === 4 && addressFields.has(field)) {
        voucher[field] = pick([
          hex(20),
          other,
          getAddress(devnet.accounts.demoPayer.address),
          '0x0000000000000000000000000000000000000000',
        ])
        c.what.push(`voucher.${field} another address`)
        c.expect =
          field === 'buyer' ? 'invalid_deferred_evm_payload_signature' : 'invalid_deferred_evm_payload_voucher_mismatch'
      } else if (kind === 5 && (field === 'id' || addressFields.has(field))) {
        // one byte more or less, or a character that is not hex
        const s = String(voucher[field])
        voucher[field] = pick([s.slice(0, -2), `${s}00`, `${s.slice(0, -1)}z`, s.slice(2)])
        c.what.push(`voucher.${field} wrong length or not hex`)
        c.expect = 'invalid_payload'
      } else if (field === 'id') {
        voucher.id = hex(32)
        c.what.push('voucher.id another id')
        c.expect = 'invalid_deferred_evm_payload_signature'
      } else {
        voucher[field] = typeof voucher[field] === 'number' ? -1 - Math.abs(voucher[field] as number) : [voucher[field]]
        c.what.push(`voucher.${field} negative or an array`)
        c.expect = 'invalid_payload'
      }
    }

    function mutateSignature(payload: Json, c: Case) {
      const s = payload.signature as string
      const r = s.slice(2, 66)
      const kind = int(8)
      const flipped = (i: number) => `${s.slice(0, i)}${s[i] === 'a' ? 'b' : 'a'}${s.slice(i + 1)}`
      if (kind === 0) {
        // shorter: still hex bytes when an even number of digits is left (then only recovery refuses it)
        const digits = int(130)
        ;[payload.signature, c.expect] = [
          s.slice(0, 2 + digits),
          digits > 0 && digits % 2 === 0 ? 'invalid_deferred_evm_payload_signature' : 'invalid_payload',
        ]
      } else if (kind === 1)
        [payload.signature, c.expect] = [`${s}${hex(1 + int(40)).slice(2)}`, 'invalid_deferred_evm_payload_signature']
      else if (kind === 2)
        [payload.signature, c.expect] = [flipped(2 + int(128)), 'invalid_deferred_evm_payload_signature']
      else if (kind === 3) {
        // v out of {27, 28}, or the high-s twin of the signature (EIP-2 refuses it)
        const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
        const sHigh = (n - BigInt(`0x${s.slice(66, 130)}`)).toString(16).padStart(64, '0')
        payload.signature =
          rnd() < 0.5
            ? `${s.slice(0, 130)}${pick(['00', '01', '1d', 'ff'])}`
            : `0x${r}${sHigh}${s.slice(130) === '1b' ? '1c' : '1b'}`
        c.expect = 'invalid_deferred_evm_payload_signature'
      } else if (kind === 4) [payload.signature, c.expect] = [pick(junk), undefined]
      else if (kind === 5) [payload.signature, c.expect] = [hex(2049), 'invalid_payload']
      else if (kind === 6) [payload.signature, c.expect] = [s.slice(2), 'invalid_payload']
      else {
        delete payload.signature
        c.expect = 'invalid_payload'
      }
      c.what.push(`signature mutation ${kind}`)
    }

    function mutateDeposit(payload: Json, c: Case) {
      const deposit = baseDeposit()
      payload.deposit = deposit
      const inPermit = deposit.permit !== undefined && rnd() < 0.5
      const o = (inPermit ? deposit.permit : deposit.authorization) as Json
      const keys = Object.keys(o)
      const key = pick(keys)
      const kind = int(4)
      if (kind === 0) {
        delete o[key]
        c.expect = 'invalid_payload'
      } else if (kind === 1) {
        o[key] = pick(junk)
        c.expect = undefined
      } else if (kind === 2) {
        // wrong values of the right shape: the checks name the deposit
        if (key === 'domain') o.domain = { name: 'Other', version: '9' }
        else if (typeof o[key] === 'string' && (o[key] as string).startsWith('0x'))
          o[key] = hex(((o[key] as string).length - 2) / 2)
        else o[key] = rnd() < 0.5 ? '1' : 0
        c.expect = 'invalid_deferred_evm_payload_deposit'
      } else {
        // the payload's deposit itself not an object, or the older draft's name
        if (rnd() < 0.5) payload.deposit = pick([[], 'deposit', 1, null])
        else {
          delete payload.deposit
          payload.depositAuthorization = deposit.authorization
        }
        c.expect = payload.deposit === null ? undefined : 'invalid_payload'
      }
      c.what.push(`deposit${inPermit ? '.permit' : '.authorization'}.${key} mutation ${kind}`)
    }

    function mutateEnvelope(env: Json, c: Case) {
      const kind = int(8)
      const accepted = env.accepted as Json
      if (kind === 0) [env.x402Version, c.expect] = [pick([1, 3, 0, '2', null]), undefined]
      else if (kind === 1) [accepted.amount, c.expect] = [pick(['999', '1001', '0', 1000]), undefined]
      else if (kind === 2) [accepted.payTo, c.expect] = [other, undefined]
      else if (kind === 3)
        [accepted.extra, c.expect] = [{ ...(accepted.extra as Json), escrow: other }, 'accepted_requirements_mismatch']
      else if (kind === 4) [accepted.network, c.expect] = [pick(['eip155:1', 'eip155:8453', 'solana:x', '']), undefined]
      else if (kind === 5) [accepted.scheme, c.expect] = [pick(['exact', 'Deferred', 'upto', '']), undefined]
      else if (kind === 6) [env.payload, c.expect] = [pick([null, [], 'payload', {}, { voucher: null }]), undefined]
      else [env.accepted, c.expect] = [pick([null, {}, 'deferred']), undefined]
      c.what.push(`envelope mutation ${kind}`)
    }

    /** mutations that leave the voucher the same voucher: only ever on top of a breaking one */
    function cosmetic(env: Json, c: Case) {
      const payload = env.payload as Json
      const voucher = payload.voucher as Json
      const kind = int(4)
      if (kind === 0)
        for (const f of addressFields) voucher[f] = (voucher[f] as string).toUpperCase().replace(/^0X/, '0x')
      else if (kind === 1) voucher.id = (voucher.id as string).toUpperCase().replace(/^0X/, '0x')
      else if (kind === 2) Object.assign(pick([voucher, payload, env]), { extra: pick(junk), [`x${int(9)}`]: 1 })
      else for (const f of uintFields) voucher[f] = String(voucher[f])
      c.what.push(`cosmetic ${kind}`)
    }

    function makeCase(): Case {
      const c: Case = { what: [], envelope: undefined }
      const useSigned = rnd() < 0.15
      const base = useSigned ? pick(signedPool) : undefined
      const env: Json = JSON.parse(
        JSON.stringify({
          x402Version: 2,
          resource: required.resource,
          accepted: deferred,
          payload: { voucher: base?.voucher ?? voucherWire(v1), signature: base?.signature ?? sig1 },
        }),
      )
      if (rnd() < 0.3) cosmetic(env, c)
      if (base) {
        c.what.push(base.what)
        c.expect = base.reason
      } else {
        const payload = env.payload as Json
        const area = rnd()
        if (area < 0.45) mutateVoucher(payload.voucher as Json, c)
        else if (area < 0.65) mutateSignature(payload, c)
        else if (area < 0.82) mutateDeposit(payload, c)
        else mutateEnvelope(env, c)
        // sometimes a second breaking mutation: the answer then names one of them
        if (rnd() < 0.15) {
          mutateVoucher(payload.voucher as Json, c, c.field)
          c.expect = undefined
        }
      }
      c.envelope = env
      if (rnd() < 0.03) {
        const b64 = Buffer.from(JSON.stringify(env)).toString('base64')
        c.raw = pick([
          b64.slice(0, int(b64.length)),
          `${b64}%`,
          'not base64 at all',
          Buffer.from(JSON.stringify(env).slice(0, -1)).toString('base64'),
        ])
        c.what.push('raw header')
        c.expect = 'invalid_payload'
      }
      return c
    }

    const snapshot = async () => ({
      payments: await deps.db.selectFrom('payments').selectAll().orderBy('id').execute(),
      vouchers: await deps.db.selectFrom('deferred_vouchers').selectAll().orderBy('id').orderBy('nonce').execute(),
    })
    const before = await snapshot()
    const statuses = new Map<number, number>()
    const byReason = new Map<string, number>()
    const failures: string[] = []
    const started = Date.now()
    for (let i = 0; i < N; i += 50) {
      const cases = Array.from({ length: Math.min(50, N - i) }, makeCase)
      const answers = await Promise.all(
        cases.map((c) =>
          proxy.inject({
            url: ECHO,
            headers: { 'payment-signature': c.raw ?? Buffer.from(JSON.stringify(c.envelope)).toString('base64') },
          }),
        ),
      )
      answers.forEach((r, k) => {
        const c = cases[k]!
        statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1)
        const header = r.headers['payment-required'] as string | undefined
        const reason = header ? decodeRequired(header).error : (r.json().error as string | undefined)
        byReason.set(String(reason), (byReason.get(String(reason)) ?? 0) + 1)
        const bad =
          r.statusCode !== 402 && r.statusCode !== 400
            ? `status ${r.statusCode}`
            : reason === undefined || !(reason in reasons)
              ? `no catalogue reason (${reason})`
              : c.expect && reason !== c.expect
                ? `${reason}, expected ${c.expect}`
                : undefined
        if (bad && failures.length < 20) failures.push(`${bad}: ${c.what.join(' + ')} ${r.body.slice(0, 200)}`)
      })
    }
    t.comment(
      `seed ${seed}: ${N} payloads in ${((Date.now() - started) / 1000).toFixed(1)} s; statuses ${JSON.stringify([...statuses])}`,
    )
    t.comment(`reasons ${JSON.stringify(Object.fromEntries([...byReason].sort((a, b) => b[1] - a[1])))}`)
    t.same(failures, [], `every answer a 402 or 400 with the expected reason (seed ${seed})`)
    t.same(await snapshot(), before, 'no ledger row and no voucher stored or changed')

    // the buyer's next valid voucher is still accepted
    const { deferred: after } = await challenge()
    t.match(
      after.extra.voucher,
      { nonce: 0, valueAggregate: v0.valueAggregate.toString() },
      'the store still holds v0 as the latest',
    )
    t.equal((await pay(v1, sig1)).statusCode, 200, 'v1 accepted')
    t.same(
      (
        await deps.db
          .selectFrom('payments')
          .select(['scheme', 'status'])
          .where('payer', '=', buyer.address.toLowerCase())
          .execute()
      ).map((r) => `${r.scheme}/${r.status}`),
      ['deferred/served', 'deferred/served'],
    )
  },
)
