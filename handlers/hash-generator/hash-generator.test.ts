import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Out = { digests: Record<string, string>; hmac: boolean; inputBytes: number }

t.test('example is valid and runs', async (t) => {
  const out = okBody<Out>(await runInline(handler, handler.example))
  t.equal(out.digests.sha256, 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
})

t.test('known digests of "abc"', async (t) => {
  const out = okBody<Out>(
    await runInline(handler, {
      text: 'abc',
      algorithms: ['md5', 'sha1', 'sha256', 'sha512', 'sha3-256', 'keccak256', 'ripemd160'],
    }),
  )
  t.same(out.digests, {
    md5: '900150983cd24fb0d6963f7d28e17f72',
    sha1: 'a9993e364706816aba3e25717850c26c9cd0d89d',
    sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    sha512:
      'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f',
    'sha3-256': '3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532',
    keccak256: '4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45',
    ripemd160: '8eb208f7e05d987a9b044a8e98c6b087f15a0bfc',
  })
  t.equal(out.inputBytes, 3)
  t.equal(out.hmac, false)
})

t.test('empty input', async (t) => {
  const out = okBody<Out>(await runInline(handler, { text: '', algorithms: ['sha256', 'keccak256', 'sha3-256'] }))
  t.equal(out.digests.sha256, 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
  t.equal(out.digests.keccak256, 'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470')
  t.equal(out.digests['sha3-256'], 'a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a')
})

t.test('HMAC (RFC 2104 examples from Wikipedia)', async (t) => {
  const out = okBody<Out>(
    await runInline(handler, {
      text: 'The quick brown fox jumps over the lazy dog',
      hmacKey: 'key',
      algorithms: ['md5', 'sha256'],
    }),
  )
  t.equal(out.hmac, true)
  t.equal(out.digests.md5, '80070713463e7749b90c2dc24911e275')
  t.equal(out.digests.sha256, 'f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8')
})

t.test('hex and base64 input, base64 output', async (t) => {
  const hex = okBody<Out>(
    await runInline(handler, {
      text: '0x616263',
      inputEncoding: 'hex',
      algorithms: ['sha256'],
      outputEncoding: 'base64',
    }),
  )
  t.equal(
    hex.digests.sha256,
    Buffer.from('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'hex').toString('base64'),
  )
  const b64 = okBody<Out>(await runInline(handler, { text: 'YWJj', inputEncoding: 'base64', algorithms: ['md5'] }))
  t.equal(b64.digests.md5, '900150983cd24fb0d6963f7d28e17f72')
})

t.test('GET query strings are coerced (single value becomes an array)', async (t) => {
  const out = okBody<Out>(await runInline(handler, { text: 'abc', algorithms: 'sha1' }, { from: 'query' }))
  t.same(Object.keys(out.digests), ['sha1'])
})

t.test('invalid input names the field', async (t) => {
  const badAlgo = await runInline(handler, { text: 'abc', algorithms: ['sha999'] })
  t.match(badAlgo, { ok: false, status: 400, field: 'algorithms.0' })
  const missing = await runInline(handler, {})
  t.match(missing, { ok: false, status: 400, field: 'text' })
  const badHex = await runInline(handler, { text: 'abz', inputEncoding: 'hex' })
  t.match(badHex, { ok: false, status: 400, field: 'text' })
  const badB64 = await runInline(handler, { text: 'a!bc', inputEncoding: 'base64' })
  t.match(badB64, { ok: false, status: 400, field: 'text' })
})

t.test('text over the documented 1,000,000-character limit is rejected', async (t) => {
  const out = await runInline(handler, { text: 'a'.repeat(1_000_001) })
  t.match(out, { ok: false, status: 400, field: 'text' })
  okBody<Out>(await runInline(handler, { text: 'a'.repeat(1_000_000), algorithms: ['sha256'] }))
})
