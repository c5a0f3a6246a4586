/**
 * Calls and their answers as frames (frame-codec.ts): the one place that knows which fields go in
 * a frame's JSON meta and which in its raw body. Used between the proxy and handler processes and
 * between the proxy and the `handlers` role.
 */
import type { Socket } from 'node:net'
import { FRAME, writeFrame, type Frame } from './frame-codec.js'
import type { PoolOutcome } from './pool-types.js'
import type { PoolResult, PoolTask } from './run-task.js'

/** A call sent to the `handlers` role: the task, its lane and its time limit. */
export interface RemoteCall extends PoolTask {
  io: boolean
  timeoutMs: number
}

export function writeCall(socket: Socket, id: number, call: PoolTask | RemoteCall): boolean {
  return writeFrame(socket, id, FRAME.call, call)
}

export function readCall<T extends PoolTask | RemoteCall>(frame: Frame): T {
  return frame.meta as T
}

/** An answer (a handler process's PoolResult, or the role's PoolOutcome); an ok body travels raw. */
export function writeAnswer(socket: Socket, id: number, out: PoolResult | PoolOutcome): boolean {
  if (out.kind !== 'ok') return writeFrame(socket, id, FRAME.result, out)
  const text = typeof out.body === 'string'
  const body = text ? Buffer.from(out.body as string) : (out.body as Uint8Array)
  return writeFrame(
    socket,
    id,
    FRAME.result,
    { kind: 'ok', status: out.status, contentType: out.contentType, text },
    body,
  )
}

export function readAnswer<T extends PoolResult | PoolOutcome>(frame: Frame): T {
  const meta = frame.meta as { kind: string; status: number; contentType: string; text?: boolean }
  if (meta.kind !== 'ok') return meta as T
  const body = meta.text ? (frame.body?.toString('utf8') ?? '') : (frame.body ?? new Uint8Array(0))
  return { kind: 'ok', status: meta.status, contentType: meta.contentType, body } as T
}
