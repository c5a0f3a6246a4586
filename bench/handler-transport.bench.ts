/**
 * What one round trip to a handler costs by transport (`npm run bench:transport`), a trivial call
 * (small JSON in and out) and a 256 KB binary answer, each on its own:
 *   thread   Piscina worker thread in this process (the pool before issue #22)
 *   frames   length-prefixed frames over a socketpair to a child process (src/pool/frame-codec.ts, what the pool uses)
 *   ipc      child_process.fork IPC, `advanced` (V8) serialization
 *   ipc-json fork IPC, JSON serialization (cannot carry bytes as bytes)
 *   http     HTTP/1.1 over a Unix socket, undici keep-alive, to a child's node:http server
 * Prints calls/s, p99 and CPU per call (this process, and the child from /proc). Nothing asserted.
 *
 *   node --import tsx bench/handler-transport.bench.ts [seconds] [concurrency]
 */
import { fork, spawn, type ChildProcess } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Piscina } from 'piscina'
import { Agent, request } from 'undici'
import { FRAME, FrameReader, writeFrame } from '../src/pool/frame-codec.js'
import { answer } from './transport-answer.js'

const seconds = Number(process.argv[2] ?? 3)
const concurrency = Number(process.argv[3] ?? 16)
const self = fileURLToPath(import.meta.url)
const task = {
  file: '/srv/handlers/echo/index.js',
  slug: 'echo',
  input: { msg: 'hello', n: 3 },
  ctx: { method: 'POST', accept: '*/*', providers: {}, allowPrivateNetwork: false },
}

// ---- the far side, when this file runs as a child or a worker ----
const role = process.env.TRANSPORT_ROLE
const size = Number(process.env.TRANSPORT_SIZE ?? 0)
if (role === 'frames') {
  const channel = new (await import('node:net')).Socket({ fd: 3, readable: true, writable: true })
  const reader = new FrameReader((f) => {
    const out = answer((f.meta as typeof task).input, size)
    const text = typeof out.body === 'string'
    writeFrame(
      channel,
      f.id,
      FRAME.result,
      { kind: 'ok', status: out.status, contentType: out.contentType, text },
      text ? Buffer.from(out.body as string) : (out.body as Uint8Array),
    )
  })
  channel.on('data', (c: Buffer) => reader.push(c))
  channel.on('end', () => process.exit(0))
} else if (role === 'ipc') {
  process.on('message', (m: { id: number; task: typeof task }) =>
    process.send!({ id: m.id, out: answer(m.task.input, size) }),
  )
} else if (role === 'http') {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const out = answer(JSON.parse(Buffer.concat(chunks).toString()).input, size)
      res.writeHead(200, { 'content-type': out.contentType, 'x-kind': out.kind })
      res.end(out.body)
    })
  })
  server.keepAliveTimeout = 60_000
  server.listen(process.env.TRANSPORT_SOCKET!, () => process.send!('ready'))
} else {
  await main()
}

async function main() {
  const cpuOf = (pid: number) => {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(f[11]) + Number(f[12])) * 10_000 // clock ticks (100/s) to µs
  }
  const rows: string[] = []
  for (const bytes of [0, 256 * 1024]) {
    for (const kind of ['thread', 'frames', 'ipc', 'ipc-json', 'http'] as const) {
      const env = {
        ...process.env,
        TRANSPORT_ROLE: kind.startsWith('ipc') ? 'ipc' : kind,
        TRANSPORT_SIZE: String(bytes),
      }
      let call: () => Promise<unknown>
      let child: ChildProcess | undefined
      let close: () => Promise<unknown>
      if (kind === 'thread') {
        const pool = new Piscina({
          filename: fileURLToPath(new URL('./transport-answer.ts', import.meta.url)),
          minThreads: 1,
          maxThreads: 1,
          execArgv: process.execArgv,
        })
        call = () => pool.run({ ...task, size: bytes })
        close = () => pool.destroy()
      } else if (kind === 'frames') {
        child = spawn(process.execPath, [...process.execArgv, self], {
          env,
          stdio: ['ignore', 'inherit', 'inherit', 'pipe'],
        })
        const channel = child.stdio[3] as Socket
        const pending = new Map<number, (a: unknown) => void>()
        let next = 1
        const reader = new FrameReader((f) => {
          const meta = f.meta as { text: boolean }
          pending.get(f.id)!({ ...meta, body: meta.text ? f.body!.toString() : f.body })
          pending.delete(f.id)
        })
        channel.on('data', (c: Buffer) => reader.push(c))
        call = () =>
          new Promise((r) => {
            const id = next++
            pending.set(id, r)
            writeFrame(channel, id, FRAME.call, task)
          })
        close = async () => channel.end()
      } else if (kind === 'ipc' || kind === 'ipc-json') {
        child = fork(self, [], { env, execArgv: process.execArgv, serialization: kind === 'ipc' ? 'advanced' : 'json' })
        const pending = new Map<number, (a: unknown) => void>()
        let next = 1
        child.on('message', (m: { id: number; out: unknown }) => {
          pending.get(m.id)!(m.out)
          pending.delete(m.id)
        })
        call = () =>
          new Promise((r) => {
            const id = next++
            pending.set(id, r)
            child!.send({ id, task })
          })
        close = async () => child!.kill()
      } else {
        const socket = path.join(tmpdir(), `tollgate-transport-${process.pid}.sock`)
        rmSync(socket, { force: true })
        child = fork(self, [], { env: { ...env, TRANSPORT_SOCKET: socket }, execArgv: process.execArgv })
        await new Promise((r) => child!.once('message', r))
        const agent = new Agent({ connect: { socketPath: socket }, connections: concurrency })
        call = async () => {
          const res = await request('http://handlers/run', {
            method: 'POST',
            body: JSON.stringify(task),
            dispatcher: agent,
          })
          return { kind: res.headers['x-kind'], body: Buffer.from(await res.body.arrayBuffer()) }
        }
        close = async () => {
          await agent.close()
          child!.kill()
        }
      }
      for (let i = 0; i < 500; i++) await call() // warm
      const cpu0 = process.cpuUsage()
      const child0 = child ? cpuOf(child.pid!) : 0
      const lat: number[] = []
      const end = performance.now() + seconds * 1000
      const t0 = performance.now()
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (performance.now() < end) {
            const a = performance.now()
            await call()
            lat.push(performance.now() - a)
          }
        }),
      )
      const elapsed = (performance.now() - t0) / 1000
      const own = process.cpuUsage(cpu0)
      const childUs = child ? cpuOf(child.pid!) - child0 : 0
      await close()
      lat.sort((a, b) => a - b)
      const n = lat.length
      rows.push(
        `| ${bytes ? '256 KB binary' : 'small JSON'} | ${kind} | ${Math.round(n / elapsed)} | ${lat[Math.floor(n * 0.99)]!.toFixed(2)} | ${((own.user + own.system) / n).toFixed(1)} | ${(childUs / n).toFixed(1)} | ${((own.user + own.system + childUs) / n).toFixed(1)} |`,
      )
      process.stderr.write(`${rows.at(-1)}\n`)
    }
  }
  console.log(`\n${seconds} s per case, ${concurrency} calls in flight, node ${process.version}\n`)
  console.log(
    '| answer | transport | calls/s | p99 ms | CPU µs/call, this process (threads included) | child | total |',
  )
  console.log('|---|---|---:|---:|---:|---:|---:|')
  for (const r of rows) console.log(r)
  process.exit(0)
}
