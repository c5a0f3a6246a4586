import { execFile, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { createServer } from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { runCli, type Io } from '../../../src/cli/main.js'
import { freePort } from '../../helpers/platform.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../bin/tollgate.js')
const KEY = 'ak_test_' + 'S'.repeat(43)

function capture(env: Record<string, string | undefined>) {
  const out: Buffer[] = []
  const err: string[] = []
  const io: Io = {
    stdout: (c) => out.push(Buffer.from(c)),
    stderr: (l) => err.push(l),
    env,
    home: mkdtempSync(path.join(os.tmpdir(), 'tg-cli-audit-')),
  }
  return { io, out: () => Buffer.concat(out).toString(), err: () => err.join('') }
}

t.test('tollgate: an address that does not answer is named, with the reason, and no key', async (t) => {
  const closed = `http://127.0.0.1:${await freePort()}`
  const closedSeller = `http://127.0.0.1:${await freePort()}`
  const seller = capture({ TOLLGATE_API_URL: closed, TOLLGATE_AGENT_KEY: KEY })
  t.equal(await runCli(['fetch', `${closedSeller}/paid`], seller.io), 1)
  t.match(
    seller.err(),
    new RegExp(`^error: cannot reach ${closedSeller} \\(ECONNREFUSED\\)\\n$`),
    'the seller address and why',
  )

  for (const args of [['budget'], ['payments', 'status', 'x'], ['marketplace', 'list']]) {
    const c = capture({ TOLLGATE_API_URL: closed, TOLLGATE_AGENT_KEY: KEY })
    t.equal(await runCli(args, c.io), 1, args.join(' '))
    t.match(
      c.err(),
      new RegExp(
        `^error: cannot reach the Tollgate API at ${closed} \\(ECONNREFUSED\\): is it running\\? Set TOLLGATE_API_URL`,
      ),
      args.join(' '),
    )
    t.notMatch(c.err(), /fetch failed|S{43}/)
  }

  // the real bin: one line, no stack trace
  const r = await promisify(execFile)(process.execPath, [bin, 'budget'], {
    env: {
      ...process.env,
      TOLLGATE_CLI_FROM_SOURCE: '1', // the code under test, built or not
      HOME: mkdtempSync(path.join(os.tmpdir(), 'tg-cli-audit-')),
      TOLLGATE_API_URL: closed,
      TOLLGATE_AGENT_KEY: KEY,
    },
  }).then(
    () => undefined,
    (e: { code: number; stderr: string; stdout: string }) => e,
  )
  t.ok(r, 'exit non-zero')
  if (r) {
    t.equal(r.code, 1)
    t.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
    t.notMatch(r.stderr, /\n\s+at |S{43}/)
  }

  const bad = capture({ TOLLGATE_API_URL: 'localhost:4020', TOLLGATE_AGENT_KEY: KEY })
  t.equal(await runCli(['budget'], bad.io), 1)
  t.match(bad.err(), /^TOLLGATE_API_URL is not an http\(s\) URL: localhost:4020\n/)
})

t.test('tollgate with no command: the usage on stderr and exit 1, stdout left empty', async (t) => {
  const c = capture({})
  t.equal(await runCli([], c.io), 1)
  t.equal(c.out(), '', 'nothing on stdout')
  t.match(c.err(), /^tollgate — pay-per-call x402 APIs[^]*usage: tollgate <command>/)
  const h = capture({})
  t.equal(await runCli(['--help'], h.io), 0)
  t.match(h.out(), /usage: tollgate <command>/, '--help still on stdout')
})

t.test(
  'tollgate fetch (the bin): a binary body reaches stdout byte for byte; -d is text/plain unless -H says otherwise',
  async (t) => {
    const image = randomBytes(256 * 1024)
    const seen: Array<{ method?: string; type?: string; body: string }> = []
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        seen.push({ method: req.method, type: req.headers['content-type'], body: Buffer.concat(chunks).toString() })
        res.writeHead(200, { 'content-type': 'image/png' }).end(image)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.teardown(() => new Promise((resolve) => server.close(resolve)))
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/image.png`
    const env = {
      ...process.env,
      TOLLGATE_CLI_FROM_SOURCE: '1',
      HOME: mkdtempSync(path.join(os.tmpdir(), 'tg-cli-audit-')),
      TOLLGATE_AGENT_KEY: KEY,
    }
    const run = (args: string[]) =>
      promisify(execFile)(process.execPath, [bin, ...args], { env, encoding: 'buffer', maxBuffer: 1 << 24 })
    const r = await run(['fetch', url])
    t.ok(Buffer.compare(r.stdout, image) === 0, 'the image as sent')
    await run(['fetch', '-X', 'put', url, '-d', 'a=1'])
    await run(['fetch', url, '-d', '{"a":1}', '-H', 'content-type: application/json'])
    t.match(seen.slice(1), [
      { method: 'PUT', type: 'text/plain;charset=UTF-8', body: 'a=1' },
      { method: 'POST', type: 'application/json', body: '{"a":1}' },
    ])
    const help = await run(['fetch', '--help'])
    t.match(
      help.stdout.toString(),
      /-d, --data DATA\s+request body as given, sent as text\/plain unless -H sets content-type/,
    )
  },
)

t.test(
  'tollgate fetch (the bin) | head: a reader that stops early ends the output quietly, with no stack trace',
  async (t) => {
    const big = randomBytes(4 * 1024 * 1024)
    const server = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(big),
    )
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.teardown(() => new Promise((resolve) => server.close(resolve)))
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/big`
    const child = spawn(process.execPath, [bin, 'fetch', url], {
      env: {
        ...process.env,
        TOLLGATE_CLI_FROM_SOURCE: '1',
        HOME: mkdtempSync(path.join(os.tmpdir(), 'tg-cli-audit-')),
        TOLLGATE_AGENT_KEY: KEY,
      },
    })
    let stderr = ''
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    child.stdout.once('data', () => child.stdout.destroy()) // like head -c: one read, then the pipe is closed
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    t.equal(code, 0, stderr)
    t.notMatch(stderr, /EPIPE|Unhandled|\n\s+at /)
  },
)

t.test('tollgate marketplace list with a stray word is a usage error, not the whole catalogue', async (t) => {
  const closed = `http://127.0.0.1:${await freePort()}`
  const c = capture({ TOLLGATE_API_URL: closed })
  t.equal(await runCli(['marketplace', 'list', 'Crypto'], c.io), 1)
  t.match(c.err(), /^usage: tollgate marketplace list/)
  t.equal(c.out(), '')
})

t.test('tollgate: an agent key quoted back in a usage error is cut to its prefix', async (t) => {
  const closed = `http://127.0.0.1:${await freePort()}`
  const header = capture({ TOLLGATE_API_URL: closed, TOLLGATE_AGENT_KEY: KEY })
  t.equal(await runCli(['fetch', `${closed}/paid`, '-H', `Authorization Bearer ${KEY}`], header.io), 1)
  t.match(header.err(), /a header is "name: value", got "Authorization Bearer ak_test_…"/)
  t.notMatch(header.err(), /S{43}/, 'quoted back in a usage error: cut to its prefix')
})

t.test('tollgate users / keys: each stderr line ends with a newline', async (t) => {
  for (const args of [['users'], ['users', 'create', '--bogus'], ['keys', 'bogus']]) {
    const c = capture({})
    t.equal(await runCli(args, c.io), 1, args.join(' '))
    t.match(c.err(), /^usage: tollgate|^Unknown option/, args.join(' '))
    t.ok(c.err().endsWith('\n'), `${args.join(' ')}: ends with a newline`)
  }
  const c = capture({})
  await runCli(['users', 'create', '--bogus'], c.io)
  t.match(c.err(), /'--bogus'.*\nusage: tollgate users create/, 'the problem and the usage on their own lines')
})

t.test('tollgate fetch --inspect: the challenge is shown when the API does not answer', async (t) => {
  const p = await startBuyerPlatform(t)
  const closed = `http://127.0.0.1:${await freePort()}`
  const c = capture({ TOLLGATE_API_URL: closed, TOLLGATE_AGENT_KEY: KEY })
  t.equal(await runCli(['fetch', `${p.proxyUrl}/tollgate/toolbox/echo?msg=hi`, '--inspect'], c.io), 0, c.err())
  t.match(c.out(), /price\s+0\.001 USDC\n/)
  t.match(
    c.out(),
    new RegExp(`cap headroom: unavailable \\(cannot reach the Tollgate API at ${closed} \\(ECONNREFUSED\\)`),
  )
  t.match(c.out(), /nothing was paid/)
  t.notMatch(c.out() + c.err(), /S{43}/)
})

t.test('tollgate fetch / budget: a refusal says what to do about it, and never prints the key', async (t) => {
  const p = await startBuyerPlatform(t)
  const url = `${p.proxyUrl}/tollgate/toolbox/echo?msg=hi`
  const cases: Array<[string, Promise<{ key: string }> | { key: string }, RegExp]> = [
    [
      'spend_cap_exceeded',
      p.agent({ fund: 1_000_000n, caps: { per_transaction: '10' } }),
      /to fix: raise the agent's per_transaction spend cap \(tollgate caps set, its dashboard page, or PUT \/v1\/agents\/\{address\}\/spend-caps\)\n/,
    ],
    ['insufficient_balance', p.agent({}), /to fix: fund the agent's wallet/],
    [
      'seller_not_allowed',
      p.agent({ fund: 1_000_000n, allow: [{ kind: 'host', value: 'example.com' }] }),
      /to fix: add the seller to the agent's allowlist/,
    ],
    ['invalid_api_key', { key: KEY }, /to fix: check the agent key in TOLLGATE_AGENT_KEY/],
  ]
  for (const [code, agent, hint] of cases) {
    const { key } = await agent
    const c = capture({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: key })
    t.equal(await runCli(['fetch', url], c.io), 2, code)
    t.match(c.err(), new RegExp(`^payment refused \\(${code}\\)`), code)
    t.match(c.err(), hint, code)
    t.notOk(c.err().includes(key), `${code}: no key in the output`)
  }
  // the proxy's address given as the API's
  const wrong = capture({ TOLLGATE_API_URL: p.proxyUrl, TOLLGATE_AGENT_KEY: KEY })
  t.equal(await runCli(['fetch', url], wrong.io), 2)
  t.match(wrong.err(), new RegExp(`to fix: check that ${p.proxyUrl} is the Tollgate API \\(TOLLGATE_API_URL`))
  // a seller that drops the connection of the paid retry: the signed payment is named
  const payer = await p.agent({ fund: 1_000_000n })
  const dropper = createServer((req, res) => {
    if (req.headers['x-payment']) return req.socket.destroy()
    const resource = `http://127.0.0.1:${(dropper.address() as { port: number }).port}${req.url}`
    res.writeHead(402, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        x402Version: 1,
        accepts: [
          {
            scheme: 'exact',
            network: 'base-sepolia',
            maxAmountRequired: '1000',
            resource,
            payTo: p.devnet.accounts.receiver.address,
            maxTimeoutSeconds: 300,
            asset: p.deps.config.chain.usdc.address,
            extra: { name: 'USDC', version: '2' },
          },
        ],
      }),
    )
  })
  await new Promise<void>((resolve) => dropper.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => dropper.close(resolve)))
  const dropped = capture({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: payer.key })
  t.equal(
    await runCli(['fetch', `http://127.0.0.1:${(dropper.address() as { port: number }).port}/paid`], dropped.io),
    1,
    dropped.err(),
  )
  t.match(
    dropped.err(),
    /^error: cannot reach http:\/\/127\.0\.0\.1:\d+ \(\w+\), after a payment of 0\.001 USDC to 0x[0-9a-fA-F]{40} was signed\n/,
  )
  const id = /see tollgate payments status ([0-9a-f-]{36})\n$/.exec(dropped.err())?.[1]
  t.ok(id, 'the payment id to look up')
  const st = capture({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: payer.key })
  t.equal(await runCli(['payments', 'status', id ?? '-', '--json'], st.io), 0, st.err())
  t.match(JSON.parse(st.out() || '{}'), { id, amount: '1000' })

  // a line break inside the key: refused before it reaches a header (whose error quotes the value)
  const inner = capture({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: `${KEY}\nX` })
  t.equal(await runCli(['fetch', url], inner.io), 1)
  t.match(
    inner.err(),
    /^the agent key in TOLLGATE_AGENT_KEY contains a space, line break or other character no agent key has/,
  )
  t.notMatch(inner.err(), /S{43}/, 'a line break inside: refused, unprinted')
  // a key read from a file with its line break still works
  const good = await p.agent({ fund: 1_000_000n })
  const nl = capture({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: `${good.key}\n` })
  t.equal(await runCli(['budget'], nl.io), 0, nl.err())

  const b = capture({ TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: KEY })
  t.equal(await runCli(['budget'], b.io), 3)
  t.match(b.err(), /to fix: check the agent key in TOLLGATE_AGENT_KEY/)
  t.notMatch(b.err(), /S{43}/)
})
