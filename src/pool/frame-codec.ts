/**
 * The byte framing between the proxy, the `handlers` role and handler processes: one frame per
 * message on a stream socket (a socketpair to a child, a Unix or TCP socket to the role).
 *
 *   u32 length of the rest | u32 id | u8 type | u32 meta length | meta (JSON) | body (raw bytes)
 *
 * Little-endian. The body carries a handler's output as is, so binary results (PNG, WAV, PDF)
 * cross without base64 or structured-clone copies; everything else is the small JSON meta.
 * Measured against fork IPC and HTTP over a Unix socket in bench/handler-transport.bench.ts.
 */
import type { Socket } from 'node:net'

export const FRAME = {
  /** proxy/role → handler process (or proxy → role): run a call */
  call: 1,
  /** the answer to the call with the same id */
  result: 2,
  /** a handler process is up and takes calls (id 0) */
  ready: 3,
} as const

export interface Frame {
  id: number
  type: number
  meta: unknown
  body: Buffer | undefined
}

const HEAD = 13
/** a frame larger than this is a broken or hostile peer, not a handler answer */
export const MAX_FRAME_BYTES = 1024 * 1024 * 1024

/** Writes one frame; a body is written after the head without being copied into it. */
export function writeFrame(socket: Socket, id: number, type: number, meta: unknown, body?: Uint8Array): boolean {
  const json = JSON.stringify(meta)
  const metaBytes = Buffer.byteLength(json)
  const bodyBytes = body?.byteLength ?? 0
  const head = Buffer.allocUnsafe(HEAD + metaBytes)
  head.writeUInt32LE(HEAD - 4 + metaBytes + bodyBytes, 0)
  head.writeUInt32LE(id, 4)
  head[8] = type
  head.writeUInt32LE(metaBytes, 9)
  head.write(json, HEAD, 'utf8')
  if (!bodyBytes) return socket.write(head)
  socket.cork()
  socket.write(head)
  const ok = socket.write(body!)
  socket.uncork()
  return ok
}

/**
 * Reassembles frames from stream chunks. Bytes are joined only once a whole frame is there, so a
 * large body arriving in many chunks is copied once, not once per chunk.
 *
 * @example
 *   const reader = new FrameReader((f) => handle(f))
 *   socket.on('data', (chunk) => reader.push(chunk))
 */
export class FrameReader {
  #chunks: Buffer[] = []
  #size = 0
  #need = 4

  constructor(private readonly onFrame: (frame: Frame) => void) {}

  /** Throws on a frame that cannot be valid (the caller drops the connection). */
  push(chunk: Buffer): void {
    this.#chunks.push(chunk)
    this.#size += chunk.length
    if (this.#size < this.#need) return
    const buf = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, this.#size)
    let off = 0
    while (buf.length - off >= 4) {
      const length = buf.readUInt32LE(off)
      if (length < HEAD - 4 || length > MAX_FRAME_BYTES) throw new Error(`bad frame length ${length}`)
      if (buf.length - off < 4 + length) break
      const metaBytes = buf.readUInt32LE(off + 9)
      if (HEAD + metaBytes > 4 + length) throw new Error(`bad frame meta length ${metaBytes}`)
      const metaEnd = off + HEAD + metaBytes
      const end = off + 4 + length
      const frame: Frame = {
        id: buf.readUInt32LE(off + 4),
        type: buf[off + 8]!,
        meta: JSON.parse(buf.toString('utf8', off + HEAD, metaEnd)),
        body: end > metaEnd ? buf.subarray(metaEnd, end) : undefined,
      }
      off = end
      this.onFrame(frame)
    }
    const rest = buf.length - off
    this.#chunks = rest ? [off ? buf.subarray(off) : buf] : []
    this.#size = rest
    this.#need = rest >= 4 ? 4 + buf.readUInt32LE(off) : 4
  }
}
