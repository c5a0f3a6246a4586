import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t, { type Test } from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { descendants, handlerProcesses } from '../../helpers/handler-processes.js'
import { decodeRequired, signFor, v2Header } from '../../helpers/pay.js'
import { TEST_DATABASE_URL, TEST_REDIS_URL, clearRedisPrefix, testSchema, uniqueName } from '../../helpers/test-env.js'

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

type Started = {
  child: ReturnType<typeof spawn>
  out: () => string
  exited: Promise<string>
  web: number
  proxy: number
  anvil: number
  stateDir: string
}

/** `npm start` in its own process group on free ports, waited for until /readyz answers 200. */
async function startPlatform(t: Test): Promise<Started & { ready: boolean }> {
  const schema = await testSchema(t, { migrate: false })
  const prefix = uniqueName('tgstart')
  t.teardown(() => clearRedisPrefix(prefix))
  const [web, proxy, anvil] = [await freePort(), await freePort(), await freePort()]
  const stateDir = mkdtempSync(path.join(tmpdir(), 'tollgate-start-'))
  const child = spawn('npm', ['start', '--silent'], {
    env: {
      ...process.env,
      DATABASE_URL: TEST_DATABASE_URL,
      DATABASE_SCHEMA: schema,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: prefix,
      WEB_PORT: String(web),
      PROXY_PORT: String(proxy),
      ANVIL_PORT: String(anvil),
      TOLLGATE_STATE_DIR: stateDir,
      LOG_LEVEL: 'warn',
      RPC_URL: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // its own process group, so the test can send Ctrl-C the way a terminal does: to the whole group
    detached: true,
  })
  let out = ''
  child.stdout!.on('data', (d) => (out += d))
  child.stderr!.on('data', (d) => (out += d))
  const exited = new Promise<string>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? String(code))))
  t.teardown(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      // already gone
    }
  })

  const deadline = Date.now() + 120_000
  let ready = false
  while (Date.now() < deadline && child.exitCode === null) {
    if (out.includes('Tollgate is up')) {
      const r = await fetch(`http://127.0.0.1:${web}/readyz`, { signal: AbortSignal.timeout(5000) }).catch(
        () => undefined,
      )
      if (r?.status === 200) {
        ready = true
        break
      }
    }
    await new Promise((r) => setTimeout(r, 300))
  }
  return { child, out: () => out, exited, web, proxy, anvil, stateDir, ready }
}

const answers = (url: string, init?: RequestInit) =>
  fetch(url, { ...init, signal: AbortSignal.timeout(2000) }).then(
    () => true,
    () => false,
  )

t.test('npm start brings the platform up on the embedded chain and stops cleanly', async (t) => {
  const { child, out: output, exited, web, proxy, anvil, stateDir, ready } = await startPlatform(t)
  t.ok(ready, `came up and /readyz answered 200\n${output()}`)
  const proxyReady = await fetch(`http://127.0.0.1:${proxy}/readyz`, { signal: AbortSignal.timeout(5000) })
  t.equal(proxyReady.status, 200, 'the proxy role answers too')
  t.match(output(), `http://localhost:${web}`, 'prints the URLs')

  const dev = JSON.parse(readFileSync(path.join(stateDir, 'dev.json'), 'utf8'))
  t.equal(dev.chainId, 84532)
  t.equal(dev.rpcUrl, `http://127.0.0.1:${anvil}`)
  t.match(dev.demoPayer?.privateKey, /^0x[0-9a-f]{64}$/, 'dev.json has the demo payer key')
  const hint = /require\('([^']+)'\)\.apiKey/.exec(output())
  t.equal(
    hint && path.resolve(hint[1]!),
    path.join(stateDir, 'dev.json'),
    'the printed curl line reads the API key from where dev.json really is',
  )
  // a seller trying the platform publishes an upstream on this machine: allowed on the embedded chain
  const v1 = (p: string, body: object) =>
    fetch(`http://127.0.0.1:${web}/v1${p}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${dev.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
  t.equal((await v1('/sellers', { namespace: 'local-try' })).status, 201)
  t.equal((await v1('/sellers/local-try/services', { name: 'svc', pay_to: dev.receiver })).status, 201)
  const local = await v1('/sellers/local-try/services/svc/endpoints', {
    slug: 'echo',
    price: '1000',
    upstream_url: `http://127.0.0.1:${web}/healthz`,
  })
  t.equal(local.status, 201, `a loopback upstream is published under npm start: ${await local.clone().text()}`)

  await t.test('a handler process that crashes takes nothing else down: npm start serves on', async (t) => {
    const payer = privateKeyToAccount(dev.demoPayer.privateKey)
    const url = `http://127.0.0.1:${proxy}/tollgate/toolbox/hash-generator?text=hello`
    const required = decodeRequired((await fetch(url)).headers.get('payment-required'))
    const paid = async () =>
      (await fetch(url, { headers: { 'payment-signature': v2Header(required, await signFor(payer, required)) } }))
        .status
    t.equal(await paid(), 200, 'a paid hosted call')
    // npm, its shell, then node running dev.ts: the last of them with dev.ts on its command line
    const platform = descendants(child.pid!)
      .filter((p) => p.cmdline.includes('src/start/dev.ts'))
      .at(-1)!
    const before = handlerProcesses(platform.pid)
    t.ok(before.length > 0, 'hosted handlers run in processes of their own under the npm start process')
    // as a native module crashing in them would
    for (const pid of before) process.kill(pid, 'SIGSEGV')
    const crashedAt = Date.now()
    // a call sent before the supervisor has seen the signal land goes to a dying process: it is
    // answered 502 handler_failed and not charged, like any call in flight on a crashed process
    const statuses: number[] = []
    while (statuses.at(-1) !== 200 && Date.now() - crashedAt < 5_000) statuses.push(await paid())
    t.equal(statuses.at(-1), 200, `a paid hosted call is served again (${statuses.join(', ')})`)
    t.ok(
      statuses.slice(0, -1).every((s) => s === 502),
      'what failed meanwhile failed as a crashed call',
    )
    t.ok(Date.now() - crashedAt < 5_000, `within 5 s (${Date.now() - crashedAt} ms)`)
    t.equal((await fetch(`http://127.0.0.1:${web}/readyz`)).status, 200, 'web is up')
    t.equal((await fetch(`http://127.0.0.1:${proxy}/readyz`)).status, 200, 'the proxy is up')
    t.ok(
      handlerProcesses(platform.pid).every((p) => !before.includes(p)),
      'by new handler processes',
    )
    t.match(output(), /handler process \d+ was killed by SIGSEGV/, 'the crash is logged')
  })

  process.kill(-child.pid!, 'SIGINT')
  const code = await exited
  // npm itself reports 130 when it receives the terminal's SIGINT; our process exits 0 (logged below)
  t.ok(['0', '130', 'SIGINT'].includes(code), `exited on Ctrl-C (${code})\n${output()}`)
  await new Promise((r) => setTimeout(r, 500))
  t.notMatch(output(), /shutdown step failed|took longer/, 'every shutdown step succeeded')
  t.notOk(await answers(`http://127.0.0.1:${anvil}`, { method: 'POST', body: '{}' }), 'anvil was stopped too')
  t.notOk(alive(child.pid!), 'no process left behind')
})

t.test('a SIGTERM sent to npm alone (a process manager, `kill <npm pid>`) stops the whole platform', async (t) => {
  const { child, out: output, exited, web, proxy, anvil, ready } = await startPlatform(t)
  t.ok(ready, ready ? 'came up' : `did not come up\n${output()}`)
  // npm dies of it and so does its `sh -c`; the platform below them must notice and stop itself
  process.kill(child.pid!, 'SIGTERM')
  await exited
  const deadline = Date.now() + 30_000
  let up = true
  while (up && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 500))
    up =
      (await answers(`http://127.0.0.1:${web}/readyz`)) ||
      (await answers(`http://127.0.0.1:${proxy}/readyz`)) ||
      (await answers(`http://127.0.0.1:${anvil}`, { method: 'POST', body: '{}' }))
  }
  t.notOk(up, up ? `still answering 30 s after npm exited\n${output()}` : 'web, proxy and anvil all stopped')
  t.match(output(), /the parent process \(\d+\) exited: shutting down/, 'says why it stopped')
  t.notMatch(output(), /shutdown step failed|took longer/, 'every shutdown step succeeded')
})
