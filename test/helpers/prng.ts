/**
 * mulberry32: a small seeded PRNG, so a fuzz run can be replayed exactly (FUZZ_SEED).
 * @example const rand = prng(42); rand() // a float in [0, 1)
 */
export function prng(seed: number): () => number {
  return () => {
    seed |= 0
    seed = (seed + 0x6d2b79f5) | 0
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}
