import { createServer } from 'node:net'
import { Writable } from 'node:stream'
import t from 'tap'
import { processLogger } from '../../../src/logger.js'
import { createAgents } from '../../../src/services/accounts/agents.js'
import { createTopups } from '../../../src/services/topups/topups.js'
import { ensureFundingWallet } from '../../../src/services/wallets/funding-wallet.js'
import { accountsApp, MASTER_KEY, userWithKey } from '../../helpers/accounts.js'

/** A local port nothing listens on: connections to it are refused at once. */
async function closedPort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as { port: number }).port
  await new Promise((r) => s.close(r))
  return port
}

// Production RPC URLs carry the provider's key in the path (Alchemy, Infura) or the query.
const PATH_KEY = 'RpcPathKey0123456789'
const QUERY_KEY = 'RpcQueryKey0123456789'

t.test("a top-up that fails on an RPC error shows the user why, never the operator's RPC URL", async (t) => {
  const rpcUrl = `http://127.0.0.1:${await closedPort()}/v2/${PATH_KEY}?apikey=${QUERY_KEY}`
  const { deps, app } = await accountsApp(t, { RPC_URL: rpcUrl })
  const { userId, auth } = await userWithKey(deps)
  await ensureFundingWallet(deps.db, Buffer.from(MASTER_KEY, 'hex'), userId)
  const agent = await createAgents({ db: deps.db, masterKey: () => Buffer.from(MASTER_KEY, 'hex') }).create(userId, {
    name: 'bot',
    top_up: { enabled: true, threshold: '5000000', amount: '20000000' },
  })
  const row = await deps.db
    .selectFrom('agents')
    .select('id')
    .where('address', '=', agent.address)
    .executeTakeFirstOrThrow()
  // an open need, as check() would have opened it; paying it reads the funding wallet over RPC
  await deps.db
    .insertInto('topups')
    .values({
      agent_id: row.id,
      need_seq: 1,
      agent_address: agent.address,
      amount: '20000000',
      threshold: '5000000',
      balance_seen: '0',
      block_seen: 1,
    })
    .execute()

  const lines: string[] = []
  const log = processLogger('info', new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }))
  const topups = createTopups(deps, { backoffMs: 10, maxAttempts: 1, logger: log })
  t.same(
    (await topups.processDue()).map((p) => p.status),
    ['failed'],
  )

  const res = await app.inject({ method: 'GET', url: `/v1/agents/${agent.address}/top-ups`, headers: auth })
  t.equal(res.statusCode, 200)
  const [shown] = res.json().data as Array<{ status: string; error: string | null }>
  t.equal(shown!.status, 'failed')
  t.match(shown!.error, /HTTP request failed/, 'the user still learns what failed')
  for (const [where, text] of [
    ['the API answer', res.body],
    ['the stored row', JSON.stringify(await deps.db.selectFrom('topups').selectAll().execute())],
    ['the log', lines.join('')],
  ] as const) {
    t.notOk(text.includes(PATH_KEY), `no RPC key from the URL path in ${where}`)
    t.notOk(text.includes(QUERY_KEY), `no RPC key from the URL query in ${where}`)
  }
  t.ok(
    lines.some((l) => JSON.parse(l).msg === 'top-up failed'),
    'the failure is logged',
  )
})
