import type { FastifyInstance } from 'fastify'
import { agentsService } from '../../../services/accounts/agents.js'
import { listTopups } from '../../../services/topups/topups.js'
import { requireMasterKey } from '../../../services/wallets/wallet-crypto.js'
import type { V1Context } from './index.js'
import { addressParam, authErrors, list } from './schemas.js'

/** The agent's top-ups (docs/topups.md): one per need, with status, attempts, error and tx hash. */
export async function topUpRoutes(app: FastifyInstance, ctx: V1Context) {
  const { db, config } = ctx.deps
  const agents = agentsService({ db, masterKey: () => requireMasterKey(config) })
  app.get<{ Params: { address: string } }>(
    '/agents/:address/top-ups',
    { schema: { tags: ['agents'], summary: 'List the agent\'s top-ups, newest first (a failed one shows its error)', params: addressParam, response: { 200: list('top-ups'), ...authErrors } } },
    async (request) => ({ object: 'list', data: await listTopups(db, (await agents.find(request.principal!.userId, request.params.address)).id) }),
  )
}
