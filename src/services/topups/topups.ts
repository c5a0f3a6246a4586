import type { CoreDeps as Deps } from '../../core-deps.js'
import type { SenderLogger } from '../wallets/authorization-sender.js'
import type { Topup } from '../../db/topups-tables.js'
import { checkTopups } from './check.js'
import { topupContext, type TopupContext, type TopupOptions } from './context.js'
import { listTopups } from './list.js'
import { processDueTopups } from './process.js'

export type { TopupOptions } from './context.js'

/**
 * Agent top-ups: `check` reads the balances of every agent with top-ups enabled (one multicall
 * per page, all at one block) and opens a need for each one below its threshold (check.ts);
 * `processDue` pays each open need from the user's funding wallet with an EIP-3009 authorization
 * that a relayer submits (process.ts, pay.ts). docs/topups.md explains why a need is paid at most once.
 *
 * @example
 *   const topups = createTopups(deps)
 *   await topups.runOnce() // check + pay what is due
 */
export function createTopups(deps: Deps, opts: TopupOptions = {}) {
  return topupsOn(topupContext(deps, opts))
}

function topupsOn(ctx: TopupContext) {
  return {
    /** Opens a need for every enabled agent below its threshold; returns how many this call created. */
    check: (pageSize?: number) => checkTopups(ctx, pageSize),
    /** Works on every due open top-up this worker can lease; returns what happened to each. */
    processDue: (limit?: number) => processDueTopups(ctx, limit),
    /** One round of the worker job: open new needs, then pay what is due. */
    async runOnce(): Promise<{ created: number; processed: Array<{ id: string; status: Topup['status'] }> }> {
      const created = await checkTopups(ctx)
      return { created, processed: await processDueTopups(ctx) }
    },
    /** Top-ups of one agent, newest need first. */
    listForAgent: (agentId: string, limit?: number) => listTopups(ctx.db, agentId, limit),
    /** The same service (relayers, locks) reporting through `logger`: the worker's jobs log where the worker does. */
    withLogger: (logger: SenderLogger) => topupsOn({ ...ctx, log: logger }),
  }
}

export type Topups = ReturnType<typeof createTopups>
