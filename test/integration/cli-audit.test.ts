import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { runCli, type Io } from '../../src/cli/main.js'

function capture(env: Record<string, string | undefined>) {
  const out: Buffer[] = []
  const err: string[] = []
  const io: Io = { stdout: (c) => out.push(Buffer.from(c)), stderr: (l) => err.push(l), env, home: mkdtempSync(path.join(os.tmpdir(), 'tg-cli-audit-')) }
  return { io, out: () => Buffer.concat(out).toString(), err: () => err.join('') }
}

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
