import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { keySlot } from '../../src/redis-client.js'
import { until } from './until.js'

interface T {
  teardown(fn: () => unknown): void
}

export interface RedisClusterNode {
  port: number
  process: ChildProcess
}

export interface TestRedisCluster {
  /** `redis+cluster://127.0.0.1:<p1>,…` (the three first masters as seeds) */
  url: string
  nodes: RedisClusterNode[]
  /** the port of the master serving `key`'s slot now */
  masterOf(key: string): Promise<number>
  /** a replica of the master on `port` */
  replicaOf(port: number): Promise<number>
  /** a coordinated failover (`CLUSTER FAILOVER` on a replica); resolves once that replica is master */
  failover(masterPort: number): Promise<number>
  /** kill -9 the master on `port`; resolves once its replica has been promoted and the cluster is ok */
  killMaster(masterPort: number): Promise<number>
  stop(): Promise<void>
}

/** Two ports free on loopback: `port` and its cluster bus port, `port + 10000`. */
async function freeClusterPort(taken: Set<number>): Promise<number> {
  const canBind = (port: number) =>
    new Promise<boolean>((resolve) => {
      const s = createServer()
      s.once('error', () => resolve(false))
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
    })
  for (let i = 0; i < 200; i++) {
    const port = 20_000 + Math.floor(Math.random() * 20_000)
    if (taken.has(port) || taken.has(port + 10_000)) continue
    if ((await canBind(port)) && (await canBind(port + 10_000))) return port
  }
  throw new Error('no free pair of ports (port, port + 10000) for a cluster node')
}

const admin = (port: number) =>
  new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })

/** Runs one command on the node on `port` (a fresh connection), undefined when it does not answer. */
async function ask(port: number, ...args: string[]): Promise<string | undefined> {
  const r = admin(port)
  r.on('error', () => {})
  try {
    await r.connect()
    return String(await r.call(args[0]!, ...args.slice(1)))
  } catch {
    return undefined
  } finally {
    r.disconnect()
  }
}

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    child.on('error', reject)
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} exited ${code}: ${out}`))))
  })
}

/** `CLUSTER NODES` of the node on `port`, parsed. */
async function clusterNodes(port: number) {
  const text = await ask(port, 'CLUSTER', 'NODES')
  return (text ?? '')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [id, addr, flags, masterId, , , , link, ...slots] = line.split(' ')
      return {
        id: id!,
        port: Number(addr!.split('@')[0]!.split(':')[1]),
        flags: flags!.split(','),
        masterId: masterId!,
        connected: link === 'connected',
        slots: slots.map((s) => s.split('-').map(Number) as [number, number?]),
      }
    })
}

/**
 * A real Redis Cluster on loopback: three masters and three replicas of Debian's redis-server
 * (`--cluster-enabled yes`, no persistence, in a temp dir), joined with `redis-cli --cluster
 * create … --cluster-replicas 1`; resolves once every node reports `cluster_state:ok` and every
 * replica is in sync. Stopped (and its dir removed) at teardown.
 */
export async function startRedisCluster(t: T, opts: { nodeTimeoutMs?: number } = {}): Promise<TestRedisCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-rcluster-'))
  const taken = new Set<number>()
  const nodes: RedisClusterNode[] = []
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    await Promise.all(
      nodes.map(async (n) => {
        if (n.process.exitCode !== null || n.process.signalCode !== null) return
        const exited = new Promise((r) => n.process.once('exit', r))
        n.process.kill('SIGKILL')
        await exited
      }),
    )
    await rm(dir, { recursive: true, force: true })
  }
  t.teardown(stop)
  for (let i = 0; i < 6; i++) {
    const port = await freeClusterPort(taken)
    taken.add(port).add(port + 10_000)
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        String(opts.nodeTimeoutMs ?? 1000),
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--logfile',
        join(dir, `${port}.log`),
      ],
      { stdio: 'ignore' },
    )
    child.on('error', () => {})
    nodes.push({ port, process: child })
  }
  const ports = nodes.map((n) => n.port)
  for (const port of ports)
    await until(`redis-server on ${port}`, async () => (await ask(port, 'PING')) === 'PONG', 10_000)
  await run('redis-cli', [
    '--cluster',
    'create',
    ...ports.map((p) => `127.0.0.1:${p}`),
    '--cluster-replicas',
    '1',
    '--cluster-yes',
  ])
  const healthy = async () => {
    const alive = nodes.filter((n) => n.process.exitCode === null && n.process.signalCode === null)
    for (const n of alive) {
      const info = await ask(n.port, 'CLUSTER', 'INFO')
      if (!info?.includes('cluster_state:ok')) return false
      const seen = await clusterNodes(n.port)
      if (seen.filter((s) => !s.flags.includes('fail') && s.connected).length < alive.length) return false
    }
    for (const n of alive) {
      const repl = (await ask(n.port, 'INFO', 'replication')) ?? ''
      if (repl.includes('role:slave') && !repl.includes('master_link_status:up')) return false
    }
    return true
  }
  await until('the Redis Cluster to report state ok', healthy, 30_000)

  const masterOf = async (key: string) => {
    const slot = keySlot(key)
    const alive = nodes.find((n) => n.process.exitCode === null && n.process.signalCode === null)!
    const m = (await clusterNodes(alive.port)).find(
      (n) =>
        n.flags.includes('master') &&
        !n.flags.includes('fail') &&
        n.slots.some(([a, b]) => slot >= a && slot <= (b ?? a)),
    )
    if (!m) throw new Error(`no master serves slot ${slot}`)
    return m.port
  }
  const replicaOf = async (port: number) => {
    const seen = await clusterNodes(port)
    const me = seen.find((n) => n.flags.includes('myself'))!
    const r = seen.find((n) => n.masterId === me.id && !n.flags.includes('fail'))
    if (!r) throw new Error(`the master on ${port} has no replica`)
    return r.port
  }
  const promoted = async (replica: number) =>
    until(
      `the replica on ${replica} to be promoted`,
      async () => ((await ask(replica, 'INFO', 'replication')) ?? '').includes('role:master'),
      30_000,
    )
  return {
    url: `redis+cluster://${ports
      .slice(0, 3)
      .map((p) => `127.0.0.1:${p}`)
      .join(',')}`,
    nodes,
    masterOf,
    replicaOf,
    async failover(masterPort) {
      const replica = await replicaOf(masterPort)
      const ok = await ask(replica, 'CLUSTER', 'FAILOVER')
      if (ok !== 'OK') throw new Error(`CLUSTER FAILOVER on ${replica}: ${ok}`)
      await promoted(replica)
      await until('the cluster to settle after the failover', healthy, 30_000)
      return replica
    },
    async killMaster(masterPort) {
      const replica = await replicaOf(masterPort)
      const node = nodes.find((n) => n.port === masterPort)!
      const exited = new Promise((r) => node.process.once('exit', r))
      node.process.kill('SIGKILL')
      await exited
      await promoted(replica)
      await until('cluster state ok without the killed master', healthy, 30_000)
      return replica
    },
    stop,
  }
}
