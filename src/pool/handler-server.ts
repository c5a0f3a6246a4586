import { chmodSync, existsSync, unlinkSync } from 'node:fs'
import { createServer, type Socket } from 'node:net'
import { FRAME, FrameReader } from './frame-codec.js'
import { MAX_HANDLER_TIMEOUT_MS } from './handler-contract.js'
import { formatHandlerAddress, type HandlerAddress } from './handler-address.js'
import type { HandlerPool, PoolOutcome } from './handler-pool.js'
import { handlerFile } from './handler-registry.js'
import { readCall, writeAnswer, type RemoteCall } from './pool-messages.js'

export interface HandlerServer {
  /** where it listens, as HANDLERS_URL writes it */
  address: string
  close(): Promise<void>
}

/**
 * The `handlers` role's listener: runs the calls proxies send (remote-pool.ts) in `pool`, whose
 * handler processes it supervises; it never runs handler code itself. A call names its handler by
 * slug and file; only a handler folder under `dirs` is run (the proxy's file when it is one of
 * them, else the same slug found there, for a proxy whose build sits at another path).
 */
export async function serveHandlers(
  pool: HandlerPool,
  listen: HandlerAddress,
  dirs: readonly string[],
): Promise<HandlerServer> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.setNoDelay(true)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    const reader = new FrameReader((frame) => {
      if (frame.type !== FRAME.call) return
      const call = readCall<RemoteCall>(frame)
      void answer(call).then((out) => {
        if (!socket.destroyed) writeAnswer(socket, frame.id, out)
      })
    })
    socket.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk)
      } catch {
        socket.destroy() // not a proxy speaking our framing
      }
    })
  })
  // a handler's file, by slug and the proxy's file for it (the folders do not change while running)
  const files = new Map<string, string>()
  const answer = async (call: RemoteCall): Promise<PoolOutcome> => {
    const key = `${call.slug}\0${call.file}`
    let file = files.get(key)
    if (!file && (file = resolveHandler(call, dirs)) && files.size < 10_000) files.set(key, file)
    if (!file)
      return {
        kind: 'error',
        message: `the handlers role has no handler ${JSON.stringify(call.slug)} (is it the same build as the proxy?)`,
      }
    const timeoutMs = Math.min(Math.max(Number(call.timeoutMs) || 0, 1), MAX_HANDLER_TIMEOUT_MS)
    return pool.run({ file, slug: call.slug, io: call.io === true }, call.input, call.ctx, timeoutMs)
  }
  // a socket file left by a previous run that did not close would refuse the listen
  if ('path' in listen && existsSync(listen.path)) unlinkSync(listen.path)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen('path' in listen ? { path: listen.path } : { host: listen.host, port: listen.port }, () => resolve())
  })
  // only this user's processes may ask a handler to run
  if ('path' in listen) chmodSync(listen.path, 0o600)
  const bound = server.address()
  const address =
    'path' in listen || typeof bound !== 'object' || !bound ? listen : { host: listen.host, port: bound.port }
  return {
    address: formatHandlerAddress(address),
    close: async () => {
      const closed = new Promise<void>((r) => server.close(() => r()))
      for (const s of sockets) s.destroy()
      await closed
    },
  }
}

function resolveHandler(call: RemoteCall, dirs: readonly string[]): string | undefined {
  if (typeof call.slug !== 'string' || !/^[a-z0-9][a-z0-9-]*$/.test(call.slug)) return undefined
  for (const dir of dirs) if (handlerFile(call.slug, dir) === call.file) return call.file
  for (const dir of dirs) {
    const f = handlerFile(call.slug, dir)
    if (f) return f
  }
  return undefined
}
