import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, statSync, writeFileSync, readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { formatEth, parseEth, parseUsdc } from '../../src/cli/amounts.js'
import { inputFields } from '../../src/cli/commands/inspect.js'
import { parseSince } from '../../src/cli/commands/payments.js'
import { readConfigFile, writeConfigFile } from '../../src/cli/config-file.js'
import { redactSecrets } from '../../src/cli/errors.js'
import type { Io } from '../../src/cli/io.js'
import { keyDeployment } from '../../src/cli/key-deployment.js'
import { startProgress } from '../../src/cli/progress.js'
import { requirePath } from '../../src/start/require-path.js'

t.test('USDC and ETH amounts: decimals in, atomic units out', async (t) => {
  t.equal(parseUsdc('0.002', '--daily'), '2000')
  t.equal(parseUsdc('0.5', '--daily'), '500000')
  t.equal(parseUsdc('12', '--daily'), '12000000')
  t.equal(parseUsdc('.25', '--daily'), '250000')
  t.equal(parseUsdc('1.000001', '--daily'), '1000001')
  for (const bad of ['0.0000001', '', '.', '-1', '1e3', 'abc', '1,5'])
    t.throws(() => parseUsdc(bad, '--daily'), { message: /--daily/ }, bad)
  t.equal(parseEth('0.01', '--amount'), '10000000000000000')
  t.equal(formatEth('1500000000000000000'), '1.5')
  t.equal(formatEth('0'), '0')
})

t.test('friction 1: the dev banner names dev.json so that require() reads it from the current directory', async (t) => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'tg-require-'))
  mkdirSync(path.join(root, '.tollgate'))
  writeFileSync(path.join(root, '.tollgate', 'dev.json'), JSON.stringify({ apiKey: 'sk_test_x' }))
  const hidden = requirePath(path.join(root, '.tollgate', 'dev.json'), root)
  t.equal(hidden, './.tollgate/dev.json')
  const read = (p: string) =>
    execFileSync(process.execPath, ['-p', `require('${p}').apiKey`], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim()
  t.equal(read(hidden), 'sk_test_x', 'the printed path works with node -p')
  t.throws(() => read('.tollgate/dev.json'), 'without ./ require looks for a package (what the banner printed before)')
  mkdirSync(path.join(root, 'sub'))
  t.equal(requirePath(path.join(root, '.tollgate', 'dev.json'), path.join(root, 'sub')), '../.tollgate/dev.json')
  t.equal(requirePath(path.join(root, 'state', 'dev.json'), root), './state/dev.json')
})

t.test('the config file: flat files read as "default", written 0600 with contexts', async (t) => {
  const home = mkdtempSync(path.join(os.tmpdir(), 'tg-cfg-'))
  const io = { home, env: {}, stdout: () => {}, stderr: () => {} } as Io
  t.same(readConfigFile(io), { contexts: {} }, 'no file: no contexts')
  mkdirSync(path.join(home, '.config', 'tollgate'), { recursive: true })
  const p = path.join(home, '.config', 'tollgate', 'config.json')
  writeFileSync(p, JSON.stringify({ agent_key: 'ak_test_x', api_url: 'http://a', other: 1 }), { mode: 0o644 })
  t.same(readConfigFile(io), {
    current: 'default',
    contexts: { default: { agent_key: 'ak_test_x', api_url: 'http://a' } },
  })
  writeConfigFile(io, readConfigFile(io))
  t.equal(statSync(p).mode & 0o777, 0o600, 'a looser file is tightened when written')
  t.same(JSON.parse(readFileSync(p, 'utf8')), {
    current: 'default',
    contexts: { default: { agent_key: 'ak_test_x', api_url: 'http://a' } },
  })
  writeFileSync(p, '{"contexts": []}')
  t.throws(() => readConfigFile(io), { message: /"contexts" in .* is not an object/ })
  writeFileSync(p, 'not json')
  t.throws(() => readConfigFile(io), { message: /cannot read/ })
})

t.test(
  'progress: a line redrawn in place on a terminal, plain lines otherwise, nothing with --json off a terminal',
  async (t) => {
    const run = async (stderrIsTTY: boolean, json: boolean) => {
      const lines: string[] = []
      const pr = startProgress(
        { stderr: (l: string) => lines.push(l), stderrIsTTY, progressAfterMs: 0 } as unknown as Io,
        'waiting for the top-up',
        { json },
      )
      pr.update('balance 0 of 1 USDC')
      await new Promise((r) => setTimeout(r, 250))
      pr.done('topped up')
      return lines.join('')
    }
    const ERASE = '\r\x1b[2K'
    const tty = await run(true, false)
    t.ok(
      tty.startsWith(ERASE) && /^. waiting for the top-up: balance 0 of 1 USDC \(0 s\)$/.test(tty.split(ERASE)[1]!),
      JSON.stringify(tty),
    )
    t.ok(tty.endsWith(`${ERASE}topped up (0 s)\n`), 'the line is erased, then the outcome')
    const plain = await run(false, false)
    t.equal(
      plain,
      'waiting for the top-up: balance 0 of 1 USDC (0 s)…\ntopped up (0 s)\n',
      'one plain line, then the outcome',
    )
    t.equal(await run(false, true), '', '--json off a terminal: nothing')
    const ttyJson = await run(true, true)
    t.ok(
      ttyJson.startsWith(ERASE) && ttyJson.endsWith(ERASE),
      '--json on a terminal: the spinner, erased, and no outcome line',
    )
    const fast: string[] = []
    const quick = startProgress({ stderr: (l: string) => fast.push(l), progressAfterMs: 1000 } as unknown as Io, 'x', {
      json: false,
    })
    quick.done()
    t.same(fast, [], 'a wait shorter than a second shows nothing')
  },
)

t.test('inspect: the input fields in one line', async (t) => {
  t.equal(
    inputFields({
      type: 'http',
      method: 'GET',
      queryParams: { text: { type: 'string', required: true }, hmacKey: { type: 'string' } },
    }),
    'query text (required), hmacKey',
  )
  t.equal(inputFields({ bodyType: 'json', bodyFields: { msg: { type: 'string' } } }), 'body msg')
  t.equal(inputFields({ type: 'object', properties: { a: {}, b: {} }, required: ['b'] }), 'a, b (required)')
  t.equal(inputFields({ input: { queryParams: { q: {} } } }), 'query q')
  t.equal(inputFields(undefined), undefined)
})

t.test('payments list --since: ages and dates', async (t) => {
  const now = Date.parse('2026-01-31T12:00:00Z')
  t.equal(parseSince('24h', now), '2026-01-30T12:00:00.000Z')
  t.equal(parseSince('7d', now), '2026-01-24T12:00:00.000Z')
  t.equal(parseSince('30m', now), '2026-01-31T11:30:00.000Z')
  t.equal(parseSince('2026-01-01', now), '2026-01-01T00:00:00.000Z')
  for (const bad of ['yesterday', '3w', '01/02/2026']) t.throws(() => parseSince(bad, now), { message: /--since/ }, bad)
})

t.test('keys: their deployment by prefix, and cut from messages', async (t) => {
  t.equal(keyDeployment('sk_live_abc'), 'production')
  t.equal(keyDeployment('ak_test_abc'), 'sandbox')
  t.equal(keyDeployment('tgs_abc'), undefined)
  t.equal(
    redactSecrets('bad ak_test_' + 'S'.repeat(43) + ' and sk_live_ABC and tgs_XYZ'),
    'bad ak_test_… and sk_live_… and tgs_…',
  )
})
