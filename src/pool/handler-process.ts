/**
 * A handler process: runs the hosted handler calls its supervisor (process-pool.ts) sends over the
 * socketpair on fd 3, one frame per call and one per answer. Started by the supervisor only.
 *
 * Whatever a handler does here (a V8 fatal error, a native crash, `process.abort()`,
 * `process.exit()`, memory without bound) ends this process and the calls in flight on it; the
 * supervisor answers those calls, voids their payments and starts a replacement.
 */
import { writeFileSync } from 'node:fs'
import { Socket } from 'node:net'
import { FRAME, FrameReader, writeFrame } from './frame-codec.js'
import { readCall, writeAnswer } from './pool-messages.js'
import { runTask, type PoolTask } from './run-task.js'

// Should the machine run out of memory, the kernel stops a handler process first, never the
// proxy, Postgres or Redis (raising one's own score needs no privilege).
try {
  writeFileSync('/proc/self/oom_score_adj', '1000')
} catch {
  // not Linux, or /proc not mounted: the supervisor's resident-memory check still applies
}

const channel = new Socket({ fd: 3, readable: true, writable: true })
const reader = new FrameReader((frame) => {
  if (frame.type !== FRAME.call) return
  void runTask(readCall<PoolTask>(frame)).then((out) => writeAnswer(channel, frame.id, out))
})
channel.on('data', (chunk: Buffer) => reader.push(chunk))
// the supervisor closed the pool or is gone: nobody will read an answer
channel.on('end', () => process.exit(0))
channel.on('error', () => process.exit(0))
writeFrame(channel, 0, FRAME.ready, { pid: process.pid })
