import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { runCli, type Io } from '../../../src/cli/main.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { freePort } from '../../helpers/platform.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../bin/tollgate.js')

function capture(env: Record<string, string | undefined>, home = mkdtempSync(path.join(os.tmpdir(), 'tg-cli-'))) {
  const out: Buffer[] = []
  const err: string[] = []
  const io: Io = { stdout: (c) => out.push(Buffer.from(c)), stderr: (l) => err.push(l), env, home }
  return { io, out: () => Buffer.concat(out).toString(), err: () => err.join('') }
}

t.test(
  'tollgate CLI: fetch pays, --inspect pays nothing, refusals and HTTP errors have their exit codes',
  async (t) => {
    const p = await startBuyerPlatform(t)
    const agent = await p.agent({ fund: 1_000_000n, caps: { daily: '100000' } })
    const env = { TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key }
    const url = `${p.proxyUrl}/tollgate/toolbox/echo`
    const balance = () =>
      p.deps.chain.readContract({
        address: p.deps.config.chain.usdc.address,
        abi: usdcAbi,
        functionName: 'balanceOf',
        args: [agent.address],
      })
    const counts = async () => ({
      agent: (
        await p.deps.db
          .selectFrom('agent_payments')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
      seller: (
        await p.deps.db
          .selectFrom('payments')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
      events: (
        await p.deps.db
          .selectFrom('agent_payment_events')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    })

    // --inspect: prints the challenge and headroom, changes nothing
    const before = { balance: await balance(), counts: await counts() }
    const ins = capture(env)
    t.equal(await runCli(['fetch', '-X', 'POST', url, '--json', '{"msg":"hi"}', '--inspect'], ins.io), 0, ins.err())
    t.match(ins.out(), /price\s+0\.001 USDC\n/, 'USDC, not atomic units')
    t.match(ins.out(), /scheme\s+exact \(the price, transferred per call\)\n/, 'the scheme named without --verbose')
    t.match(
      ins.out(),
      /x402 version 2 \(also offered as v1\)/,
      'the v2 challenge first: it declares payment-identifier, so the paying call uses it (PAYMENT-SIGNATURE with an id)',
    )
    t.match(ins.out(), /network\s+eip155:84532 \(chain 84532\)/)
    t.match(ins.out(), new RegExp(`payTo\\s+${p.devnet.accounts.receiver.address}`, 'i'))
    t.match(ins.out(), /timeout\s+\d+ s/)
    t.match(ins.out(), /input\s+body n, msg \(required\)\n/, 'the input fields by name')
    t.notMatch(ins.out(), /"bodyFields"|asset\s+0x/, 'no schema and no asset by default')
    // the hosted endpoint offers batch-settlement, paid by default: the dry run adds the channel deposit it would make
    t.match(ins.out(), /would deposit 0\.1 USDC from the agent wallet into a batch-settlement channel first/)
    t.ok(
      ins.out().trim().split('\n').length <= 21,
      `a short summary by default (${ins.out().trim().split('\n').length} lines, the deposit's included)`,
    )
    t.match(
      ins.out(),
      /would pay 0\.001 USDC to 0x[0-9a-fA-F]{40} on eip155:84532/,
      'the dry run priced the v2 requirement',
    )
    t.match(ins.out(), /daily \(UTC\)\s+0\.099 USDC/)
    t.match(ins.out(), /nothing was paid/)
    const verbose = capture(env)
    t.equal(
      await runCli(['fetch', '-X', 'POST', url, '--json', '{"msg":"hi"}', '--inspect', '--verbose'], verbose.io),
      0,
      verbose.err(),
    )
    t.match(verbose.out(), /input\s+\{/)
    t.match(verbose.out(), /"bodyFields": \{[^]*"msg": \{/, 'with --verbose: the body fields with their schema')
    t.match(verbose.out(), /asset\s+0x[0-9a-fA-F]{40}/)
    t.ok(verbose.out().length > ins.out().length, 'the verbose form is the longer one')
    t.same({ balance: await balance(), counts: await counts() }, before, '--inspect changed no balance and no table')

    // a paid call through the real bin (tsx from source): the hosted endpoint offers batch-settlement,
    // paid by default through a channel (one deposit, then a voucher per call: no transaction per call)
    const r = await promisify(execFile)(
      process.execPath,
      [bin, 'fetch', '-X', 'POST', url, '--json', '{"msg":"paid"}'],
      { env: { ...process.env, ...env, TOLLGATE_CLI_FROM_SOURCE: '1' } },
    )
    t.same(JSON.parse(r.stdout), { echo: { msg: 'paid' } }, 'body on stdout')
    t.match(r.stderr, /paid 0\.001 USDC to 0x[0-9a-fA-F]{40} from 0x/i)
    t.match(r.stderr, /payment [0-9a-f-]{36}\n/)
    t.notMatch(r.stderr, /seller payment/, 'one payment id: the one tollgate payments status takes')
    t.match(r.stderr, /through a batch-settlement channel \(a cumulative voucher, claimed later in batches\)\n/)
    t.match(r.stderr, /deposited 0\.1 USDC from the agent wallet into the channel first \(tollgate channels\)\n/)
    const paymentId = /payment ([0-9a-f-]{36})/.exec(r.stderr)![1]!

    const st = capture(env)
    t.equal(await runCli(['payments', 'status', paymentId, '--json'], st.io), 0)
    t.match(JSON.parse(st.out()), {
      id: paymentId,
      status: 'accepted',
      amount: '1000',
      settlement: { status: /verified|served|settling|settled/ },
    })

    // the agent's budget after that one payment
    const bud = capture(env)
    t.equal(await runCli(['budget'], bud.io), 0, bud.err())
    t.match(bud.out(), new RegExp(`agent\\s+${agent.address}`))
    t.match(
      bud.out(),
      /balance\s+1 USDC, of which 0\.1 signed and not settled yet: 0\.9 USDC available|balance\s+0\.9 USDC, of which (0\.1 signed and not settled yet: 0\.8 USDC available|0 signed)/,
      "the balance, before or after the channel's deposit (100 x the price) landed (its authorization counted until its validity ends): the call itself moved nothing",
    )
    t.match(bud.out(), /daily \(UTC\)\s+0\.099 USDC\s+\(spent today 0\.001 USDC\)/)
    t.match(bud.out(), /per transaction\s+no cap/)
    t.match(bud.out(), /sellers\s+any \(no allowlist\)/)
    const budJson = capture(env)
    t.equal(await runCli(['budget', '--json'], budJson.io), 0)
    t.match(JSON.parse(budJson.out()), {
      object: 'agent_status',
      spent: { daily: '1000' },
      headroom: { daily: '99000' },
    })

    // GET with query, config file instead of env
    const home = mkdtempSync(path.join(os.tmpdir(), 'tg-cli-'))
    mkdirSync(path.join(home, '.config', 'tollgate'), { recursive: true })
    writeFileSync(
      path.join(home, '.config', 'tollgate', 'config.json'),
      JSON.stringify({ agent_key: agent.key, api_url: p.webUrl }),
    )
    const g = capture({}, home)
    t.equal(await runCli(['fetch', `${url}?msg=cfg`, '-H', 'accept: application/json'], g.io), 0, g.err())
    t.same(JSON.parse(g.out()), { echo: { msg: 'cfg' } })
    t.notOk(g.out().endsWith('\n'), 'piped: the body exactly as sent')
    const tty = capture({}, home)
    tty.io.sharedTerminal = true
    t.equal(await runCli(['fetch', `${url}?msg=tty`], tty.io), 0, tty.err())
    t.ok(tty.out().endsWith('}\n'), 'on a terminal shared with the receipt: ended with a newline')

    // the endpoint fails after the payment was signed: exit 3, and the receipt says nothing was charged
    const failed = capture(env)
    t.equal(await runCli(['fetch', `${p.proxyUrl}/tollgate/toolbox/throws`], failed.io), 3)
    t.match(
      failed.err(),
      /not charged: the call failed, so the signed payment of 0\.001 USDC to 0x[0-9a-fA-F]{40} is not settled/,
    )
    t.notMatch(failed.err(), /^paid /m, 'no "paid" line for a call that failed')
    t.match(failed.err(), /HTTP 502/)

    // refused: exit 2, nothing signed
    const stingy = await p.agent({ fund: 1_000_000n, caps: { per_transaction: '10' } })
    const n = await counts()
    const ref = capture({ ...env, TOLLGATE_AGENT_KEY: stingy.key })
    t.equal(await runCli(['fetch', `${url}?msg=x`], ref.io), 2)
    t.match(
      ref.err(),
      /^payment refused \(spend_cap_exceeded\): the price 0\.001 USDC is above the per-transaction cap of 0\.00001 USDC\n {2}to fix: /,
      'in USDC, with no line of atomic units',
    )
    t.same(await counts(), n)

    // HTTP error: exit 3
    const nf = capture(env)
    t.equal(await runCli(['fetch', `${p.proxyUrl}/tollgate/toolbox/nope`], nf.io), 3)

    // usage: exit 1
    for (const args of [
      ['fetch'],
      ['fetch', 'not a url'],
      ['fetch', url, '--json', '{bad'],
      ['nope'],
      ['fetch', url, '--bogus'],
    ]) {
      const u = capture(env)
      t.equal(await runCli(args, u.io), 1, args.join(' '))
    }
    const nokey = capture({ TOLLGATE_API_URL: p.webUrl })
    t.equal(await runCli(['fetch', url], nokey.io), 1)
    t.match(nokey.err(), /TOLLGATE_AGENT_KEY/)
    t.equal(
      await runCli(['budget'], capture({ TOLLGATE_API_URL: p.webUrl }).io),
      1,
      'budget without a key: usage error',
    )
    t.equal(
      await runCli(['budget'], capture({ ...env, TOLLGATE_AGENT_KEY: 'ak_test_' + 'x'.repeat(43) }).io),
      3,
      'an unknown key: HTTP error',
    )
    for (const args of [
      ['--help'],
      ['fetch', '--help'],
      ['marketplace', '--help'],
      ['payments', '--help'],
      ['budget', '--help'],
      ['devnet', '--help'],
      ['users', '--help'],
    ]) {
      const h = capture(env)
      t.equal(await runCli(args, h.io), 0, args.join(' '))
      t.match(h.out(), /usage: tollgate/)
    }

    // marketplace over the web app
    const m = capture(env)
    t.equal(await runCli(['marketplace', 'list', '--json'], m.io), 0, m.err())
    t.ok(Array.isArray(JSON.parse(m.out())))
    const ms = capture(env)
    t.equal(await runCli(['marketplace', 'show', '00000000-0000-0000-0000-000000000000'], ms.io), 3)
    // show --network: the entry as seen on that network (this sandbox API lists Base Sepolia by default)
    const { syncCatalog } = await import('../../../src/services/marketplace/sync-catalog.js')
    await syncCatalog(p.deps)
    const def = capture(env)
    t.equal(await runCli(['marketplace', 'show', 'example-pricefeed'], def.io), 0, def.err())
    t.match(def.out(), /^Pricefeed Oracle \(example\) {2}\(example-pricefeed\)/m, 'shown for a person')
    t.notMatch(def.out(), /https?:\/\//, 'its Base mainnet endpoints are not on the default network')
    // friction 6: the entry the README shows is hidden from the default list; show says where its endpoints are
    t.match(
      def.err(),
      /no endpoints on this API's default network; \d+ on base: tollgate marketplace show example-pricefeed --network base\n/,
    )
    const lst = capture(env)
    t.equal(await runCli(['marketplace', 'list'], lst.io), 0)
    t.notMatch(lst.out(), /example-pricefeed/)
    t.match(lst.err(), /entr(y|ies) on this API's default network \(--network base or base-sepolia for the other's\)/)
    const lstBase = capture(env)
    t.equal(await runCli(['marketplace', 'list', '--network', 'base', '--include-examples'], lstBase.io), 0)
    t.match(
      lstBase.out(),
      /^example-pricefeed {2}/m,
      'the README example: list --network base shows it, show --network base opens it',
    )
    const onBase = capture(env)
    t.equal(
      await runCli(['marketplace', 'show', 'example-pricefeed', '--network', 'base', '--json'], onBase.io),
      0,
      onBase.err(),
    )
    const shown = JSON.parse(onBase.out())
    t.ok(
      shown.endpoints.length > 0 && shown.endpoints.every((e: { network: string }) => e.network === 'base'),
      'with --network base, its Base endpoints',
    )
    const badNet = capture(env)
    t.equal(await runCli(['marketplace', 'show', 'example-pricefeed', '--network', 'mainnet'], badNet.io), 1)
    t.match(badNet.err(), /--network is base or base-sepolia/)
  },
)

t.test('tollgate fetch: the platform failing to sign is exit 1 with its reason, not "payment refused"', async (t) => {
  const p = await startBuyerPlatform(t)
  const agent = await p.agent({ fund: 1_000_000n })
  // a web process on the same database with another master key cannot open the agent's wallet: 503
  const other = await buildWebApp(
    { ...p.deps, config: { ...p.deps.config, masterKey: randomBytes(32) } },
    { logger: false },
  )
  t.teardown(() => other.close())
  const port = await freePort()
  await other.listen({ host: '127.0.0.1', port })
  const c = capture({ TOLLGATE_API_URL: `http://127.0.0.1:${port}`, TOLLGATE_AGENT_KEY: agent.key })
  t.equal(await runCli(['fetch', `${p.proxyUrl}/tollgate/toolbox/echo?msg=hi`], c.io), 1, c.err())
  t.match(c.err(), /the platform could not make the payment \(service_unavailable, HTTP 503\)/)
  t.notMatch(c.err(), /payment refused/)
})
