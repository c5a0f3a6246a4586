import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { decodeRequired, signFor, v1Header, v2Header } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { prng } from '../../helpers/prng.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')

t.test(
  '10,000 mutated payment headers through the proxy: never a 5xx, always a reason, nothing recorded',
  async (t) => {
    const platform = await startTestPlatform(t, { proxy: { handlersDir: fixtures } })
    const { proxy, deps } = platform
    const url = '/tollgate/toolbox/echo?msg=fuzz'
    const required = decodeRequired((await proxy.inject(url)).headers['payment-required'] as string)
    const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)
    const signed = await signFor(payer, required)
    const seeds = [v2Header(required, signed), v1Header('base-sepolia', signed)]
    const jsonSeeds = seeds.map((s) => Buffer.from(s, 'base64').toString('utf8'))
    const seed = Number(process.env.FUZZ_SEED ?? 402)
    const rnd = prng(seed)
    const pick = <T>(a: readonly T[]) => a[Math.floor(rnd() * a.length)]!
    const junk = [
      '',
      'null',
      '[]',
      '{}',
      '"x"',
      '1e309',
      '-1',
      '0x',
      '\u0000',
      '\ud800',
      '💸',
      '__proto__',
      '{"__proto__":{"x":1}}',
      'A'.repeat(5000),
      '99999999999999999999999999999999999999999999999999999999999999999999999999999999',
    ]

    function mutate(): { name: 'x-payment' | 'payment-signature'; value: string } {
      const which = Math.floor(rnd() * 2)
      const name = which === 0 ? 'payment-signature' : 'x-payment'
      let text = jsonSeeds[which]!
      const kind = Math.floor(rnd() * 6)
      if (kind === 0) {
        // flip characters of the JSON
        const chars = [...text]
        for (let i = 0; i < 1 + Math.floor(rnd() * 5); i++)
          chars[Math.floor(rnd() * chars.length)] = String.fromCharCode(32 + Math.floor(rnd() * 95))
        text = chars.join('')
      } else if (kind === 1) {
        // replace a value with junk
        const obj = JSON.parse(text)
        const paths = [
          ['x402Version'],
          ['payload', 'signature'],
          ['payload', 'authorization', 'value'],
          ['payload', 'authorization', 'nonce'],
          ['payload', 'authorization', 'from'],
          ['payload', 'authorization', 'validBefore'],
          ['accepted', 'amount'],
          ['accepted'],
          ['payload'],
          ['network'],
        ]
        const p = pick(paths)
        let o = obj
        for (const k of p.slice(0, -1)) o = o?.[k]
        if (o && typeof o === 'object') {
          const j = pick(junk)
          try {
            o[p.at(-1)!] = JSON.parse(j)
          } catch {
            o[p.at(-1)!] = j
          }
        }
        text = JSON.stringify(obj)
      } else if (kind === 2) {
        text = text.slice(0, Math.floor(rnd() * text.length)) // truncated
      } else if (kind === 3) {
        return {
          name,
          value: Buffer.from(text)
            .toString('base64')
            .slice(0, Math.floor(rnd() * 400)),
        } // truncated base64
      } else if (kind === 4) {
        return { name, value: pick(junk).slice(0, 8000) } // not base64 at all
      } else {
        text = text.replace(/"(\d+)"/, '$1') // numbers instead of decimal strings
      }
      return { name, value: Buffer.from(text).toString('base64') }
    }

    const before = Number(
      (
        await deps.db
          .selectFrom('payments')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    )
    const statuses = new Map<number, number>()
    let without = 0
    const N = 10_000
    for (let i = 0; i < N; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: 50 }, async () => {
          const h = mutate()
          return proxy.inject({ method: 'GET', url, headers: { [h.name]: h.value } })
        }),
      )
      for (const r of batch) {
        statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1)
        const body = r.statusCode === 200 ? null : r.json()
        if (r.statusCode >= 500 || (body && !body.error && !body.code)) without++
      }
    }
    t.notOk(
      [...statuses.keys()].some((s) => s >= 500),
      `no 5xx (seed ${seed}): ${JSON.stringify([...statuses])}`,
    )
    t.equal(without, 0, 'every refusal carries a reason')
    const after = Number(
      (
        await deps.db
          .selectFrom('payments')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    )
    // a mutation can leave the signed payment intact (e.g. an ignored field): at most that one is served
    t.ok(after - before <= 2, `at most the untouched seed payments were recorded (${after - before})`)
  },
)
