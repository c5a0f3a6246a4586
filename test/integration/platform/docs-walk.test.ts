import { spawn } from 'node:child_process'
import t from 'tap'

/** Runs one process entry point from source with `env` on top of this one's; resolves its exit code and output. */
function runEntry(entry: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', entry], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    child.on('exit', (code) => resolve({ code, out }))
  })
}

// README, Configuration: RPC_URL unset starts the embedded chain under `npm start` only; "the Procfile
// roles (web, proxy, worker) and production require it". A role started without it must say so as a
// configuration problem (every problem listed, exit 78), not die on a stack trace from createDeps.
for (const role of ['web', 'proxy', 'worker']) {
  t.test(`the ${role} role without RPC_URL is refused as a configuration problem`, async (t) => {
    const { code, out } = await runEntry(`src/start/${role}.ts`, { RPC_URL: '', TOLLGATE_DEPLOYMENT: 'sandbox' })
    t.equal(code, 78, out)
    t.match(out, /invalid configuration:\n\s+- RPC_URL: .*embedded chain/)
    t.notMatch(out, /\n\s+at /, 'no stack trace')
  })
}

t.test('a missing RPC_URL is listed with every other problem', async (t) => {
  const { code, out } = await runEntry('src/start/web.ts', {
    RPC_URL: '',
    TOLLGATE_DEPLOYMENT: 'sandbox',
    SETTLEMENT_BATCH_SIZE: '0',
  })
  t.equal(code, 78, out)
  t.match(out, /SETTLEMENT_BATCH_SIZE: /)
  t.match(out, /RPC_URL: .*embedded chain/)
})

t.test('production names a missing RPC_URL once', async (t) => {
  const { code, out } = await runEntry('src/start/proxy.ts', { RPC_URL: '', TOLLGATE_DEPLOYMENT: 'production' })
  t.equal(code, 78, out)
  t.equal(out.match(/- RPC_URL: /g)?.length, 1, out)
})
