import os from 'node:os'
import path from 'node:path'
import { mkdtempSync } from 'node:fs'
import t from 'tap'
import { runCli, type Io } from '../../../src/cli/main.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { until } from '../../helpers/until.js'

function capture(env: Record<string, string | undefined>) {
  const out: Buffer[] = []
  const err: string[] = []
  const home = mkdtempSync(path.join(os.tmpdir(), 'tg-cli-'))
  const io: Io = { stdout: (c) => out.push(Buffer.from(c)), stderr: (l) => err.push(l), env, home }
  return { io, out: () => Buffer.concat(out).toString(), err: () => err.join('') }
}

t.test(
  'tollgate fetch pays once, then signs in from the agent wallet where the seller gives paid access',
  async (t) => {
    const p = await startBuyerPlatform(t)
    const url = `${p.proxyUrl}/tollgate/toolbox/echo`
    await p.deps.db.updateTable('endpoints').set({ access_minutes: 10 }).where('slug', '=', 'echo').execute()
    await announceRegistryChange(p.deps, {})
    await until('the proxy to offer sign-in on echo', async () => {
      const res = await fetch(`${url}?msg=x`)
      return decodeRequired(res.headers.get('payment-required')).extensions?.['sign-in-with-x'] !== undefined
    })
    const agent = await p.agent({ fund: 1_000_000n })
    const env = { TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key }
    const payments = () =>
      p.deps.db.selectFrom('payments').select('id').where('payer', '=', agent.address.toLowerCase()).execute()

    const first = capture(env)
    t.equal(await runCli(['fetch', `${url}?msg=one`], first.io), 0, first.err())
    t.same(JSON.parse(first.out()), { echo: { msg: 'one' } })
    t.match(first.err(), /^paid 0\.001 USDC/, 'the first call is paid (its sign-in was refused: never paid here)')
    t.equal((await payments()).length, 1)

    const second = capture(env)
    t.equal(await runCli(['fetch', `${url}?msg=two`], second.io), 0, second.err())
    t.same(JSON.parse(second.out()), { echo: { msg: 'two' } })
    t.match(second.err(), new RegExp(`^signed in as ${agent.address} .*nothing paid`))
    const json = capture(env)
    t.equal(await runCli(['--json', 'fetch', `${url}?msg=three`], json.io), 0, json.err())
    t.match(JSON.parse(json.err()), { paid: false, signed_in: { payer: agent.address, uri: url } })
    t.equal((await payments()).length, 1, 'one payment for three calls')
  },
)
