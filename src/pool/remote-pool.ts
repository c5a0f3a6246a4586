import { connect, type Socket } from 'node:net'
import { FRAME, FrameReader } from './frame-codec.js'
import type { HandlerAddress } from './handler-address.js'
import type { HandlerPool, PoolOutcome } from './handler-pool.js'
import { readAnswer, writeCall, type RemoteCall } from './pool-messages.js'

/** how long a call waits for a connection to the `handlers` role before it is answered */
const CONNECT_MS = 2_000
/** the role answers a call's timeout itself; past this much more the proxy stops waiting */
const GRACE_MS = 5_000
const UNREACHABLE = 'the handler processes cannot be reached'

interface Pending {
  resolve: (out: PoolOutcome) => void
  timer: NodeJS.Timeout
}

/**
 * The pool of a proxy whose hosted handlers run in the `handlers` role (HANDLERS_URL): each call
 * goes, as one frame, to the address with the fewest calls in flight, over one connection per
 * address that every call shares. The role applies the limits (lanes, queue, time, memory) and
 * answers `busy`, `timeout` and `crashed` itself. A connection that breaks answers its calls
 * `crashed` (the proxy voids their payments); the next call connects again.
 *
 * @example
 *   const pool = createRemotePool([{ path: '/run/tollgate/handlers.sock' }])
 */
export function createRemotePool(addresses: readonly HandlerAddress[]): HandlerPool {
  const links = addresses.map((a) => new Link(a))
  return {
    async run(handler, input, ctx, timeoutMs) {
      // the least busy address first; an unreachable one hands the call to the next
      const order = [...links].sort((a, b) => a.inFlight - b.inFlight)
      for (const link of order) {
        const socket = await link.connected()
        if (socket)
          return link.call(socket, {
            file: handler.file,
            slug: handler.slug,
            io: handler.io === true,
            input,
            ctx,
            timeoutMs,
          })
      }
      return {
        kind: 'crashed',
        message: `no handlers role answers at ${addresses.length} address(es)`,
        detail: UNREACHABLE,
      }
    },
    async close() {
      for (const link of links) link.close()
    },
  }
}

class Link {
  #socket: Socket | undefined
  #connecting: Promise<Socket | undefined> | undefined
  readonly #pending = new Map<number, Pending>()
  #nextId = 1
  #closed = false

  constructor(private readonly address: HandlerAddress) {}

  get inFlight(): number {
    return this.#pending.size
  }

  /** The open connection, or a new one; undefined when the role cannot be reached now. */
  connected(): Promise<Socket | undefined> {
    if (this.#socket) return Promise.resolve(this.#socket)
    if (this.#closed) return Promise.resolve(undefined)
    return (this.#connecting ??= new Promise<Socket | undefined>((resolve) => {
      const socket = connect(
        'path' in this.address ? { path: this.address.path } : { host: this.address.host, port: this.address.port },
      )
      const timer = setTimeout(() => socket.destroy(), CONNECT_MS)
      socket.setNoDelay(true)
      // the connection alone keeps no process running: a call keeps it alive through its timer
      socket.unref()
      socket.once('connect', () => {
        clearTimeout(timer)
        this.#socket = socket
        this.#connecting = undefined
        resolve(socket)
      })
      socket.on('error', () => {})
      socket.once('close', () => {
        clearTimeout(timer)
        if (this.#socket === socket) this.#lost()
        else {
          this.#connecting = undefined
          resolve(undefined)
        }
      })
      const reader = new FrameReader((frame) => {
        const p = this.#pending.get(frame.id)
        if (frame.type !== FRAME.result || !p) return
        this.#pending.delete(frame.id)
        clearTimeout(p.timer)
        p.resolve(readAnswer<PoolOutcome>(frame))
      })
      socket.on('data', (chunk: Buffer) => {
        try {
          reader.push(chunk)
        } catch {
          socket.destroy()
        }
      })
    }))
  }

  call(socket: Socket, call: RemoteCall): Promise<PoolOutcome> {
    return new Promise<PoolOutcome>((resolve) => {
      const id = this.#nextId
      this.#nextId = (this.#nextId % 0xffff_ffff) + 1
      const timer = setTimeout(() => {
        this.#pending.delete(id)
        resolve({ kind: 'timeout', timeoutMs: call.timeoutMs })
      }, call.timeoutMs + GRACE_MS)
      this.#pending.set(id, { resolve, timer })
      writeCall(socket, id, call)
    })
  }

  close(): void {
    this.#closed = true
    this.#socket?.destroy()
  }

  /** The connection broke: the role (or its host) went away with these calls. */
  #lost(): void {
    this.#socket = undefined
    for (const [id, p] of this.#pending) {
      clearTimeout(p.timer)
      p.resolve({
        kind: 'crashed',
        message: `the connection to the handlers role closed with call ${id} in flight`,
        detail: UNREACHABLE,
      })
    }
    this.#pending.clear()
  }
}
