import { Worker } from 'bullmq'
import { type Deps, withOwnServices } from '../src/deps.js'
import { processLogger } from '../src/logger.js'
import { bullConnection, queuePrefix, settlementQueue, SETTLEMENT_QUEUE } from '../src/queue/settlement-queue.js'
import { createSettler, type SettlerOptions } from '../src/services/settlement/settler.js'
import { crashHooksFromEnv } from '../src/services/settlement/test-hooks.js'
import { balanceRefresh } from './balance-refresh.js'
import { batchClaim } from './batch-claim.js'
import { deferredCollect, startThawWatch } from './deferred-collect.js'
import { ledgerPartitions } from './ledger-partitions.js'
import { relayerFundsCheck } from './relayer-funds-check.js'
import type { JobContext, JobModule } from './job.js'
import { recoverySweep } from './recovery-sweep.js'
import { settlementTick } from './settlement-tick.js'
import { topupCheck } from './topup-check.js'
import { withdrawalSweep } from './withdrawal-sweep.js'

/** Every job this role runs, by name. */
export const jobs: ReadonlyArray<JobModule<any>> = [
  settlementTick,
  recoverySweep,
  balanceRefresh,
  topupCheck,
  relayerFundsCheck,
  withdrawalSweep,
  deferredCollect,
  batchClaim,
  ledgerPartitions,
]

export interface RunningWorkers {
  close(): Promise<void>
}

export interface StartWorkersOptions {
  settler?: SettlerOptions
  /** per-job repeat overrides (tests) */
  everyMs?: Partial<Record<string, number>>
  /** how often schedulers are re-asserted, so a Redis flush cannot stop them for long */
  ensureEveryMs?: number
  /** default: a pino logger at config.logLevel */
  log?: JobContext['log']
}

/** Starts every BullMQ worker and repeatable job of this deployment; close() drains them. */
export async function startWorkers(given: Deps, opts: StartWorkersOptions = {}): Promise<RunningWorkers> {
  const { deps, close: closeServices } = withOwnServices(given)
  // TOLLGATE_TEST_CRASH_AT (tests only, refused in production) kills this process mid-batch
  const log = opts.log ?? processLogger(deps.config.logLevel)
  // the settler warns in the worker's log (replaced batches, refused rebroadcasts, failed lookups)
  const settler = createSettler(deps, {
    log,
    ...opts.settler,
    hooks: opts.settler?.hooks ?? crashHooksFromEnv(process.env, deps.config),
  })
  const queueConn = bullConnection(deps.config)
  const workerConn = bullConnection(deps.config)
  const queue = settlementQueue(deps.config, queueConn)
  const byName = new Map(jobs.map((j) => [j.name, j]))

  // Schedulers live in Redis; re-upserting them is idempotent and heals a flush.
  const ensure = async () => {
    for (const j of jobs) {
      const every = opts.everyMs?.[j.name] ?? j.everyMs?.(deps)
      if (every) await queue.upsertJobScheduler(j.name, { every }, { name: j.name, data: {}, opts: j.defaultOptions })
    }
  }
  await ensure()
  const ensureTimer = setInterval(() => void ensure().catch(() => {}), opts.ensureEveryMs ?? 10_000)
  ensureTimer.unref()
  // a Redis that comes back empty (restarted, failed over) has no schedulers: re-assert them as soon
  // as the connection is up again rather than on the next timer, so ticks stop for the outage only
  queueConn.on('ready', () => void ensure().catch(() => {}))

  const worker = new Worker(
    SETTLEMENT_QUEUE,
    async (job) => {
      const mod = byName.get(job.name)
      if (!mod) throw new Error(`unknown job ${job.name}`)
      return mod.process({ deps, settler, log, queue }, job)
    },
    { connection: workerConn, prefix: queuePrefix(deps.config), concurrency: 1 },
  )
  worker.on('error', () => {})
  // the escrow's thaws are collected as they are mined, between the collect job's runs
  const thawWatch = startThawWatch({ deps, log })

  let closed = false
  return {
    async close() {
      if (closed) return
      closed = true
      clearInterval(ensureTimer)
      // lets the running job finish, then stops taking new ones
      await thawWatch.close()
      await worker.close()
      await queue.close()
      queueConn.disconnect()
      workerConn.disconnect()
      await closeServices()
    },
  }
}
