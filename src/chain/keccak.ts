/**
 * keccak-256 for the hot path: the `keccak` package's native state (N-API, prebuilt for linux-x64)
 * driven directly — about 6x faster than @noble/hashes on the 224-byte struct of a payment —
 * with @noble/hashes as the fallback wherever the native add-on does not load.
 * test/unit/x402/keccak.test.ts checks both against each other.
 */
import { createRequire } from 'node:module'
import path from 'node:path'
import { keccak_256 } from '@noble/hashes/sha3.js'

interface NativeKeccakState {
  initialize(rate: number, capacity: number): void
  absorb(data: Buffer): void
  absorbLastFewBits(bits: number): void
  squeeze(length: number): Buffer
}

function loadNative(): (() => NativeKeccakState) | undefined {
  if (process.env.TOLLGATE_NATIVE_KECCAK === 'off') return undefined
  try {
    const require = createRequire(import.meta.url)
    const dir = path.dirname(require.resolve('keccak/package.json'))
    const State = (require('node-gyp-build') as (dir: string) => unknown)(dir)
    if (typeof State !== 'function') return undefined
    const Ctor = State as new () => NativeKeccakState
    return () => new Ctor()
  } catch {
    return undefined
  }
}

const makeState = loadNative()
// one state per module: JavaScript is single-threaded and a digest never awaits
const state = makeState?.()

/** true when the native add-on is in use */
export const nativeKeccak = state !== undefined

/** keccak-256 (Ethereum's, not SHA3-256) of `data`. */
export function keccak256(data: Uint8Array): Uint8Array {
  if (!state) return keccak_256(data)
  state.initialize(1088, 512)
  state.absorb(Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength))
  state.absorbLastFewBits(0x01)
  return state.squeeze(32)
}

/** The pure-JavaScript implementation, for tests that compare the two. */
export const keccak256Js = keccak_256
