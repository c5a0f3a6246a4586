import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { runCli, type Io } from '../../../src/cli/main.js'
import { buildChallenge } from '../../../src/x402/challenge.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'

function capture(env: Record<string, string | undefined>) {
  const out: Buffer[] = []
  const err: string[] = []
  const home = mkdtempSync(path.join(os.tmpdir(), 'tg-cli-'))
  const io: Io = { stdout: (c) => out.push(Buffer.from(c)), stderr: (l) => err.push(l), env, home }
  return { io, err: () => err.join('') }
}

t.test('tollgate fetch names the payment the seller refused, by the id the platform signed it under', async (t) => {
  const p = await startBuyerPlatform(t)
  const agent = await p.agent({ fund: 1_000_000n })
  const chain = p.deps.config.chain
  let paid = 0
  // a seller stand-in that refuses every payment it is sent (a 402 again, naming why)
  const server = createServer((req, res) => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${req.url}`
    if (req.headers['payment-signature'] || req.headers['x-payment']) paid++
    const ch = buildChallenge({
      resourceUrl: url,
      description: 'quote',
      mimeType: 'application/json',
      payTo: p.devnet.accounts.receiver.address,
      amount: 1000n,
      maxTimeoutSeconds: 60,
      method: 'GET',
      chain: { chainId: chain.chainId, network: chain.network, caip2: chain.caip2, usdc: chain.usdc },
    })
    res.writeHead(402, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ ...JSON.parse(ch.v1BodyJson), error: paid ? 'insufficient_funds' : 'payment required' }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/quote`

  const c = capture({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key })
  t.equal(await runCli(['fetch', url], c.io), 2, c.err())
  t.equal(paid, 1, 'one payment sent')
  const m =
    /^payment refused \(payment_rejected\): the seller refused the payment: insufficient_funds\n {2}payment ([0-9a-f-]{36}): signed by the platform, refused by the seller \(tollgate payments status \1\)/.exec(
      c.err(),
    )
  t.ok(m, c.err())
  const row = await p.deps.db
    .selectFrom('agent_payments')
    .select(['status', 'agent_id'])
    .where('id', '=', m![1]!)
    .executeTakeFirstOrThrow()
  t.equal(row.agent_id, agent.id, 'the id is the agent payment the platform recorded')
  // reported rejected: the platform cancels the authorization and releases it (expired), or holds it until then
  t.ok(['rejected', 'expired'].includes(row.status), row.status)

  const j = capture({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key })
  t.equal(await runCli(['--json', 'fetch', url], j.io), 2)
  t.match(JSON.parse(j.err().trim().split('\n').at(-1)!), {
    error: { code: 'payment_rejected', details: { reason: 'insufficient_funds', payment_id: /^[0-9a-f-]{36}$/ } },
  })
})
