/** A small seeded PRNG (sfc32) so random-case tests are reproducible: set X402_TEST_SEED to replay. */
export function seededRandom(seed: number) {
  let a = 0x9e3779b9 ^ seed
  let b = 0x243f6a88 ^ (seed * 31)
  let c = 0xb7e15162
  let d = 1
  const next = (): number => {
    a >>>= 0
    b >>>= 0
    c >>>= 0
    d >>>= 0
    const t = (a + b + d) >>> 0
    d = (d + 1) >>> 0
    a = b ^ (b >>> 9)
    b = (c + (c << 3)) >>> 0
    c = (c << 21) | (c >>> 11)
    c = (c + t) >>> 0
    return t
  }
  for (let i = 0; i < 16; i++) next()
  const rng = {
    u32: next,
    /** integer in [0, n) */
    int: (n: number): number => Math.floor((next() / 0x100000000) * n),
    bytes: (n: number): Uint8Array => {
      const out = new Uint8Array(n)
      for (let i = 0; i < n; i++) out[i] = next() & 0xff
      return out
    },
    hex: (n: number): `0x${string}` => `0x${Buffer.from(rng.bytes(n)).toString('hex')}`,
    /** uint of up to `bits` bits, biased towards small and boundary values */
    uint: (bits: number): bigint => {
      const pick = next() % 8
      if (pick === 0) return 0n
      if (pick === 1) return (1n << BigInt(bits)) - 1n
      const nbits = 1 + (next() % bits)
      const v = BigInt(`0x${Buffer.from(rng.bytes(Math.ceil(nbits / 8))).toString('hex') || '0'}`)
      return v & ((1n << BigInt(nbits)) - 1n)
    },
    pick: <T>(xs: readonly T[]): T => xs[next() % xs.length],
  }
  return rng
}

export const TEST_SEED = Number(process.env.X402_TEST_SEED ?? 402)
