import { randomBytes } from 'node:crypto'
import t from 'tap'
import { keccak256, keccak256Js, nativeKeccak } from '../../../src/chain/keccak.js'

t.test('the native add-on loads on this platform (linux-x64 prebuild)', async (t) => {
  t.ok(nativeKeccak, 'native keccak in use')
})

t.test(
  'native and JavaScript keccak-256 agree on every length around the 136-byte rate and on random inputs',
  async (t) => {
    t.equal(
      Buffer.from(keccak256(new Uint8Array())).toString('hex'),
      'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470',
      'known empty-input digest',
    )
    let mismatches = 0
    for (let len = 0; len <= 300; len++) {
      const data = randomBytes(len)
      if (!Buffer.from(keccak256(data)).equals(Buffer.from(keccak256Js(data)))) mismatches++
    }
    for (let i = 0; i < 2000; i++) {
      const data = randomBytes(1 + (i % 1024))
      // a view into a bigger buffer: only the viewed bytes count
      const around = Buffer.concat([randomBytes(7), data, randomBytes(5)])
      const view = new Uint8Array(around.buffer, around.byteOffset + 7, data.length)
      if (!Buffer.from(keccak256(view)).equals(Buffer.from(keccak256Js(data)))) mismatches++
    }
    t.equal(mismatches, 0)
    const a = keccak256(Buffer.from('a'))
    keccak256(Buffer.from('b'))
    t.equal(
      Buffer.from(a).toString('hex'),
      Buffer.from(keccak256Js(Buffer.from('a'))).toString('hex'),
      'a digest is not overwritten by the next one',
    )
  },
)
