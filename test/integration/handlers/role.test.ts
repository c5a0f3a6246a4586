import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import t, { type Test } from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { alive, handlerProcesses } from '../../helpers/handler-processes.js'
import { decodeRequired, signFor, v2Header } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const handlersDir = path.resolve(here, '../../fixtures/process-handlers')

/** The `handlers` role as its own process (src/start/handlers-role.ts), serving the fixtures on `socket`. */
async function startRole(t: Test, socket: string): Promise<ChildProcess> {
  const script = `
    const { loadConfig } = await import(${JSON.stringify(pathToFileURL(path.resolve(here, '../../../src/config.ts')).href)})
    const { startHandlersRole } = await import(${JSON.stringify(pathToFileURL(path.resolve(here, '../../../src/start/handlers-role.ts')).href)})
    const role = await startHandlersRole(loadConfig(process.env), { dirs: [${JSON.stringify(handlersDir)}] })
    process.stdout.write('listening ' + role.url + '\\n')
    process.on('SIGTERM', () => role.stop().then(() => process.exit(0)))
  `
  const role = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: {
      ...process.env,
      HANDLERS_LISTEN: `unix:${socket}`,
      HANDLER_MAX_THREADS: '2',
      HANDLER_MEMORY_MB: '128',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  t.teardown(() => role.kill('SIGKILL'))
  let out = ''
  role.stdout!.on('data', (d) => (out += d))
  await until(
    'the handlers role listening',
    async () => out.includes(`listening unix:${socket}`) || role.exitCode !== null,
    60_000,
  )
  t.equal(role.exitCode, null, 'the role is up')
  return role
}

t.test('the handlers role: a proxy with HANDLERS_URL runs hosted calls there, and outlives the role', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tg-role-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const socket = path.join(dir, 'handlers.sock')
  let role = await startRole(t, socket)
  const platform = await startTestPlatform(t, { proxy: { handlersDir }, env: { HANDLERS_URL: `unix:${socket}` } })
  const payer = privateKeyToAccount(platform.devnet.accounts.demoPayer.privateKey)
  const challenges = new Map<string, ReturnType<typeof decodeRequired>>()
  const paid = async (slug: string, body: object) => {
    const url = `${platform.proxyUrl}/tollgate/toolbox/${slug}`
    let required = challenges.get(slug)
    if (!required) challenges.set(slug, (required = decodeRequired((await fetch(url)).headers.get('payment-required'))))
    const signed = await signFor(payer, required)
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'payment-signature': v2Header(required, signed) },
      body: JSON.stringify(body),
    })
    const bytes = Buffer.from(await res.arrayBuffer())
    const status = (
      await platform.deps.db
        .selectFrom('payments')
        .select('status')
        .where('nonce', '=', signed.authorization.nonce)
        .executeTakeFirst()
    )?.status
    return {
      status: res.status,
      bytes,
      json: () => JSON.parse(bytes.toString()) as Record<string, unknown>,
      payment: status,
    }
  }

  t.test("calls run in the role's handler processes; binary output arrives byte for byte", async (t) => {
    const echo = await paid('echo-bytes', { msg: 'hi' })
    t.equal(echo.status, 200)
    t.ok(
      handlerProcesses(role.pid).includes(echo.json().pid as number),
      "answered by one of the role's handler processes",
    )
    t.same(handlerProcesses(), [], 'the proxy started none of its own')
    const bin = await paid('echo-bytes', { size: 300_000 })
    t.equal(bin.status, 200)
    t.equal(bin.bytes.length, 300_000)
    t.ok(bin.bytes.every((b, i) => b === (i & 255)))
    t.equal(bin.payment, 'served')
  })

  t.test('a handler that crashes its process: the call is voided, others succeed, the role serves on', async (t) => {
    const [crash, ...good] = await Promise.all([
      paid('segfault', {}),
      ...Array.from({ length: 4 }, (_, i) => paid('echo-bytes', { msg: `g${i}` })),
    ])
    t.equal(crash.status, 502)
    t.equal(crash.json().message, 'the endpoint failed: the handler process died; nothing was charged')
    t.equal(crash.payment, 'voided')
    t.same(
      good.map((g) => g.status),
      [200, 200, 200, 200],
    )
    t.equal(role.exitCode, null, 'the role process is up')
    t.equal((await paid('echo-bytes', { msg: 'after' })).status, 200)
  })

  t.test(
    'the role killed outright: calls in flight answer and are voided, the proxy stays up, a restarted role serves',
    async (t) => {
      const children = handlerProcesses(role.pid)
      const dirIn = mkdtempSync(path.join(tmpdir(), 'rendezvous-'))
      // n: 2 with one call: it waits in its handler process until the role dies
      const inFlight = paid('rendezvous', { dir: dirIn, n: 2 })
      await until('the call running', async () => readdirSync(dirIn).length === 1)
      role.kill('SIGKILL')
      const lost = await inFlight
      t.equal(lost.status, 502)
      t.equal(lost.json().message, 'the endpoint failed: the handler processes cannot be reached; nothing was charged')
      t.equal(lost.payment, 'voided')
      await until('its handler processes gone', async () => children.every((p) => !alive(p)), 5_000)
      t.ok(
        children.every((p) => !alive(p)),
        'its handler processes went with it',
      )
      t.equal((await fetch(`${platform.proxyUrl}/healthz`)).status, 200, 'the proxy is up')
      const down = await paid('echo-bytes', { msg: 'while down' })
      t.equal(down.status, 502)
      t.equal(down.payment, 'voided', 'a call while the role is down is voided too')

      role = await startRole(t, socket)
      const back = await paid('echo-bytes', { msg: 'back' })
      t.equal(back.status, 200, 'the proxy connects to the restarted role by itself')
      t.equal(back.payment, 'served')
    },
  )
})

t.test(
  'the Procfile entry (src/start/handlers.ts): refused without an address; serves only its own build; stops on SIGTERM',
  async (t) => {
    const entry = path.resolve(here, '../../../src/start/handlers.ts')
    const run = (env: Record<string, string>) => {
      const child = spawn(process.execPath, ['--import', 'tsx', entry], {
        env: { ...process.env, HANDLERS_URL: '', HANDLERS_LISTEN: '', LOG_LEVEL: 'info', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      t.teardown(() => child.kill('SIGKILL'))
      let out = ''
      child.stdout!.on('data', (d) => (out += d))
      child.stderr!.on('data', (d) => (out += d))
      const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)))
      return { child, out: () => out, exited }
    }
    const refused = run({})
    t.equal(await refused.exited, 78, refused.out())
    t.match(refused.out(), /invalid configuration:\n\s+- HANDLERS_LISTEN: the handlers role needs an address/)

    const dir = mkdtempSync(path.join(tmpdir(), 'tg-role-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const socket = path.join(dir, 'h.sock')
    const role = run({ HANDLERS_LISTEN: `unix:${socket}` })
    await until(
      'the role listening',
      async () =>
        role.out().includes(`handlers role listening on unix:${socket}`) ||
        (await Promise.race([role.exited, Promise.resolve('up')])) !== 'up',
      60_000,
    )
    const { createRemotePool } = await import('../../../src/pool/remote-pool.js')
    const { loadHandlerRegistry } = await import('../../../src/pool/handler-registry.js')
    const hash = (await loadHandlerRegistry()).get('hash-generator')!
    const pool = createRemotePool([{ path: socket }])
    t.teardown(() => pool.close())
    const ctx = { method: 'POST' as const, accept: '*/*', providers: {}, allowPrivateNetwork: false }
    const ok = await pool.run(
      { file: hash.file, slug: 'hash-generator' },
      structuredClone(hash.module.example),
      ctx,
      20_000,
    )
    t.match(ok, { kind: 'ok', status: 200 }, 'a handler of the build runs')
    const foreign = await pool.run({ file: path.join(handlersDir, 'exits/index.ts'), slug: 'exits' }, {}, ctx, 20_000)
    t.match(
      foreign,
      { kind: 'error', message: /has no handler "exits"/ },
      'a file outside its handler folders is never run',
    )
    role.child.kill('SIGTERM')
    t.equal(await role.exited, 0, 'stops cleanly')
  },
)
