import t from 'tap'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { SMART_WALLET_SIGNATURE, recoverAuthorizer } from '../../../src/chain/recover-signer.js'
import { createSignerRecovery } from '../../../src/chain/signer-recovery.js'
import { TEST_SEED, seededRandom } from '../x402/prng.js'

const require = createRequire(import.meta.url)
const secp = require('secp256k1') as {
  ecdsaSign(msg: Uint8Array, key: Uint8Array): { signature: Uint8Array; recid: number }
  privateKeyVerify(key: Uint8Array): boolean
}
const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/recover-workers')
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex')

/** valid signatures from random keys, and the usual malformed ones (high s, bad v, wrong length, smart wallet, junk) */
function cases(count: number, seed: number) {
  const rng = seededRandom(seed)
  const out: { digest: Uint8Array; signature: string; kind: string }[] = []
  for (let i = 0; i < count; i++) {
    let key = rng.bytes(32)
    while (!secp.privateKeyVerify(key)) key = rng.bytes(32)
    const digest = rng.bytes(32)
    const { signature, recid } = secp.ecdsaSign(digest, key)
    const sig = `0x${hex(signature)}${(27 + recid).toString(16)}`
    const kind = ['valid', 'valid', 'valid', 'high_s', 'bad_v', 'len64', 'smart', 'odd', 'random_r', 'junk'][i % 10]!
    const r = sig.slice(2, 66)
    const s = sig.slice(66, 130)
    const signature2 =
      kind === 'high_s'
        ? `0x${r}${(N - BigInt(`0x${s}`)).toString(16).padStart(64, '0')}${(28 - recid).toString(16)}`
        : kind === 'bad_v'
          ? `0x${r}${s}25`
          : kind === 'len64'
            ? `0x${r}${s}`
            : kind === 'smart'
              ? `${sig}${hex(rng.bytes(40))}`
              : kind === 'odd'
                ? sig.slice(0, 131)
                : kind === 'random_r'
                  ? `0x${hex(rng.bytes(32))}${s}1b`
                  : kind === 'junk'
                    ? `0x${'zz'.repeat(65)}`
                    : sig
    out.push({ digest, signature: signature2, kind })
  }
  return out
}

t.test('worker threads recover exactly what the main thread does, in batches', async (t) => {
  const recovery = createSignerRecovery({ threads: 1, offload: 'always' })
  t.teardown(() => recovery.close())
  const all = cases(3000, TEST_SEED)
  // all at once, as concurrent requests would: they travel in batches
  const got = await Promise.all(all.map((c) => recovery.recover(c.digest, c.signature)))
  let mismatches = 0
  const seen = new Map<string, number>()
  for (let i = 0; i < all.length; i++) {
    const want = recoverAuthorizer(all[i]!.digest, all[i]!.signature)
    if (got[i] !== want) mismatches++
    const k = `${all[i]!.kind}:${want === null ? 'null' : want === SMART_WALLET_SIGNATURE ? 'smart' : 'address'}`
    seen.set(k, (seen.get(k) ?? 0) + 1)
  }
  t.equal(mismatches, 0, 'every result equals the main thread recovery')
  // the sample really covers valid, refused and smart-wallet signatures
  t.equal(seen.get('valid:address'), 900)
  t.equal(seen.get('high_s:null'), 300)
  t.equal(seen.get('bad_v:null'), 300)
  t.equal(seen.get('smart:smart'), 300)
  t.ok(recovery.stats.recoveredInWorker >= 900, `recovered on the worker: ${recovery.stats.recoveredInWorker}`)
  t.ok(
    recovery.stats.batches < recovery.stats.recoveredInWorker / 4,
    `batched: ${recovery.stats.batches} batches for ${recovery.stats.recoveredInWorker} signatures`,
  )
  t.equal(recovery.stats.recoveredAfterFailure, 0)
})

t.test('a signature alone is recovered too (no batch to wait for)', async (t) => {
  const recovery = createSignerRecovery({ threads: 1, offload: 'always' })
  t.teardown(() => recovery.close())
  const [c] = cases(1, TEST_SEED + 1)
  t.equal(await recovery.recover(c!.digest, c!.signature), recoverAuthorizer(c!.digest, c!.signature))
  t.match(await recovery.recover(c!.digest, c!.signature), /^0x[0-9a-f]{40}$/)
  t.equal(recovery.stats.recoveredInWorker, 2)
})

t.test('threads: 0 recovers on the calling thread', async (t) => {
  const recovery = createSignerRecovery({ threads: 0 })
  const all = cases(200, TEST_SEED + 2)
  const got = await Promise.all(all.map((c) => recovery.recover(c.digest, c.signature)))
  t.same(
    got,
    all.map((c) => recoverAuthorizer(c.digest, c.signature)),
  )
  t.equal(recovery.stats.batches, 0)
  t.equal(recovery.stats.recoveredInline, 200)
})

t.test('by default the workers take over only while the event loop is busy', async (t) => {
  const recovery = createSignerRecovery({ threads: 1 })
  t.teardown(() => recovery.close())
  const all = cases(400, TEST_SEED + 6)
  const recoverAll = (from: number, to: number) =>
    Promise.all(all.slice(from, to).map((c) => recovery.recover(c.digest, c.signature)))
  const check = (got: unknown[], from: number) =>
    t.same(
      got,
      all.slice(from, from + got.length).map((c) => recoverAuthorizer(c.digest, c.signature)),
    )
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

  // quiet: recovered inline
  await sleep(300)
  check(await recoverAll(0, 100), 0)
  t.equal(recovery.stats.batches, 0, 'nothing sent to a worker while idle')
  t.equal(recovery.stats.recoveredInline, 100)

  // busy: keep the loop over 80% busy for a few samples, then recover
  for (let i = 0; i < 6; i++) {
    const until = performance.now() + 95
    while (performance.now() < until) {
      /* busy */
    }
    await sleep(5)
  }
  check(await recoverAll(100, 300), 100)
  t.ok(recovery.stats.recoveredInWorker > 0, `recovered on the worker while busy: ${recovery.stats.recoveredInWorker}`)

  // quiet again: back inline
  await sleep(400)
  const before = recovery.stats.batches
  check(await recoverAll(300, 400), 300)
  t.equal(recovery.stats.batches, before, 'inline again once the loop is quiet')
})

for (const fixture of ['crash.mjs', 'throws.mjs']) {
  t.test(`a failing worker (${fixture}) costs nothing but speed: its batches are recovered here`, async (t) => {
    const recovery = createSignerRecovery({ threads: 1, offload: 'always', workerFile: path.join(fixtures, fixture) })
    t.teardown(() => recovery.close())
    const all = cases(300, TEST_SEED + 3)
    const got = await Promise.all(all.map((c) => recovery.recover(c.digest, c.signature)))
    t.same(
      got,
      all.map((c) => recoverAuthorizer(c.digest, c.signature)),
    )
    t.ok(
      recovery.stats.recoveredAfterFailure >= 90,
      `recovered here after failures: ${recovery.stats.recoveredAfterFailure}`,
    )
    t.equal(recovery.stats.recoveredInWorker, 0)
    // and it keeps answering afterwards
    const [c] = cases(1, TEST_SEED + 4)
    t.equal(await recovery.recover(c!.digest, c!.signature), recoverAuthorizer(c!.digest, c!.signature))
  })
}

t.test('after close, recovery still answers (on the calling thread)', async (t) => {
  const recovery = createSignerRecovery({ threads: 1, offload: 'always' })
  await recovery.close()
  const [c] = cases(1, TEST_SEED + 5)
  t.equal(await recovery.recover(c!.digest, c!.signature), recoverAuthorizer(c!.digest, c!.signature))
})
